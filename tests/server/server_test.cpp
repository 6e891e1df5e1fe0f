// server/ without HTTP: request parsing, the text filters, response shapes, the queue.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include <nlohmann/json.hpp>

#include "protocol.h"
#include "responses.h"
#include "service.h"
#include "test_util.h"
#include "text_stream.h"

using namespace ember::server;
using nlohmann::json;

namespace {

ApiError chat_error(const std::string& body) {
    auto r = parse_chat_request(body);
    EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

ChatRequest chat_ok(const std::string& body) {
    auto r = parse_chat_request(body);
    if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << ": " << e->message;
    return std::holds_alternative<ChatRequest>(r) ? std::get<ChatRequest>(r) : ChatRequest{};
}

// Feeds pieces through a StopFilter and returns everything it let out.
std::string run_stop(std::vector<std::string> stops, std::vector<std::string> pieces,
                     bool* stopped) {
    StopFilter f(std::move(stops));
    std::string out;
    for (const auto& p : pieces) out += f.push(p);
    out += f.flush();
    *stopped = f.stopped();
    return out;
}

}  // namespace

TEST(Protocol, ParsesChatFields) {
    ChatRequest r = chat_ok(R"({"model": "m", "messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": null}],
        "max_completion_tokens": 7, "max_tokens": 99, "temperature": 0, "top_p": 0.5, "seed": -3,
        "stop": ["x", "y"], "stream": true, "stream_options": {"include_usage": true}, "n": 1})");
    ASSERT_EQ(r.messages.size(), 3u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "ab");
    EXPECT_EQ(r.messages[2].content, "");
    EXPECT_EQ(r.model, "m");
    EXPECT_EQ(r.options.max_tokens, 7);
    EXPECT_EQ(r.options.temperature, 0.0f);
    EXPECT_EQ(r.options.top_p, 0.5f);
    EXPECT_EQ(r.options.seed, uint64_t(-3));
    EXPECT_EQ(r.options.stop, (std::vector<std::string>{"x", "y"}));
    EXPECT_TRUE(r.options.stream);
    EXPECT_TRUE(r.options.include_usage);
    EXPECT_EQ(
        chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "stop": "s"})").options.stop,
        std::vector<std::string>{"s"});
    EXPECT_FALSE(
        chat_ok(R"({"messages": [{"role": "user", "content": "hi"}]})").options.max_tokens);
}

TEST(Protocol, RefusesBadChatRequests) {
    const std::string m = R"("messages": [{"role": "user", "content": "hi"}])";
    struct Case {
        std::string body, param, code;
    } cases[] = {
        {"{", "", "invalid_json"},
        {"[]", "", "invalid_json"},
        {R"({"messages": "hi"})", "messages", "invalid_type"},
        {R"({"messages": []})", "messages", "invalid_value"},
        {R"({"model": 5, )" + m + "}", "model", "invalid_type"},
        {"{" + m + R"(, "n": 2})", "n", "unsupported_value"},
        {"{" + m + R"(, "temperature": "hot"})", "temperature", "invalid_type"},
        {"{" + m + R"(, "temperature": 3})", "temperature", "invalid_value"},
        {"{" + m + R"(, "max_tokens": 0})", "max_tokens", "invalid_value"},
        {"{" + m + R"(, "max_tokens": 1.5})", "max_tokens", "invalid_type"},
        {"{" + m + R"(, "stop": [""]})", "stop", "invalid_value"},
        {"{" + m + R"(, "stop": [1]})", "stop[0]", "invalid_type"},
        {"{" + m + R"(, "stream_options": {"include_usage": true}})", "stream_options",
         "invalid_value"},
        {R"({"messages": [{"role": "user"}]})", "messages[0].content", "invalid_value"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
         "messages[0].content[0].type", "unsupported_content_type"},
        {R"({"messages": [{"role": "king", "content": "x"}]})", "messages[0].role",
         "invalid_value"},
    };
    for (const auto& c : cases) {
        const ApiError e = chat_error(c.body);
        EXPECT_EQ(e.status, 400) << c.body;
        EXPECT_EQ(e.param, c.param) << c.body;
        EXPECT_EQ(e.code, c.code) << c.body;
        EXPECT_FALSE(e.message.empty());
    }
}

TEST(Protocol, PassesToolTurnsToTheTemplate) {
    ChatRequest r = chat_ok(R"({"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Paris", "a": 1}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "sunny"}]}],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        "chat_template_kwargs": {"enable_thinking": false}})");
    ASSERT_EQ(r.messages.size(), 3u);
    EXPECT_TRUE(r.messages[0].json.empty());  // plain turns stay role + content
    EXPECT_NE(r.messages[1].json.find(R"("arguments":{"city":"Paris","a":1})"), std::string::npos)
        << r.messages[1].json;  // the client's key order
    EXPECT_EQ(json::parse(r.messages[2].json)["content"], "sunny");
    EXPECT_EQ(json::parse(r.messages[2].json)["tool_call_id"], "c1");
    EXPECT_EQ(json::parse(r.tools_json)[0]["function"]["name"], "get_weather");
    EXPECT_EQ(r.vars_json.at("enable_thinking"), "false");
    EXPECT_EQ(chat_error(R"({"messages": [{"role": "assistant", "tool_calls": 5}]})").param,
              "messages[0]");
    EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})").param,
              "tools");
}

TEST(Protocol, ParsesCompletions) {
    auto r = parse_completion_request(R"({"prompt": ["Once"], "stream": false})");
    ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
    EXPECT_EQ(std::get<CompletionRequest>(r).prompt, "Once");
    EXPECT_EQ(std::get<CompletionRequest>(r).options.max_tokens, kDefaultCompletionMaxTokens);
    for (const char* bad : {R"({"prompt": 42})", R"({"prompt": ["a", "b"]})", R"({})",
                            R"({"prompt": "a", "echo": true})"})
        EXPECT_TRUE(std::holds_alternative<ApiError>(parse_completion_request(bad))) << bad;
}

TEST(StopFilter, HoldsBackAcrossPieces) {
    bool stopped = false;
    // "END" arrives over three pieces: nothing of it is let out.
    EXPECT_EQ(run_stop({"END"}, {"abc E", "N", "Dxyz"}, &stopped), "abc ");
    EXPECT_TRUE(stopped);
    // A held prefix that turns out not to be the stop string is let out whole.
    EXPECT_EQ(run_stop({"END"}, {"abc EN", "d more"}, &stopped), "abc ENd more");
    EXPECT_FALSE(stopped);
    // At the end, a held prefix is let out too.
    EXPECT_EQ(run_stop({"END"}, {"abc E"}, &stopped), "abc E");
    EXPECT_FALSE(stopped);
    // The earliest of several stop strings wins.
    EXPECT_EQ(run_stop({"zz", "b"}, {"a", "bzz"}, &stopped), "a");
    EXPECT_TRUE(stopped);
    StopFilter f({"END"});
    EXPECT_EQ(f.push("xE"), "x");  // the E is held
    EXPECT_EQ(f.push("Q"), "EQ");
}

TEST(ThinkSplitter, SplitsReasoningFromContent) {
    ThinkSplitter t;
    ThinkSplitter::Parts all;
    for (const char* p : {"  <thi", "nk>\nLet me ", "think.</th", "ink>\n\nThe answer", " is 4."}) {
        auto part = t.push(p);
        all.content += part.content;
        all.reasoning += part.reasoning;
    }
    auto rest = t.flush();
    EXPECT_EQ(all.reasoning + rest.reasoning, "Let me think.");
    EXPECT_EQ(all.content + rest.content, "The answer is 4.");

    ThinkSplitter opened(true);  // the template opened the block
    auto a = opened.push("hmm</think>ok");
    EXPECT_EQ(a.reasoning, "hmm");
    EXPECT_EQ(a.content, "ok");

    ThinkSplitter plain;  // no block: all content, a later tag included
    auto b = plain.push("Hello <think>x</think>");
    EXPECT_EQ(b.content, "Hello <think>x</think>");
    EXPECT_TRUE(b.reasoning.empty());
    EXPECT_TRUE(prompt_opens_think("<|im_start|>assistant\n<think>\n"));
    EXPECT_FALSE(prompt_opens_think("<|im_start|>assistant\n"));
}

TEST(Responses, ShapesChunksAndBodies) {
    ResponseMeta meta{"chatcmpl-1-x", 123, "m", true, true};
    ResponseBuilder b(meta);
    const std::string start = b.stream_start();
    ASSERT_EQ(start.rfind("data: ", 0), 0u);
    json first = json::parse(start.substr(6));
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(first["usage"].is_null());

    JobEvent d;
    d.delta = {"Hi", "why"};
    json delta = json::parse(b.stream_event(d).substr(6));
    EXPECT_EQ(delta["choices"][0]["delta"]["content"], "Hi");
    EXPECT_EQ(delta["choices"][0]["delta"]["reasoning_content"], "why");

    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    done.finish = Finish::Length;
    done.prompt_tokens = 3;
    done.completion_tokens = 2;
    const std::string end = b.stream_event(done);
    EXPECT_NE(end.find("\"finish_reason\":\"length\""), std::string::npos);
    EXPECT_NE(end.find("\"total_tokens\":5"), std::string::npos);
    EXPECT_EQ(end.substr(end.size() - 14), "data: [DONE]\n\n");

    b.collect(d);
    json body = json::parse(b.body(done));
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "Hi");
    EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "why");
    EXPECT_EQ(body["usage"]["completion_tokens"], 2);

    json err = json::parse(error_body(ApiError{404, "no", "invalid_request_error", "c", ""}));
    EXPECT_EQ(err["error"]["message"], "no");
    EXPECT_EQ(err["error"]["code"], "c");
    EXPECT_TRUE(err["error"]["param"].is_null());
}

TEST(Service, WithoutModelAnswers503) {
    Service s;
    EXPECT_EQ(s.health().status, 503);
    EXPECT_EQ(s.models().status, 503);
    auto r = s.start_chat(R"({"messages": [{"role": "user", "content": "hi"}]})", {});
    ASSERT_TRUE(std::holds_alternative<ApiError>(r));
    EXPECT_EQ(std::get<ApiError>(r).status, 503);
}

TEST(Service, ApiKey) {
    EXPECT_FALSE(check_api_key("", ""));
    EXPECT_FALSE(check_api_key("k1", "Bearer k1"));
    EXPECT_EQ(check_api_key("k1", "")->code, "missing_api_key");
    EXPECT_EQ(check_api_key("k1", "Bearer k2")->status, 401);
    EXPECT_EQ(check_api_key("k1", "Bearer k1x")->status, 401);
    EXPECT_EQ(check_api_key("k1", "k1")->status, 401);
}

TEST(Service, GeneratesQueuesAndRefuses) {
    ember::LoadParams lp;
    lp.backend = ember::BackendKind::Cpu;
    lp.n_ctx = 256;
    auto model = ember::Model::load(ember::test::stories_model(), lp);
    ASSERT_TRUE(model) << model.error().message;
    std::vector<std::string> log;
    std::mutex log_mutex;
    Service s([&](const std::string& line) {
        std::lock_guard<std::mutex> lock(log_mutex);
        log.push_back(line);
    });
    ASSERT_TRUE(s.attach(**model, "stories260K", 1, 0));
    EXPECT_EQ(s.n_ctx(), 256);
    const std::string body =
        R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})";
    // Three at once: all answered, the same greedy text, one at a time in arrival order.
    std::vector<Prepared> jobs;
    for (int i = 0; i < 3; i++) {
        auto r = s.start_completion(body, {});
        ASSERT_TRUE(std::holds_alternative<Prepared>(r));
        jobs.push_back(std::move(std::get<Prepared>(r)));
    }
    std::string first;
    for (auto& p : jobs) {
        Reply reply = await_job(p, {});
        ASSERT_EQ(reply.status, 200) << reply.body;
        json j = json::parse(reply.body);
        EXPECT_EQ(j["usage"]["completion_tokens"], 12);
        if (first.empty()) first = j["choices"][0]["text"];
        EXPECT_EQ(j["choices"][0]["text"], first);
    }
    {
        std::lock_guard<std::mutex> lock(log_mutex);
        std::vector<std::string> order;
        for (const auto& l : log)
            if (l.find(" started") != std::string::npos || l.find(" finished") != std::string::npos)
                order.push_back(l.substr(0, l.find(' ', 8)) +
                                (l.find(" started") != std::string::npos ? " s" : " f"));
        EXPECT_EQ(order, (std::vector<std::string>{"request 1 s", "request 1 f", "request 2 s",
                                                   "request 2 f", "request 3 s", "request 3 f"}));
    }
    // A prompt over the context names the numbers; an unknown model is a 404.
    std::string words;
    for (int i = 0; i < 200; i++) words += "Once upon a time ";
    auto big = s.start_completion(json{{"prompt", words}}.dump(), {});
    ASSERT_TRUE(std::holds_alternative<ApiError>(big));
    EXPECT_EQ(std::get<ApiError>(big).code, "context_length_exceeded");
    EXPECT_NE(std::get<ApiError>(big).message.find("context is 256 tokens"), std::string::npos);
    auto unknown = s.start_completion(R"({"model": "gpt-4", "prompt": "x"})", {});
    ASSERT_TRUE(std::holds_alternative<ApiError>(unknown));
    EXPECT_EQ(std::get<ApiError>(unknown).status, 404);

    // A client gone mid-generation cancels it; the next request runs.
    std::atomic<bool> got_text{false};
    auto gone = [&] { return got_text.load(); };
    auto r = s.start_completion(
        R"({"prompt": "Once upon a time", "max_tokens": 200, "ignore_eos": true, "stream": true})",
        gone);
    ASSERT_TRUE(std::holds_alternative<Prepared>(r));
    Prepared& p = std::get<Prepared>(r);
    std::string streamed;
    auto write = [&](const std::string& t) {
        streamed += t;
        if (!t.empty()) got_text = true;
        return true;
    };
    EXPECT_FALSE(stream_job(p, write, gone));
    EXPECT_EQ(streamed.find("[DONE]"), std::string::npos);
    bool logged = false;
    {
        std::lock_guard<std::mutex> lock(log_mutex);
        for (const auto& l : log)
            if (l.find("request 4 cancelled after") != std::string::npos &&
                l.find("client disconnected") != std::string::npos)
                logged = true;
    }
    EXPECT_TRUE(logged);
    auto after = s.start_completion(body, {});
    ASSERT_TRUE(std::holds_alternative<Prepared>(after));
    EXPECT_EQ(await_job(std::get<Prepared>(after), {}).status, 200);
    s.detach();

    // Two slots taking turns on one model: each answer is still its own greedy text.
    Service two;
    ASSERT_TRUE(two.attach(**model, "stories260K", 2, 0));
    std::vector<Prepared> pair;
    for (int i = 0; i < 4; i++) {
        auto r2 = two.start_completion(body, {});
        ASSERT_TRUE(std::holds_alternative<Prepared>(r2));
        pair.push_back(std::move(std::get<Prepared>(r2)));
    }
    for (auto& p2 : pair) {
        Reply reply = await_job(p2, {});
        ASSERT_EQ(reply.status, 200) << reply.body;
        EXPECT_EQ(json::parse(reply.body)["choices"][0]["text"], first);
    }
}
