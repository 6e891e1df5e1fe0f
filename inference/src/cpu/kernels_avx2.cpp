// AVX2 + FMA + F16C kernels (Haswell and later).
#include "cpu/kernels.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define EMBER_X86_NS avx2
#define EMBER_X86_VNNI 0
#define EMBER_X86_ROWS 2  // 16 ymm registers: 2 rows x 4 tokens of accumulators
#include "cpu/kernels_kquant_x86.h"
#include "cpu/kernels_packed_x86.h"
#include "cpu/kernels_x86.h"
#pragma GCC pop_options

namespace ember::cpu {
namespace {
const KernelSet kAvx2 = {"avx2",
                         avx2::quant_rows,
                         avx2::float_rows,
                         avx2::quantize_act,
                         avx2::packed_rows,
                         avx2::dot,
                         avx2::axpy,
                         avx2::silu_mul,
                         0,
                         avx2::kquant_rows,
                         avx2::quantize_act_k,
                         avx2::gelu_tanh_mul,
                         avx2::softcap};
}  // namespace

const KernelSet* kernels_avx2() {
    __builtin_cpu_init();
    bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("f16c");
    return ok ? &kAvx2 : nullptr;
}
}  // namespace ember::cpu
#else
namespace ember::cpu {
const KernelSet* kernels_avx2() {
    return nullptr;
}
}  // namespace ember::cpu
#endif
