// ember-cli: the engine without a window.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "args.h"
#include "ember/ember.h"

namespace {

const char* kUsage = R"(usage: ember-cli COMMAND [options]

commands:
  generate  -m MODEL -p TEXT [-n N] [--temp T --top-k K --top-p P --min-p P
            --repeat-penalty R --repeat-last-n N --seed S] [--backend cpu|vulkan|auto]
            [--device N|NAME] [--threads N] [--ctx N] [--chat] [--json]
            [--gpu-mem-limit SIZE] [--gpu-mem-free SIZE] [--gpu-layers N]   (6G, 512M: a
            model that does not fit runs its first layers on the CPU; bench, serve, info too)
            [-v]   (-v: the load's phases, timed, on stderr; bench takes it too)
  logits    -m MODEL (-p TEXT | --ids 1,2,3) [--backend ...] [--device ...] --json
  tokenize  -m MODEL (-p TEXT | -f FILE) [--no-bos] [--parse-special] --json
  info      -m MODEL [--json] [--ctx N] [--device D] [--gpu-mem-limit SIZE] [--gpu-mem-free SIZE]
            [--gpu-layers N]   (the fit: whether the model fits the GPU, or the layer split)
  template  (-m MODEL | --template-file FILE) --messages FILE.json
            [--add-generation-prompt] [--bos-token S] [--eos-token S] [--tools FILE.json]
            [--var NAME=VALUE ...]   (messages as in an OpenAI request: tool_calls, content
            parts...; a VALUE that is not JSON is a string: --var enable_thinking=false)
  mkmodel   -o FILE (--preset NAME | --embd E --layers L --heads H --kv-heads K --ffn F)
            [--head-dim D] [--ctx N] [--vocab-from GGUF | --vocab N] [--chat-template JINJA]
            [--yarn FACTOR] [--orig-ctx N] --type TYPE [--pure]   (--orig-ctx: Phi-3 LongRoPE)
            [--seed S]   (random weights; each tensor gets the type llama-quantize gives it in
            TYPE: f16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k...; --pure: all one type; shape options
            after --preset shrink the preset and keep its architecture: --layers 2 --vocab 512)
  bench     -m MODEL [-p 512] [-n 128] [-r 3] [-d 0] [--backend ...] [--device ...]
            [--threads N] [--json] [--membw] [--host-argmax]   (-d: context tokens before
            each run; --membw: the device's read bandwidth, CPU or GPU; tg draws each next
            token at random as llama-bench does, --host-argmax takes the logits' argmax)
  devices   [--json]; --plan -m MODEL [--device D]: the Vulkan plan, stage by stage
  serve     -m MODEL [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--ctx N]
            [--parallel N] [--timeout S] [--max-body BYTES] [--max-connections N]
            [--backend ...] [--device ...] [--threads N]   (an OpenAI-compatible API:
            docs/api.md; serve --help explains each option)
  pull      (URL | CATALOG-ID) [--sha256 HEX | --md5 HEX] [--dir DIR] [--retries N]; --list
  version
)";

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is an error to report, not a death
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    const std::string cmd = argv[1];
    try {
        if (cmd == "generate") return ember::cli::cmd_generate(argc, argv);
        if (cmd == "logits") return ember::cli::cmd_logits(argc, argv);
        if (cmd == "tokenize") return ember::cli::cmd_tokenize(argc, argv);
        if (cmd == "info") return ember::cli::cmd_info(argc, argv);
        if (cmd == "template") return ember::cli::cmd_template(argc, argv);
        if (cmd == "mkmodel") return ember::cli::cmd_mkmodel(argc, argv);
        if (cmd == "bench") return ember::cli::cmd_bench(argc, argv);
        if (cmd == "devices") return ember::cli::cmd_devices(argc, argv);
        if (cmd == "pull") return ember::cli::cmd_pull(argc, argv);
        if (cmd == "serve") return ember::cli::cmd_serve(argc, argv);
        if (cmd == "version" || cmd == "--version") {
            std::printf("ember-cli %s\n", ember::version());
            return 0;
        }
    } catch (const std::bad_alloc&) {
        return ember::cli::fail("out of memory");
    } catch (const std::exception& e) {
        return ember::cli::fail(std::string("unexpected error: ") + e.what());
    }
    return ember::cli::fail("unknown command '" + cmd + "' (see ember-cli --help)");
}
