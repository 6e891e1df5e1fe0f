// The request queue: generations wait in arrival order for one of `parallel` slots, each slot a
// session on the one loaded model. Independent of HTTP: a Job is a channel of events that the
// connection's thread reads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "protocol.h"
#include "text_stream.h"

namespace ember::server {

using LogFn = std::function<void(const std::string&)>;

// What a slot runs: the prompt's tokens and how to generate and filter.
struct JobSpec {
    std::vector<int32_t> prompt;
    int max_tokens = 0;  // at most the room the context leaves
    SamplingParams sampling;
    bool ignore_eos = false;
    std::vector<std::string> stop;
    bool split_think = false;      // chat: <think>...</think> to reasoning
    bool starts_in_think = false;  // the prompt opened the think block
    std::string label;             // for the log, e.g. "chat completion, streamed"
};

enum class Finish { Stop, Length };
const char* finish_name(Finish f);  // "stop", "length"

struct JobEvent {
    enum class Kind { Delta, Done, Failed };
    Kind kind = Kind::Delta;
    ThinkSplitter::Parts delta;                    // Delta
    Finish finish = Finish::Stop;                  // Done
    int prompt_tokens = 0, completion_tokens = 0;  // Done
    ApiError error;                                // Failed
};

class Job {
public:
    Job(uint64_t id, JobSpec spec) : m_id(id), m_spec(std::move(spec)) {}
    uint64_t id() const { return m_id; }
    const JobSpec& spec() const { return m_spec; }

    // Consumer side. Waits up to `timeout` for events and takes them all (none on timeout).
    std::vector<JobEvent> wait(std::chrono::milliseconds timeout);
    // Stops the generation within one token, or drops the job from the queue; the reason goes
    // to the log. Then waits until no slot uses the job any more.
    void cancel(const std::string& reason);
    // Polled by the slot once per token and before starting: true when the client has gone.
    // Set before submitting; it runs on the slot's thread.
    std::function<bool()> client_gone;

    // Slot side.
    void push(JobEvent e);
    bool cancelled() const { return m_cancel.load(); }
    const std::atomic<bool>* cancel_flag() const { return &m_cancel; }
    void mark_cancelled(const std::string& reason);
    std::string cancel_reason() const;
    void set_finished();  // the slot is done with it
    bool finished() const;
    // Set by the Scheduler: takes the job out of the queue if no slot has it yet (then true).
    std::function<bool()> unqueue;

private:
    uint64_t m_id;
    JobSpec m_spec;
    std::atomic<bool> m_cancel{false};
    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<JobEvent> m_events;
    std::string m_reason;
    bool m_finished = false;
};

// Runs `fn` with a session of the model where the model's owner allows it (the app: on its
// worker thread, queued behind its own generations). Returns false, without running `fn`, when
// the owner no longer has the model or `cancel` was set before `fn` started.
using SessionRunner =
    std::function<bool(const std::function<void(Session&)>& fn, const std::atomic<bool>* cancel)>;

class Scheduler {
public:
    // One session of n_ctx positions per slot (0: the model's default).
    static Result<std::unique_ptr<Scheduler>> create(Model& model, int parallel, int n_ctx,
                                                     LogFn log);
    // One slot whose generations run through `runner` on a session of n_ctx positions that the
    // model's owner keeps; `keep` keeps the model alive while the scheduler uses it.
    static std::unique_ptr<Scheduler> create_shared(Model& model, std::shared_ptr<void> keep,
                                                    int n_ctx, SessionRunner runner, LogFn log);
    ~Scheduler();  // cancels what is queued or running and joins the slots
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues a job behind those already waiting; client_gone becomes the job's.
    std::shared_ptr<Job> submit(JobSpec spec, std::function<bool()> client_gone = {});
    // Cancels every queued and running job (each ends with a 503 naming the reason).
    void cancel_all(const std::string& reason);
    int n_ctx() const { return m_n_ctx; }
    Model& model() { return m_model; }

    struct Stats {
        int queued = 0, running = 0;
        uint64_t served = 0;  // finished, cancelled or failed
    };
    Stats stats() const;

private:
    Scheduler(Model& model, LogFn log) : m_model(model), m_log(std::move(log)) {}
    void slot_loop(Session* session);  // nullptr: through m_runner
    void run(Session& session, Job& job);
    // With several slots, generation steps take turns in order (the model runs one at a time).
    void take_turn();
    void end_turn();

    Model& m_model;
    std::shared_ptr<void> m_keep;
    SessionRunner m_runner;
    LogFn m_log;
    int m_n_ctx = 0;
    std::vector<std::unique_ptr<Session>> m_sessions;
    std::vector<std::thread> m_threads;

    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<std::shared_ptr<Job>> m_queue;
    std::vector<Job*> m_active;  // running in a slot
    uint64_t m_next_id = 1;
    int m_running = 0;
    uint64_t m_served = 0;
    bool m_stopping = false;

    std::mutex m_turn_mutex;
    std::condition_variable m_turn_cv;
    uint64_t m_turn_next = 0, m_turn_serving = 0;  // a ticket lock: fair in arrival order
};

}  // namespace ember::server
