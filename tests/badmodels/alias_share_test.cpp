// Identical aliases share the CPU backend's repacked copy of their bytes.
#include <unistd.h>

#include <fstream>

#include "bad_model_util.h"
#include "cpu/matmul.h"
#include "gguf/gguf.h"
#include "session/memory.h"

namespace ember::test {
namespace {

uint64_t rss_bytes() {
    std::ifstream f("/proc/self/statm");
    uint64_t pages = 0, rss = 0;
    f >> pages >> rss;
    return rss * uint64_t(::sysconf(_SC_PAGESIZE));
}

// The CPU backend copies Q4_0/Q8_0 matrices into its own layout where its kernels have a packed
// path: an alias must share its tensor's copy, or a 9 MB file with 64 layers takes 600 MB.
TEST(Hostile, AliasedLayersShareRepackedWeights) {
    const uint32_t embd = 1024;
    const cpu::WeightView probe{GgmlType::Q8_0, embd, embd, nullptr, embd / 32 * 34};
    TinyModel m = TinyModel::make(GgmlType::Q8_0, embd, embd);
    m.alias_layers(64);
    const std::string path = m.write("aliased-64.gguf");
    auto file = gguf::File::open(path);
    ASSERT_TRUE(file.ok());
    LoadParams p;
    p.backend = BackendKind::Cpu;
    p.n_ctx = 16;
    const uint64_t layer_bytes = 7ull * embd * embd / 32 * 34;
    // What the load is estimated to need counts the shared copies once.
    auto llama = load_llama(**file);
    ASSERT_TRUE(llama.ok()) << llama.error().message;
    const CpuMemoryNeed need = cpu_memory_need(**file, *llama, 16, 1, true);
    if (!cpu::should_pack(probe)) {
        EXPECT_EQ(need.repacked, 0u);
        GTEST_SKIP() << "the CPU kernels in use keep Q8_0 in the GGUF layout (no repacking)";
    }
    EXPECT_EQ(need.repacked, layer_bytes + uint64_t(m.vocab) * embd / 32 * 34);
    const uint64_t before = rss_bytes();
    auto model = Model::load(path, p);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const uint64_t grew = rss_bytes() - before;
    std::printf("RSS grew by %.1f MiB loading 64 aliased layers of %.1f MiB\n", grew / 1048576.0,
                layer_bytes / 1048576.0);
    EXPECT_LT(grew, 8 * layer_bytes) << "each alias got its own repacked copy";
}

}  // namespace
}  // namespace ember::test
