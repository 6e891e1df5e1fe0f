// Fuzzes the GGUF reader and what Model::load does with a parsed file: binding the Llama
// tensors, the NaN/Inf check and building the tokenizer. Inputs are whole files.
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#include "model/validate.h"
#include "tokenizer/tokenizer.h"

using namespace ember;

namespace {

const std::string kName = "fuzz.gguf";

void touch_metadata(const gguf::File& f) {
    for (const auto& kv : f.metadata()) {
        EMBER_FUZZ_REQUIRE(f.find(kv.key) == &kv.value, kv.key);
        (void)f.get_string(kv.key);
        (void)f.get_int(kv.key);
        (void)f.get_u32(kv.key);
        (void)f.get_f32(kv.key);
        (void)f.get_bool(kv.key);
        (void)f.get_array(kv.key);
        (void)kv.value.as_number();
    }
}

void touch_tensors(const gguf::File& f) {
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors()) {
        EMBER_FUZZ_REQUIRE(f.find_tensor(t.name) == &t, t.name);
        EMBER_FUZZ_REQUIRE(f.data_offset() + t.offset + t.n_bytes <= f.file_size(), t.name);
        EMBER_FUZZ_REQUIRE(t.n_dims >= 1 && t.n_dims <= 4, t.name);
        if (t.n_bytes == 0) continue;
        // ASan reports any byte the reader promised that is not really there.
        const uint8_t* p = f.tensor_data(t);
        sink = sink + p[0] + p[t.n_bytes - 1];
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto file = gguf::File::from_bytes(std::vector<uint8_t>(data, data + size), kName);
    if (!file) {
        fuzz::require_good_error(file.error());
        EMBER_FUZZ_REQUIRE(file.error().code.rfind("gguf.", 0) == 0, file.error().code);
        EMBER_FUZZ_REQUIRE(file.error().message.find(kName) != std::string::npos,
                           file.error().message);
        return 0;
    }
    const gguf::File& f = **file;
    touch_metadata(f);
    touch_tensors(f);

    auto llama = load_llama(f);
    if (llama) {
        auto st = check_finite_weights(*llama, kName, 1);
        if (!st) {
            EMBER_FUZZ_REQUIRE(st.error().code == "model.nonfinite_weights", st.error().code);
            EMBER_FUZZ_REQUIRE(st.error().message.find(kName) != std::string::npos,
                               st.error().message);
        }
    } else {
        fuzz::require_good_error(llama.error());
        EMBER_FUZZ_REQUIRE(llama.error().message.find(kName) != std::string::npos,
                           llama.error().message);
    }

    auto tok = Tokenizer::from_gguf(f);
    if (!tok) {
        fuzz::require_good_error(tok.error());
        return 0;
    }
    const Tokenizer& t = **tok;
    for (bool special : {false, true}) {
        const auto ids = t.encode("Hello world! <s> 123 \xC3\xA9\xE2\x96\x81 ", special, special);
        for (int32_t id : ids) EMBER_FUZZ_REQUIRE(id >= 0 && id < t.n_vocab(), std::to_string(id));
        (void)t.decode(ids);
    }
    return 0;
}
