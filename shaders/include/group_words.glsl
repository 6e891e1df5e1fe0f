// Words in a group of 8 Q4_1, Q5_0 or Q5_1 blocks as weights.cpp regroups them: the 8 blocks'
// nibbles (32 words), then (Q5_x) a word of high bits each, then their F16 d's (Q5_0) or
// (d, m) pairs (Q4_1, Q5_1); and where block ib's parts are.
#ifndef GROUP_WORDS_GLSL
#define GROUP_WORDS_GLSL
#if defined(TYPE_Q4_1)
#define GROUP_WORDS 40u
#define GROUP_D_WORD 32u  // first word of the d's or (d, m) pairs
#elif defined(TYPE_Q5_0)
#define GROUP_WORDS 44u
#define GROUP_D_WORD 40u
#elif defined(TYPE_Q5_1)
#define GROUP_WORDS 48u
#define GROUP_D_WORD 40u
#endif
#define G_WORD(ib) (((ib) >> 3) * GROUP_WORDS)                  // the group's first word
#define G_NIBBLES(ib) (G_WORD(ib) / 4u + ((ib) & 7u))            // uvec4 of its nibbles
#define G_HIGH(ib) (G_WORD(ib) + 32u + ((ib) & 7u))              // word of its high bits
#define G_DM(ib) (G_WORD(ib) + GROUP_D_WORD + ((ib) & 7u))       // word of its (d, m)
#define G_D_HALF(ib) ((G_WORD(ib) + GROUP_D_WORD) * 2u + ((ib) & 7u))  // F16 of Q5_0's d
#endif
