// Declarations shared by every Ember compute shader: extensions, workgroup size (specialization
// constant 0), the per-step buffer and workgroup-wide reductions that are correct for any
// subgroup size from 4 to 128.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;
#define WG_SIZE gl_WorkGroupSize.x

// Per-step values (position, token ids) live in a buffer, not in push constants, so that a
// recorded command buffer can be replayed for the next token.
#define DECLARE_STEP_BUFFER(b) \
    layout(binding = b) readonly buffer StepBuf { uint step_pos0; uint step_n_tokens; uint step_tokens[]; };

// Workgroup sizes are at most 512, subgroups at least 4 wide: at most 128 partial results.
shared float red_f[128];
shared uint red_u[128];

float wg_sum(float v) {
    v = subgroupAdd(v);
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) s += red_f[i];
    barrier();
    return s;
}

float wg_max(float v) {
    v = subgroupMax(v);
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float s = red_f[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) s = max(s, red_f[i]);
    barrier();
    return s;
}

uint wg_min_u(uint v) {
    v = subgroupMin(v);
    if (subgroupElect()) red_u[gl_SubgroupID] = v;
    barrier();
    uint s = red_u[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) s = min(s, red_u[i]);
    barrier();
    return s;
}

// Linear index of a thread in a 1-D problem dispatched as a 2-D grid (x is capped at 65535).
uint linear_invocation() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG_SIZE + gl_LocalInvocationID.x;
}
// Linear index of a workgroup dispatched as a 2-D grid.
uint linear_workgroup() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
