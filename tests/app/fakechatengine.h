// A scripted ChatEngine for the worker tests: emits given pieces with a delay, fails on demand
// and honours the cancel flag like the real engine (checked before each token).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chatengine.h"

struct FakeScript {
    std::vector<std::string> pieces;
    std::chrono::microseconds delay{0};
    std::string loadError;      // non-empty: load() fails with it
    std::string generateError;  // non-empty: generate() fails with it after failAfter pieces
    std::string generateErrorCode = "fake.generate";
    int failAfter = 0;
    int droppedMessages = 0;  // reported in the stats
    int promptTokens = 0;     // the prompt reported before the first piece and in the stats
    int evaluatedTokens = 0;
    std::string stopReason = "eog";  // when all pieces were given out
    double tokensPerSecond = 0;      // reported in the stats
    double ttftMs = 0;
    std::string checkFailPath;  // check() finds this file incomplete
    std::string loadFailPath;   // load() of this file fails after dropping the loaded model
    // generate() gives nothing while this is set (until cancelled); null: it never waits.
    const std::atomic<bool>* hold = nullptr;
};

class FakeChatEngine : public ChatEngine {
public:
    explicit FakeChatEngine(FakeScript script) : m_script(std::move(script)) {}

    std::vector<std::string> listDevices() override { return {"Fake GPU"}; }

    ember::Result<EngineLoadResult> load(const EngineLoadOptions& options,
                                         const EngineProgressCallback& progress,
                                         const std::atomic<bool>*) override {
        m_loaded = false;  // as the real engine: the loaded model goes first
        ++m_loads;
        {
            std::lock_guard lock(m_mutex);
            m_lastLoadPath = options.path;
        }
        if (options.path == m_script.loadFailPath)
            return ember::make_error("fake.load", "cannot map " + options.path);
        for (int i = 1; i <= 4; ++i)
            if (progress && !progress(i / 4.0f))
                return ember::make_error("model.cancelled", "loading cancelled");
        if (!m_script.loadError.empty()) return ember::make_error("fake.load", m_script.loadError);
        m_loaded = true;
        EngineLoadResult r;
        r.modelName = "fake:";
        r.modelName += options.path;
        r.backend = "cpu";
        r.device = "Fake CPU";
        r.fallbackReason = options.device == "0" ? "no suitable GPU (fake)" : "";
        r.contextLength = options.contextLength;
        return r;
    }
    void unload() override { m_loaded = false; }
    EngineFileProblem check(const std::string& path) override {
        if (path != m_script.checkFailPath) return {};
        return {"the file is incomplete: 1.0 KiB of at least 4.0 KiB; download it again",
                "gguf: " + path + ": tensor 'x' extends past the end of the file"};
    }
    int loads() const { return m_loads.load(); }
    bool isLoaded() const override { return m_loaded; }
    // Grows by 1 KiB per reading, so that every reading differs; flags a reading without a model.
    EngineMemory memory() const override {
        if (!m_loaded) m_readWithoutModel.store(true);
        const int n = ++m_memoryReads;
        return {1000000 + 1024 * static_cast<uint64_t>(n), 8000000, "fake budget"};
    }
    int memoryReads() const { return m_memoryReads.load(); }
    bool readWithoutModel() const { return m_readWithoutModel.load(); }

    ember::Result<EngineStats> generate(const std::vector<EngineMessage>& messages,
                                        const EngineSampling& sampling,
                                        const std::atomic<bool>* cancel,
                                        const EngineTextCallback& onText,
                                        const EnginePromptCallback& onPrompt) override {
        {
            std::lock_guard lock(m_mutex);
            m_lastMessages = messages;
            m_lastSampling = sampling;
        }
        if (!m_loaded) return ember::make_error("fake.no_model", "no model is loaded");
        EngineStats stats;
        stats.stopReason = m_script.stopReason;
        stats.tokensPerSecond = m_script.tokensPerSecond;
        stats.timeToFirstTokenMs = m_script.ttftMs;
        stats.droppedMessages = m_script.droppedMessages;
        stats.promptTokens = m_script.promptTokens;
        stats.evaluatedTokens = m_script.evaluatedTokens;
        if (onPrompt) onPrompt(stats.promptTokens, stats.evaluatedTokens);
        m_emitted.store(0);
        while (m_script.hold && m_script.hold->load() && !(cancel && cancel->load()))
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (size_t i = 0; i < m_script.pieces.size(); ++i) {
            if (!m_script.generateError.empty() && static_cast<int>(i) == m_script.failAfter)
                return ember::make_error(m_script.generateErrorCode, m_script.generateError);
            if (cancel && cancel->load()) {
                stats.stopReason = "cancelled";
                break;
            }
            std::this_thread::sleep_for(m_script.delay);
            ++stats.generatedTokens;
            m_emitted.store(stats.generatedTokens);
            if (!onText(m_script.pieces[i])) {
                stats.stopReason = "callback";
                break;
            }
        }
        return stats;
    }

    // Each message counts 3 tokens and one per word.
    ember::Result<int> countTokens(const std::vector<EngineMessage>& messages,
                                   const EngineSampling&) override {
        int n = 0;
        for (const auto& m : messages) {
            n += 3;
            bool inWord = false;
            for (char c : m.content) {
                if (c != ' ' && !inWord) ++n;
                inWord = c != ' ';
            }
        }
        return n;
    }

    std::string lastLoadPath() {
        std::lock_guard lock(m_mutex);
        return m_lastLoadPath;
    }

    int emitted() const { return m_emitted.load(); }  // pieces handed out by the last generate

    std::vector<EngineMessage> lastMessages() {
        std::lock_guard lock(m_mutex);
        return m_lastMessages;
    }
    EngineSampling lastSampling() {
        std::lock_guard lock(m_mutex);
        return m_lastSampling;
    }

private:
    FakeScript m_script;
    std::atomic<bool> m_loaded{false};
    std::atomic<int> m_emitted{0};
    std::atomic<int> m_loads{0};
    mutable std::atomic<int> m_memoryReads{0};
    mutable std::atomic<bool> m_readWithoutModel{false};
    std::mutex m_mutex;
    std::vector<EngineMessage> m_lastMessages;
    EngineSampling m_lastSampling;
    std::string m_lastLoadPath;
};
