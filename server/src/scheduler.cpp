#include "scheduler.h"

#include <algorithm>
#include <cstdio>

namespace ember::server {

const char* finish_name(Finish f) {
    return f == Finish::Length ? "length" : "stop";
}

// ---- Job ------------------------------------------------------------------------------------

std::vector<JobEvent> Job::wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_cv.wait_for(lock, timeout, [&] { return !m_events.empty(); });
    std::vector<JobEvent> out;
    out.swap(m_events);
    return out;
}

void Job::push(JobEvent e) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_events.push_back(std::move(e));
    }
    m_cv.notify_all();
}

void Job::mark_cancelled(const std::string& reason) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_reason.empty()) m_reason = reason;
    m_cancel.store(true);
}

std::string Job::cancel_reason() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_reason;
}

void Job::set_finished() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_finished = true;
        unqueue = nullptr;
    }
    m_cv.notify_all();
}

bool Job::finished() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_finished;
}

void Job::cancel(const std::string& reason) {
    mark_cancelled(reason);
    std::function<bool()> take_out;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        take_out = unqueue;
    }
    if (take_out && take_out()) set_finished();  // it was still waiting: no slot will see it
    std::unique_lock<std::mutex> lock(m_mutex);
    m_cv.wait(lock, [&] { return m_finished; });
}

// ---- Scheduler ------------------------------------------------------------------------------

Result<std::unique_ptr<Scheduler>> Scheduler::create(Model& model, int parallel, int n_ctx,
                                                     LogFn log) {
    if (parallel < 1) return make_error("server.bad_value", "parallel must be at least 1");
    std::unique_ptr<Scheduler> s(new Scheduler(model, std::move(log)));
    SessionParams sp;
    sp.n_ctx = n_ctx;
    for (int i = 0; i < parallel; i++) {
        EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, sp));
        s->m_sessions.push_back(std::move(session));
    }
    s->m_n_ctx = s->m_sessions.front()->n_ctx();
    for (auto& session : s->m_sessions)
        s->m_threads.emplace_back(
            [sched = s.get(), ses = session.get()] { sched->slot_loop(ses); });
    return s;
}

std::unique_ptr<Scheduler> Scheduler::create_shared(Model& model, std::shared_ptr<void> keep,
                                                    int n_ctx, SessionRunner runner, LogFn log) {
    std::unique_ptr<Scheduler> s(new Scheduler(model, std::move(log)));
    s->m_keep = std::move(keep);
    s->m_runner = std::move(runner);
    s->m_n_ctx = n_ctx;
    s->m_threads.emplace_back([sched = s.get()] { sched->slot_loop(nullptr); });
    return s;
}

Scheduler::~Scheduler() {
    std::deque<std::shared_ptr<Job>> left;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stopping = true;
        left.swap(m_queue);
        for (Job* job : m_active) job->mark_cancelled("the server is stopping");
    }
    m_cv.notify_all();
    for (auto& job : left) {
        job->mark_cancelled("the server is stopping");
        JobEvent e;
        e.kind = JobEvent::Kind::Failed;
        e.error = ApiError{503, "the server is stopping", "server_error", "shutting_down", ""};
        job->push(std::move(e));
        job->set_finished();
    }
    for (auto& t : m_threads) t.join();
}

std::shared_ptr<Job> Scheduler::submit(JobSpec spec, std::function<bool()> client_gone) {
    std::shared_ptr<Job> job;
    size_t ahead = 0;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        job = std::make_shared<Job>(m_next_id++, std::move(spec));
        job->client_gone = std::move(client_gone);
        if (m_stopping) {
            JobEvent e;
            e.kind = JobEvent::Kind::Failed;
            e.error = ApiError{503, "the server is stopping", "server_error", "shutting_down", ""};
            job->push(std::move(e));
            job->set_finished();
            return job;
        }
        ahead = m_queue.size() + size_t(m_running);
        std::weak_ptr<Job> weak = job;
        job->unqueue = [this, weak] {
            std::lock_guard<std::mutex> lock(m_mutex);
            auto self = weak.lock();
            auto it = std::find(m_queue.begin(), m_queue.end(), self);
            if (it == m_queue.end()) return false;
            m_queue.erase(it);
            m_served++;
            return true;
        };
        m_queue.push_back(job);
    }
    m_cv.notify_one();
    if (m_log)
        m_log("request " + std::to_string(job->id()) + " queued (" + job->spec().label + ", " +
              std::to_string(job->spec().prompt.size()) + " prompt tokens, " +
              std::to_string(ahead) + " ahead)");
    return job;
}

void Scheduler::cancel_all(const std::string& reason) {
    std::lock_guard<std::mutex> lock(m_mutex);
    for (auto& job : m_queue) job->mark_cancelled(reason);  // dropped when a slot takes them
    for (Job* job : m_active) job->mark_cancelled(reason);
}

Scheduler::Stats Scheduler::stats() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return Stats{int(m_queue.size()), m_running, m_served};
}

void Scheduler::take_turn() {
    if (m_sessions.size() < 2) return;
    std::unique_lock<std::mutex> lock(m_turn_mutex);
    const uint64_t mine = m_turn_next++;
    m_turn_cv.wait(lock, [&] { return m_turn_serving == mine; });
}

void Scheduler::end_turn() {
    if (m_sessions.size() < 2) return;
    {
        std::lock_guard<std::mutex> lock(m_turn_mutex);
        m_turn_serving++;
    }
    m_turn_cv.notify_all();
}

void Scheduler::slot_loop(Session* session) {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_cv.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
            if (m_queue.empty()) return;  // stopping
            job = std::move(m_queue.front());
            m_queue.pop_front();
            m_running++;
            m_active.push_back(job.get());
        }
        if (session) {
            run(*session, *job);
        } else if (!m_runner([&](Session& shared) { run(shared, *job); }, job->cancel_flag())) {
            const std::string why =
                job->cancelled() ? job->cancel_reason() : "the model was unloaded";
            if (m_log) m_log("request " + std::to_string(job->id()) + " dropped: " + why);
            JobEvent e;
            e.kind = JobEvent::Kind::Failed;
            e.error = ApiError{503, "cancelled: " + why, "server_error", "cancelled", ""};
            job->push(std::move(e));
        }
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_active.erase(std::find(m_active.begin(), m_active.end(), job.get()));
            m_running--;
            m_served++;
        }
        job->set_finished();
    }
}

void Scheduler::run(Session& session, Job& job) {
    const JobSpec& spec = job.spec();
    const std::string name = "request " + std::to_string(job.id());
    auto log = [&](const std::string& s) {
        if (m_log) m_log(name + " " + s);
    };
    if (!job.cancelled() && job.client_gone && job.client_gone())
        job.mark_cancelled("client disconnected");
    if (job.cancelled()) {
        log("dropped before it started: " + job.cancel_reason());
        JobEvent e;
        e.kind = JobEvent::Kind::Failed;
        e.error =
            ApiError{503, "cancelled: " + job.cancel_reason(), "server_error", "cancelled", ""};
        job.push(std::move(e));
        return;
    }
    log("started");
    session.reset();
    GenerateParams gp;
    gp.max_tokens = spec.max_tokens;
    gp.sampling = spec.sampling;
    gp.stop_at_eog = !spec.ignore_eos;
    gp.cancel = job.cancel_flag();
    StopFilter stop(spec.stop);
    ThinkSplitter think(spec.starts_in_think);
    auto send = [&](ThinkSplitter::Parts parts) {
        if (parts.empty()) return;
        JobEvent e;
        e.delta = std::move(parts);
        job.push(std::move(e));
    };
    auto send_text = [&](const std::string& text) {
        if (text.empty()) return;
        if (spec.split_think)
            send(think.push(text));
        else
            send(ThinkSplitter::Parts{text, {}});
    };

    take_turn();
    auto stats = generate(session, spec.prompt, gp, [&](int32_t, std::string_view text) {
        if (stop.stopped() || job.cancelled()) return false;
        if (job.client_gone && job.client_gone()) {
            job.mark_cancelled("client disconnected");
            return false;
        }
        send_text(stop.push(text));
        if (stop.stopped()) return false;
        end_turn();  // let the other slots take a step
        take_turn();
        return true;
    });
    end_turn();

    if (!stats) {
        log("failed: " + stats.error().message);
        JobEvent e;
        e.kind = JobEvent::Kind::Failed;
        e.error = ApiError{500, "generation failed: " + stats.error().message, "server_error",
                           stats.error().code, ""};
        job.push(std::move(e));
        return;
    }
    if (job.cancelled()) {
        const std::string why = job.cancel_reason();
        log("cancelled after " + std::to_string(stats->n_generated) + " generated tokens: " + why);
        JobEvent e;  // read only when the server, not the client, stopped it
        e.kind = JobEvent::Kind::Failed;
        e.error = ApiError{503, "generation cancelled: " + why, "server_error", "cancelled", ""};
        job.push(std::move(e));
        return;
    }
    send_text(stop.flush());
    if (spec.split_think) send(think.flush());
    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    const bool length = !stop.stopped() && (stats->stop == StopReason::MaxTokens ||
                                            stats->stop == StopReason::ContextFull);
    done.finish = length ? Finish::Length : Finish::Stop;
    done.prompt_tokens = stats->n_prompt;
    done.completion_tokens = stats->n_generated;
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.1f", stats->tg_tok_s);
    log("finished (" + std::string(finish_name(done.finish)) +
        "): " + std::to_string(stats->n_prompt) + " prompt and " +
        std::to_string(stats->n_generated) + " generated tokens at " + rate + " tok/s");
    job.push(std::move(done));
}

}  // namespace ember::server
