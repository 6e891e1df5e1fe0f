// Fuzzes the Jinja chat-template engine: the input is the template text, rendered with a fixed
// conversation. Any template must render or give an error; never crash, hang or exhaust memory.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "templates/chat_template.h"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ChatTemplateInputs in = [] {
        ChatTemplateInputs c;
        c.messages = {{"system", "You are a helpful assistant."},
                      {"user", "Hello! What is 2+2? \xC3\xA9\xE4\xB8\xAD"},
                      {"assistant", "4. {{ not a tag }} <|im_end|>"},
                      {"user", "Thanks.\nBye"}};
        c.add_generation_prompt = true;
        c.bos_token = "<s>";
        c.eos_token = "</s>";
        c.extra_context_json =
            R"({"toolList": [{"name": "search", "description": "web", "parameters": [1, 2.5, null, true]}]})";
        c.now_unix = 1700000000;
        return c;
    }();
    const std::string tmpl(reinterpret_cast<const char*>(data), size);
    auto out = render_chat_template(tmpl, in);
    if (!out) {
        fuzz::require_good_error(out.error());
        return 0;
    }
    EMBER_FUZZ_REQUIRE(out->size() <= (16u << 20) + 4096, std::to_string(out->size()));
    return 0;
}
