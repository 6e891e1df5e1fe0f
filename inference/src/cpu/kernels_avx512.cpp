// AVX-512 VNNI kernels (Ice Lake, Sapphire Rapids, Zen 4): the AVX2 scheme on 256-bit vectors
// with vpdpbusd for the byte dot products and 32 registers for larger tiles. K-quants take the
// integer kernels of kernels_kquant_x86.h (one conversion per super-block, not per 32 elements).
#include "cpu/kernels.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#define EMBER_X86_NS avx512
#define EMBER_X86_VNNI 1
#define EMBER_X86_ROWS 4  // 32 registers: 4 rows x 4 tokens of accumulators
#include "cpu/kernels_kquant_x86.h"
#include "cpu/kernels_packed_x86.h"
#include "cpu/kernels_x86.h"
#pragma GCC pop_options

namespace ember::cpu {
namespace {
const KernelSet kAvx512 = {"avx512_vnni",        avx512::quant_rows,     avx512::float_rows,
                           avx512::quantize_act, avx512::packed_rows,    avx512::dot,
                           avx512::axpy,         avx512::silu_mul,       128,
                           avx512::kquant_rows,  avx512::quantize_act_k, avx512::gelu_tanh_mul,
                           avx512::softcap};
}  // namespace

const KernelSet* kernels_avx512() {
    __builtin_cpu_init();
    bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
              __builtin_cpu_supports("avx512vnni");
    return ok ? &kAvx512 : nullptr;
}
}  // namespace ember::cpu
#else
namespace ember::cpu {
const KernelSet* kernels_avx512() {
    return nullptr;
}
}  // namespace ember::cpu
#endif
