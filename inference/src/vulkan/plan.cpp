#include "vulkan/plan.h"

#include "vulkan/instance.h"

namespace ember::vulkan {

namespace {

// The tuning table: what differs per vendor, each row with its reason. Only NVIDIA reports
// its multiprocessors (VK_NV_shader_sm_builtins); the others get fixed grids.
struct VendorRow {
    Vendor vendor;
    uint32_t matvec_workgroups, matvec_loop_workgroups, coopmat_sms;
    const char* reason;
};

constexpr VendorRow kTable[] = {
    {Vendor::Nvidia, 256, 512, 128,
     "tuned on the H200: mat-vec grids from the SM count, 448-thread gate/up workgroups"},
    {Vendor::Amd, 256, 512, 128,
     "no CU count in Vulkan: 256 mat-vec workgroups keep a 32-96 CU card busy"},
    {Vendor::Intel, 256, 512, 128,
     "untuned: the generic grids (256 mat-vec workgroups), as on AMD"},
    {Vendor::Other, 256, 512, 128,
     "untuned (lavapipe, MoltenVK, ...): the generic grids; a CPU adapter runs them as threads"},
};

Vendor vendor_of(uint32_t id) {
    switch (id) {
        case 0x10DE:
            return Vendor::Nvidia;
        case 0x1002:
            return Vendor::Amd;
        case 0x8086:
            return Vendor::Intel;
        default:
            return Vendor::Other;
    }
}

// matmul_idot.comp's shared memory: its staged operands (17 KiB) and common.glsl's reductions.
constexpr uint32_t kIdotSharedBytes = 18432;

}  // namespace

const char* vendor_name(Vendor v) {
    switch (v) {
        case Vendor::Nvidia:
            return "NVIDIA";
        case Vendor::Amd:
            return "AMD";
        case Vendor::Intel:
            return "Intel";
        default:
            return "other";
    }
}

Plan make_plan(const Adapter& a, const Overrides& o) {
    Plan p;
    p.vendor = vendor_of(a.props.vendorID);
    for (const VendorRow& r : kTable) {
        if (r.vendor != p.vendor) continue;
        p.vendor_reason = r.reason;
        p.matvec_workgroups = r.matvec_workgroups;
        p.matvec_loop_workgroups = r.matvec_loop_workgroups;
        p.coopmat_sms = r.coopmat_sms;
    }
    p.sm_count = a.sm_count;
    if (a.sm_count) p.coopmat_sms = a.sm_count;
    p.family_attn_coopmat = a.coopmat_nv;
    p.matmul_idot = a.integer_dot && !a.coopmat_nv &&
                    a.props.limits.maxComputeSharedMemorySize >= kIdotSharedBytes;
    // 3 workgroups of 14 subgroups an SM for wide gate/up rows: needs the SM count and
    // subgroups of 32 (the register budget behind it is NVIDIA's).
    p.gate_up_wide = a.sm_count != 0 && a.subgroup_size == 32;
    p.fused = !o.no_fused;
    p.profile = o.profile;
    // A discrete GPU takes a whole batch of 512 tokens in well under a second for any model
    // that fits it, and splitting it costs prompt speed (every batch reads all the weights);
    // anything else (integrated GPUs sharing the display, CPU adapters, unknown ones) may take
    // seconds, and a desktop's watchdog stops a dispatch after about 2 s.
    if (a.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
        p.batching = Batching::Whole;
        p.batching_reason = "discrete GPU: whole batches of up to 512 tokens";
    } else {
        p.batching = Batching::Timed;
        p.batching_reason =
            "not a discrete GPU: batches sized to about 0.25 s a submission by measured time";
    }
    return p;
}

}  // namespace ember::vulkan
