// Words in a group of 8 Q4_1, Q5_0 or Q5_1 blocks as weights.cpp regroups them: the 8 blocks'
// nibbles (32 words), then (Q5_x) a word of high bits each, then their F16 d's (Q5_0) or
// (d, m) pairs (Q4_1, Q5_1).
#ifndef GROUP_WORDS_GLSL
#define GROUP_WORDS_GLSL
#if defined(TYPE_Q4_1)
#define GROUP_WORDS 40u
#elif defined(TYPE_Q5_0)
#define GROUP_WORDS 44u
#elif defined(TYPE_Q5_1)
#define GROUP_WORDS 48u
#endif
#endif
