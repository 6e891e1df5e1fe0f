// Chat templates of the GPT4All catalog and of the main model families, rendered like
// transformers' apply_chat_template.
//
// Every expected string below was produced once with Python jinja2 3.1.6 in transformers' chat
// template environment (trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson and
// raise_exception, strftime_now pinned to 1699963200) and pasted in as a literal.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "official_templates.h"
#include "templates/chat_template.h"
#include "test_util.h"

namespace {

using ember::ChatMessage;

const std::vector<ChatMessage> kFull = {
    {"system", "You are a helpful assistant."},
    {"user", "Hello!"},
    {"assistant", "<think>\nThe user greets me.\n</think>\n\nHi! How can I help?"},
    {"user", "What is 2+2?"},
};
const std::vector<ChatMessage> kNoSystem(kFull.begin() + 1, kFull.end());

nlohmann::json load_catalog() {
    std::ifstream f(ember::test::shared_path("catalog/gpt4all-models3-subset.json"));
    EXPECT_TRUE(f.good()) << "catalog file missing";
    if (!f.good()) return nlohmann::json::object();
    return nlohmann::json::parse(f);
}

std::string catalog_template(const std::string& name) {
    static const nlohmann::json catalog = load_catalog();
    for (const auto& m : catalog["models"])
        if (m.value("name", "") == name && m.contains("chatTemplate") &&
            m["chatTemplate"].is_string())
            return m["chatTemplate"].get<std::string>();
    ADD_FAILURE() << "no chatTemplate for '" << name << "' in the catalog";
    return "";
}

void expect_render(const std::string& tmpl, const std::vector<ChatMessage>& msgs,
                   const std::string& bos, const std::string& eos, const std::string& expected) {
    ember::ChatTemplateInputs in;
    in.messages = msgs;
    in.add_generation_prompt = true;
    in.bos_token = bos;
    in.eos_token = eos;
    in.now_unix = 1699963200;  // 2023-11-14 12:00 UTC
    auto r = ember::render_chat_template(tmpl, in);
    ASSERT_TRUE(r.ok()) << r.error().code << ": " << r.error().message;
    EXPECT_EQ(*r, expected);
}

// Every template in the catalog (new entries included) renders a typical conversation.
TEST(ChatTemplateCatalog, EveryTemplateRenders) {
    nlohmann::json catalog = load_catalog();
    ASSERT_TRUE(catalog.contains("models"));
    int rendered = 0;
    for (const auto& m : catalog["models"]) {
        if (!m.contains("chatTemplate") || !m["chatTemplate"].is_string()) continue;
        std::string tmpl = m["chatTemplate"].get<std::string>();
        if (tmpl.empty()) continue;
        SCOPED_TRACE(m.value("name", "?"));
        ember::ChatTemplateInputs in;
        in.messages = kFull;
        in.add_generation_prompt = true;
        in.bos_token = "<s>";
        in.eos_token = "</s>";
        auto r = ember::render_chat_template(tmpl, in);
        ASSERT_TRUE(r.ok()) << r.error().code << ": " << r.error().message;
        ++rendered;
        if (m.value("name", "") == "Wizard v1.2") {
            // This catalog template loops over `loop_messages`, which it never sets: Jinja2
            // iterates the undefined variable as empty and so renders no message at all.
            EXPECT_EQ(*r, "You are a helpful assistant. ASSISTANT:");
            continue;
        }
        // Each message's text appears in the prompt.
        EXPECT_NE(r->find("Hello!"), std::string::npos) << *r;
        EXPECT_NE(r->find("What is 2+2?"), std::string::npos) << *r;
        EXPECT_NE(r->find("Hi! How can I help?"), std::string::npos) << *r;
    }
    EXPECT_GE(rendered, 20);
}

// GPT4All's Reasoner template lists the tools GPT4All passes as `toolList`.
TEST(ChatTemplateCatalog, ReasonerWithToolList) {
    ember::ChatTemplateInputs in;
    in.messages = kFull;
    in.extra_context_json =
        R"J({"toolList": [{"function": "javascript_interpret", "description": "Evaluates JavaScript code", "parameters": [{"name": "code", "type": "string", "description": "the code", "required": true}], "symbolicFormat": "<javascript_interpret>code</javascript_interpret>", "examplePrompt": "Compute 2+2", "exampleCall": "<javascript_interpret>2+2</javascript_interpret>", "exampleReply": "4"}]})J";
    auto r = ember::render_chat_template(catalog_template("Reasoner v1"), in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(
        *r,
        "<|im_start|>system\n\nYou have access to the following functions:\nUse the function "
        "'javascript_interpret' to: 'Evaluates JavaScript code'\nparameters:\n  code:\n    type: "
        "string\n    description: the code\n    required: True\n# Tool Instructions\nIf you CHOOSE "
        "to call this function ONLY reply with the following "
        "format:\n'<javascript_interpret>code</javascript_interpret>'\nHere is an example. If the "
        "user says, 'Compute 2+2', then you "
        "reply\n'<javascript_interpret>2+2</javascript_interpret>'\nAfter the result you might "
        "reply with, '4'\nYou MUST include both the start and end tags when you use a "
        "function.\n\nYou are a helpful AI assistant who uses the functions to break down, "
        "analyze, perform, and verify complex reasoning tasks. You SHOULD try to verify your "
        "answers using the functions where possible.\n<|im_end|>\n\n<|im_start|>system\nYou are a "
        "helpful "
        "assistant.<|im_end|>\n\n<|im_start|>user\nHello!<|im_end|>\n\n<|im_start|>assistant\n<"
        "think>\nThe user greets me.\n</think>\n\nHi! How can I "
        "help?<|im_end|>\n\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n\n<|im_start|>assistant\n\n");
    // Without toolList the variable is undefined, whose length is 0, as in Jinja2.
    in.extra_context_json.clear();
    r = ember::render_chat_template(catalog_template("Reasoner v1"), in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(
        *r,
        "<|im_start|>system\n\n<|im_end|>\n\n<|im_start|>system\nYou are a helpful "
        "assistant.<|im_end|>\n\n<|im_start|>user\nHello!<|im_end|>\n\n<|im_start|>assistant\n<"
        "think>\nThe user greets me.\n</think>\n\nHi! How can I "
        "help?<|im_end|>\n\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n\n<|im_start|>assistant\n\n");
}

// Templates that validate the conversation raise an error naming the template's message.
TEST(ChatTemplateCatalog, RoleAlternationIsEnforced) {
    ember::ChatTemplateInputs in;
    in.messages = {{"user", "a"}, {"user", "b"}};
    auto r = ember::render_chat_template(catalog_template("Mistral Instruct"), in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.raise");
    EXPECT_NE(r.error().message.find("roles must alternate"), std::string::npos);
    EXPECT_NE(r.error().message.find("line 10"), std::string::npos) << r.error().message;
    in.messages = kFull;
    r = ember::render_chat_template(kGemmaOfficial, in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("System role not supported"), std::string::npos);
}

// Official templates with tool calls exercise tojson(indent), namespace, and `in` on dicts.
TEST(ChatTemplateFamilies, Llama31WithToolsJson) {
    ember::ChatTemplateInputs in;
    in.messages = kFull;
    in.extra_context_json =
        R"J({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"a": [1, 2.5, null]}}}]})J";
    auto r = ember::render_chat_template(kLlama31Official, in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_NE(r->find("Environment: ipython\n"), std::string::npos);
    EXPECT_NE(
        r->find("{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"f\",\n"
                "        \"parameters\": {\n            \"a\": [\n                1,\n"),
        std::string::npos)
        << *r;
}

TEST(ChatTemplateFamilies, ChatML) {
    expect_render(
        ember::chatml_template(), kFull, "", "",
        "<|im_start|>system\nYou are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>"
        "\nThe user greets me.\n</think>\n\nHi! How can I help?<|im_end|>\n<|im_start|>user\nWhat "
        "is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateFamilies, CatalogMistralOpenOrcaChatML) {
    expect_render(
        catalog_template("Mistral OpenOrca"), kFull, "", "",
        "<|im_start|>system\nYou are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>"
        "\nThe user greets me.\n</think>\n\nHi! How can I help?<|im_end|>\n<|im_start|>user\nWhat "
        "is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateFamilies, CatalogQwen2ChatML) {
    expect_render(
        catalog_template("Qwen2-1.5B-Instruct"), kNoSystem, "", "",
        "<|im_start|>system\nYou are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>"
        "\nThe user greets me.\n</think>\n\nHi! How can I help?<|im_end|>\n<|im_start|>user\nWhat "
        "is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateFamilies, CatalogLlama3) {
    expect_render(
        catalog_template("Llama 3 8B Instruct"), kFull, "<|begin_of_text|>", "<|eot_id|>",
        "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
        "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_"
        "header_id|>assistant<|end_header_id|>\n\n<think>\nThe user greets me.\n</think>\n\nHi! "
        "How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
        "2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, CatalogLlama31) {
    expect_render(
        catalog_template("Llama 3.1 8B Instruct 128k"), kFull, "<|begin_of_text|>", "<|eot_id|>",
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
        "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_"
        "header_id|>assistant<|end_header_id|>\n\n<think>\nThe user greets me.\n</think>\n\nHi! "
        "How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
        "2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, CatalogLlama32) {
    expect_render(
        catalog_template("Llama 3.2 3B Instruct"), kFull, "<|begin_of_text|>", "<|eot_id|>",
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
        "December 2023\nToday Date: 14 Nov 2023\n\nYou are a helpful "
        "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_"
        "header_id|>assistant<|end_header_id|>\n\n<think>\nThe user greets me.\n</think>\n\nHi! "
        "How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
        "2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, OfficialLlama31) {
    expect_render(
        kLlama31Official, kFull, "<|begin_of_text|>", "<|eot_id|>",
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
        "December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful "
        "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_"
        "header_id|>assistant<|end_header_id|>\n\n<think>\nThe user greets me.\n</think>\n\nHi! "
        "How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
        "2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, OfficialLlama2) {
    expect_render(
        kLlama2Official, kFull, "<s>", "</s>",
        "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] <think>\nThe "
        "user greets me.\n</think>\n\nHi! How can I help? </s><s>[INST] What is 2+2? [/INST]");
}

TEST(ChatTemplateFamilies, CatalogMistralInstruct) {
    expect_render(catalog_template("Mistral Instruct"), kFull, "<s>", "</s>",
                  " [INST] You are a helpful assistant.\n\nHello! [/INST] <think>\nThe user greets "
                  "me.\n</think>\n\nHi! How can I help?</s> [INST] What is 2+2? [/INST]");
}

TEST(ChatTemplateFamilies, OfficialMistralV01) {
    expect_render(kMistralV01Official, kNoSystem, "<s>", "</s>",
                  "<s>[INST] Hello! [/INST]<think>\nThe user greets me.\n</think>\n\nHi! How can I "
                  "help?</s>[INST] What is 2+2? [/INST]");
}

TEST(ChatTemplateFamilies, OfficialGemma) {
    expect_render(
        kGemmaOfficial, kNoSystem, "<bos>", "<eos>",
        "<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n<think>\nThe user "
        "greets me.\n</think>\n\nHi! How can I help?<end_of_turn>\n<start_of_turn>user\nWhat is "
        "2+2?<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplateFamilies, OfficialGemma3) {
    expect_render(
        kGemma3Official, kFull, "<bos>", "<eos>",
        "<bos><start_of_turn>user\nYou are a helpful "
        "assistant.\n\nHello!<end_of_turn>\n<start_of_turn>model\n<think>\nThe user greets "
        "me.\n</think>\n\nHi! How can I help?<end_of_turn>\n<start_of_turn>user\nWhat is "
        "2+2?<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplateFamilies, CatalogDeepSeekR1Distill) {
    expect_render(catalog_template("DeepSeek-R1-Distill-Qwen-7B"), kFull, "<｜begin▁of▁sentence｜>",
                  "<｜end▁of▁sentence｜>",
                  "You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>\n\nHi! How can I "
                  "help?<｜end▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜>");
}

TEST(ChatTemplateFamilies, OfficialDeepSeekR1) {
    expect_render(
        kDeepSeekR1Official, kFull, "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
        "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>\n\nHi! "
        "How can I help?<｜end▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜><think>\n");
}

TEST(ChatTemplateFamilies, OfficialQwen25) {
    expect_render(
        kQwen25Official, kFull, "", "",
        "<|im_start|>system\nYou are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>"
        "\nThe user greets me.\n</think>\n\nHi! How can I help?<|im_end|>\n<|im_start|>user\nWhat "
        "is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
