// info, devices and template.
#include <cstdio>

#include "args.h"
#include "common.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#include "templates/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ember::cli {
namespace {

// Metadata value as JSON; long arrays are summarised, since vocabularies hold 100k+ entries.
nlohmann::json value_json(const gguf::Value& v, bool summarize) {
    using VT = gguf::ValueType;
    switch (v.type) {
        case VT::UINT8:
        case VT::UINT16:
        case VT::UINT32:
        case VT::UINT64:
            return v.u64;
        case VT::INT8:
        case VT::INT16:
        case VT::INT32:
        case VT::INT64:
            return v.i64;
        case VT::FLOAT32:
        case VT::FLOAT64:
            return v.f64;
        case VT::BOOL:
            return v.b;
        case VT::STRING:
            return v.str;
        case VT::ARRAY: {
            if (summarize && v.arr.size() > 16)
                return "[" + std::to_string(v.arr.size()) + " x " +
                       std::string(gguf::value_type_name(v.elem_type)) + "]";
            nlohmann::json a = nlohmann::json::array();
            for (const auto& e : v.arr) a.push_back(value_json(e, summarize));
            return a;
        }
    }
    return nullptr;
}

// The shape and conventions the loader read, for --json.
nlohmann::json hparams_json(const LlamaModel& m) {
    const auto& hp = m.hp;
    std::vector<uint32_t> swa_layers;
    for (uint32_t l = 0; l < hp.n_layer; l++)
        if (hp.layer_hp(l).swa) swa_layers.push_back(l);
    return {{"n_vocab", hp.n_vocab},
            {"n_ctx_train", hp.n_ctx_train},
            {"n_ctx_max", hp.max_ctx()},
            {"n_embd", hp.n_embd},
            {"n_layer", hp.n_layer},
            {"n_head", hp.n_head},
            {"n_head_kv", hp.n_head_kv},
            {"n_ff", hp.n_ff},
            {"n_rot", hp.n_rot},
            {"head_dim", hp.head_dim},
            {"rope_freq_base", hp.rope_freq_base},
            {"rope_freq_scale", hp.rope_freq_scale},
            {"rms_eps", hp.rms_eps},
            {"attn_scale", hp.attention_scale()},
            {"attn_softcap", hp.attn_softcap},
            {"final_softcap", hp.final_softcap},
            {"sliding_window", hp.n_swa},
            {"swa_layers", swa_layers},
            {"tied_output", m.tied_output}};
}

// The shape line and what follows from it, for the text output.
void print_shape(const LlamaHParams& hp) {
    std::printf(
        "shape:         %u layers, embedding %u, %u heads (%u KV) of %u, rope %u dims, "
        "FFN %u, vocabulary %u, context %u\n",
        hp.n_layer, hp.n_embd, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_rot, hp.n_ff, hp.n_vocab,
        hp.n_ctx_train);
    if (hp.max_ctx() > hp.n_ctx_train)
        std::printf("long context:  up to %u tokens with its RoPE scaling\n", hp.max_ctx());
    if (hp.n_swa > 0) std::printf("sliding window: %u keys\n", hp.n_swa);
}

}  // namespace

int cmd_info(int argc, char** argv) {
    Args a({"--json", "--full"},
           {"--model", "--ctx", "--device", "--gpu-mem-limit", "--gpu-mem-free", "--gpu-layers"},
           {{"-m", "--model"}, {"-c", "--ctx"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    FitLimits limits;
    if (auto st =
            gpu_budget_params(a, limits.gpu_mem_limit, limits.gpu_mem_reserve, limits.n_gpu_layers);
        !st)
        return fail(st.error());
    auto n_ctx = a.get_int("--ctx", 2048, 1, 1 << 20);
    if (!n_ctx) return fail(n_ctx.error());
    auto path = a.require("--model");
    if (!path) return fail(path.error());
    auto file = gguf::File::open(*path);
    if (!file) return fail(file.error());
    const gguf::File& f = **file;

    nlohmann::json j;
    j["path"] = f.path();
    j["gguf_version"] = f.version();
    j["file_size"] = f.file_size();
    j["architecture"] = f.get_string("general.architecture").value_or("");
    j["tensor_count"] = f.tensors().size();
    const gguf::TensorTally tally = gguf::tally_tensors(f);
    const uint64_t n_params = tally.n_params, weight_bytes = tally.n_bytes;
    const auto& by_type = tally.bytes_per_type;
    j["n_params"] = n_params;
    j["weight_bytes"] = weight_bytes;
    j["bytes_per_type"] = by_type;
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& kv : f.metadata()) meta[kv.key] = value_json(kv.value, !a.has("--full"));
    j["metadata"] = meta;
    // Whether Ember can run it, and why not.
    auto llama = load_llama(f);
    j["supported"] = llama.ok();
    if (!llama)
        j["unsupported_reason"] = llama.error().message;
    else
        j["hparams"] = hparams_json(*llama);
    // Where it would run: the loader's own estimate, with the split a partial offload would use.
    auto fit = estimate_fit(*path, int(*n_ctx), a.get_or("--device", ""), limits);
    if (fit)
        j["fit"] = {
            {"message", fit->message},
            {"gpu_layers", fit->gpu_layers},
            {"n_layers", fit->n_layers},
            {"gpu_bytes", fit->gpu_layers < fit->n_layers ? fit->split_gpu_bytes : fit->total},
            {"available", fit->available},
            {"available_source", fit->available_source},
            {"device", fit->device}};
    else
        j["fit"] = {{"message", fit.error().message}};

    if (a.has("--json")) {
        std::printf("%s\n", safe_dump(j, 1).c_str());
        return 0;
    }
    std::printf("file:          %s (%.1f MiB, GGUF v%u)\n", f.path().c_str(),
                f.file_size() / 1048576.0, f.version());
    std::printf("architecture:  %s\n", j["architecture"].get<std::string>().c_str());
    std::printf("parameters:    %llu\n", (unsigned long long)n_params);
    std::printf("tensors:       %zu\n", f.tensors().size());
    for (const auto& [type, bytes] : by_type)
        std::printf("  %-8s     %.2f MiB\n", type.c_str(), bytes / 1048576.0);
    std::printf("supported:     %s\n", llama ? "yes" : llama.error().message.c_str());
    std::printf("fit:           %s\n", j["fit"]["message"].get<std::string>().c_str());
    if (llama) print_shape(llama->hp);
    std::printf("metadata:\n");
    for (const auto& kv : f.metadata())
        std::printf("  %s = %s\n", kv.key.c_str(), safe_dump(value_json(kv.value, true)).c_str());
    return 0;
}

int cmd_devices(int argc, char** argv) {
    Args a({"--json", "--plan"}, {"--model", "--device"}, {{"-m", "--model"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    // --plan -m MODEL [--device D]: the Vulkan backend's plan for the model (cmd_plan.cpp).
    if (a.has("--plan")) {
        auto path = a.require("--model");
        if (!path) return fail(path.error());
        return print_vulkan_plan(*path, a.get_or("--device", ""));
    }
    auto devs = list_devices();
    nlohmann::json arr = nlohmann::json::array();
    if (devs) {
        for (const auto& d : *devs) {
            arr.push_back({{"index", d.index},
                           {"name", d.name},
                           {"type", d.type},
                           {"vendor_id", d.vendor_id},
                           {"vendor", d.vendor},
                           {"driver_version", d.driver_version},
                           {"api_version", d.api_version},
                           {"device_local_bytes", d.device_local_bytes},
                           {"budget_bytes", d.budget_bytes},
                           {"budget_source", d.budget_source},
                           {"subgroup_size", d.subgroup_size},
                           {"suitable", d.suitable},
                           {"unsuitable_code", d.unsuitable_code},
                           {"unsuitable_reason", d.unsuitable_reason}});
        }
    }
    if (a.has("--json")) {
        nlohmann::json j;
        j["devices"] = arr;
        if (!devs) j["error"] = {{"code", devs.error().code}, {"message", devs.error().message}};
        std::printf("%s\n", safe_dump(j, 1).c_str());
        return 0;
    }
    if (!devs) {
        std::printf("no Vulkan devices: %s\n", devs.error().message.c_str());
        return 0;
    }
    for (const auto& d : *devs) {
        std::printf("%d: %s (%s, %s, driver %s, Vulkan %s)\n", d.index, d.name.c_str(),
                    d.type.c_str(), d.vendor.c_str(), d.driver_version.c_str(),
                    d.api_version.c_str());
        std::printf("   device-local %.2f GiB, budget %.2f GiB (%s), subgroup size %u\n",
                    d.device_local_bytes / 1073741824.0, d.budget_bytes / 1073741824.0,
                    d.budget_source.c_str(), d.subgroup_size);
        std::printf("   %s\n",
                    d.suitable ? "suitable" : ("not suitable: " + d.unsuitable_reason).c_str());
    }
    return 0;
}

namespace {

// --var NAME=VALUE: VALUE is a JSON value, or a plain string where it is not JSON.
Status add_var(ChatTemplateInputs& in, const std::string& spec) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
        return make_error("cli.bad_option", "--var needs NAME=VALUE, got '" + spec + "'");
    const std::string value = spec.substr(eq + 1);
    auto j = nlohmann::ordered_json::parse(value, nullptr, false);
    in.vars_json[spec.substr(0, eq)] = j.is_discarded() ? nlohmann::json(value).dump() : j.dump();
    return {};
}

Result<nlohmann::ordered_json> read_json(const std::string& path) {
    EMBER_ASSIGN_OR_RETURN(std::string text, read_file(path));
    auto j = nlohmann::ordered_json::parse(text, nullptr, false);
    if (j.is_discarded()) return make_error("cli.bad_json", path + ": not valid JSON");
    return j;
}

// The messages file: an array of messages, or an object with "messages" (and optionally
// "tools"), as in an OpenAI request. Each message is passed to the template whole.
Status read_messages(ChatTemplateInputs& in, const std::string& path) {
    EMBER_ASSIGN_OR_RETURN(nlohmann::ordered_json mj, read_json(path));
    if (mj.is_object() && mj.contains("tools") && !mj["tools"].is_null())
        in.tools_json = mj["tools"].dump();
    if (mj.is_object() && mj.contains("messages")) mj = mj["messages"];
    if (!mj.is_array())
        return make_error("cli.bad_json", path +
                                              ": expected a JSON array of messages, or an "
                                              "object with \"messages\"");
    for (size_t k = 0; k < mj.size(); ++k) {
        auto m = ChatMessage::from_json(mj[k].dump());
        if (!m)
            return make_error(m.error().code, path + ": message " + std::to_string(k + 1) + ": " +
                                                  m.error().message);
        in.messages.push_back(std::move(*m));
    }
    return {};
}

}  // namespace

int cmd_template(int argc, char** argv) {
    Args a({"--add-generation-prompt"},
           {"--model", "--template-file", "--messages", "--bos-token", "--eos-token", "--tools",
            "--var"},
           {{"-m", "--model"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    ChatTemplateInputs in;
    std::string tmpl;
    if (auto path = a.get("--model")) {
        auto file = gguf::File::open(*path);
        if (!file) return fail(file.error());
        auto t = (*file)->get_string("tokenizer.chat_template");
        if (!t) {
            std::fprintf(stderr, "ember-cli: %s has no chat template; using ChatML\n",
                         path->c_str());
            tmpl = chatml_template();
        } else {
            tmpl = *t;
        }
        if (auto tok = Tokenizer::from_gguf(**file); tok) {
            const Tokenizer& tk = **tok;
            if (tk.bos() >= 0 && tk.bos() < tk.n_vocab()) in.bos_token = tk.token_text(tk.bos());
            if (tk.eos() >= 0 && tk.eos() < tk.n_vocab()) in.eos_token = tk.token_text(tk.eos());
        }
    } else if (auto tf = a.get("--template-file")) {
        auto content = read_file(*tf);
        if (!content) return fail(content.error());
        tmpl = *content;
    } else {
        return fail("template needs -m MODEL or --template-file FILE");
    }
    auto mpath = a.require("--messages");
    if (!mpath) return fail(mpath.error());
    if (auto st = read_messages(in, *mpath); !st) return fail(st.error());
    if (auto tools = a.get("--tools")) {
        auto tj = read_json(*tools);
        if (!tj) return fail(tj.error());
        if (tj->is_object() && tj->contains("tools")) *tj = (*tj)["tools"];
        if (!tj->is_array()) return fail(*tools + ": expected a JSON array of tool definitions");
        in.tools_json = tj->dump();
    }
    for (const std::string& spec : a.get_all("--var"))
        if (auto st = add_var(in, spec); !st) return fail(st.error());
    in.add_generation_prompt = a.has("--add-generation-prompt");
    if (auto b = a.get("--bos-token")) in.bos_token = *b;
    if (auto e = a.get("--eos-token")) in.eos_token = *e;
    auto out = render_chat_template(tmpl, in);
    if (!out) return fail(out.error());
    std::fwrite(out->data(), 1, out->size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : fail("cannot write to standard output");
}

}  // namespace ember::cli
