// The OpenAI-compatible API's requests: parsing and validation, independent of HTTP.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/ember.h"

namespace ember::server {

// An error in OpenAI's shape ({"error": {"message", "type", "param", "code"}}) and its status.
struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string code;   // machine-readable, e.g. "invalid_json", "model_not_found"
    std::string param;  // the request field at fault; empty when none
};

template <class T>
using ApiResult = std::variant<T, ApiError>;

// The fields both endpoints share.
struct GenerationOptions {
    std::optional<int> max_tokens;  // none: until the end of generation or a full context
    std::optional<float> temperature, top_p;
    std::optional<uint64_t> seed;
    std::vector<std::string> stop;  // held back and never sent
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool ignore_eos = false;     // llama.cpp's extension: generate past end-of-generation
};

struct ChatRequest {
    std::string model;  // empty when the client named none
    // A message with more than role and text (tool_calls, tool_call_id, name,
    // reasoning_content) carries its whole JSON object for the template, content parts joined.
    std::vector<ChatMessage> messages;
    std::string tools_json;                        // "tools": for the template, or empty
    bool tool_choice_none = false;                 // "tool_choice": "none": replies stay text
    std::map<std::string, std::string> vars_json;  // "chat_template_kwargs", each as JSON
    GenerationOptions options;
};

struct CompletionRequest {
    std::string model;
    std::string prompt;
    GenerationOptions options;
};

// The limits of GenerationOptions::stop (OpenAI allows 4; llama.cpp more).
inline constexpr size_t kMaxStopStrings = 16;
// OpenAI's default for /v1/completions.
inline constexpr int kDefaultCompletionMaxTokens = 16;

ApiResult<ChatRequest> parse_chat_request(std::string_view body);
ApiResult<CompletionRequest> parse_completion_request(std::string_view body);

// The engine's sampling defaults with the request's overrides; a random seed when none is given.
SamplingParams sampling_for(const GenerationOptions& options);

}  // namespace ember::server
