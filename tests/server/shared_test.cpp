// The server on a model that another owner runs (the app's worker): generations go through the
// owner's runner, on the owner's thread and session, in turn with the owner's own work.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "service.h"
#include "test_util.h"

using namespace ember::server;
using nlohmann::json;

namespace {

// A thread that runs posted tasks one at a time in order, as the app's worker runs its queue.
class Owner {
public:
    Owner() : m_thread([this] { loop(); }) {}
    ~Owner() {
        post({});
        m_thread.join();
    }
    void post(std::function<void()> task) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_tasks.push_back(std::move(task));
        }
        m_cv.notify_all();
    }
    std::thread::id id() const { return m_thread.get_id(); }

private:
    void loop() {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                m_cv.wait(lock, [&] { return !m_tasks.empty(); });
                task = std::move(m_tasks.front());
                m_tasks.pop_front();
            }
            if (!task) return;
            task();
        }
    }
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<std::function<void()>> m_tasks;
    std::thread m_thread;
};

// The app's runner in small: post the generation to the owner and wait for it; give up if the
// request is cancelled before the owner started it.
SessionRunner runner_on(Owner& owner, ember::Session& session, std::atomic<int>& busy,
                        std::atomic<int>& overlaps, std::atomic<bool>& on_owner) {
    return [&](const std::function<void(ember::Session&)>& fn, const std::atomic<bool>* cancel) {
        struct State {
            std::mutex m;
            std::condition_variable cv;
            bool started = false, done = false, abandoned = false;
        };
        auto st = std::make_shared<State>();
        owner.post([&, st] {
            {
                std::lock_guard<std::mutex> lock(st->m);
                if (st->abandoned) return;
                st->started = true;
            }
            on_owner = on_owner && std::this_thread::get_id() == owner.id();
            if (busy.fetch_add(1) != 0) overlaps++;
            fn(session);
            busy.fetch_sub(1);
            {
                std::lock_guard<std::mutex> lock(st->m);
                st->done = true;
            }
            st->cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(st->m);
        for (;;) {
            if (st->done) return true;
            if (cancel->load() && !st->started) {
                st->abandoned = true;
                return false;
            }
            st->cv.wait_for(lock, std::chrono::milliseconds(10));
        }
    };
}

}  // namespace

TEST(SharedService, RunsOnTheOwnersThreadInTurnWithItsWork) {
    ember::LoadParams lp;
    lp.backend = ember::BackendKind::Cpu;
    lp.n_ctx = 256;
    auto loaded = ember::Model::load(ember::test::stories_model(), lp);
    ASSERT_TRUE(loaded) << loaded.error().message;
    std::shared_ptr<ember::Model> model(std::move(*loaded));
    ember::SessionParams sp;
    auto session = ember::Session::create(*model, sp);
    ASSERT_TRUE(session) << session.error().message;

    Owner owner;
    std::atomic<int> busy{0}, overlaps{0};
    std::atomic<bool> on_owner{true};
    Service s;
    s.attach_shared(model, "stories260K", (*session)->n_ctx(),
                    runner_on(owner, **session, busy, overlaps, on_owner));
    EXPECT_EQ(s.n_ctx(), 256);

    // The owner's own generations, posted between the server's requests, use the same session.
    auto own_work = [&] {
        owner.post([&] {
            if (busy.fetch_add(1) != 0) overlaps++;
            (*session)->reset();
            ember::GenerateParams gp;
            gp.max_tokens = 8;
            auto prompt = model->tokenize("The owner", true, false);
            EXPECT_TRUE(ember::generate(**session, prompt, gp, nullptr));
            busy.fetch_sub(1);
        });
    };
    const std::string body =
        R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})";
    std::vector<Prepared> jobs;
    for (int i = 0; i < 3; i++) {
        own_work();
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
        EXPECT_EQ(j["choices"][0]["text"], first);  // the owner's work left nothing behind
    }
    EXPECT_TRUE(on_owner.load());
    EXPECT_EQ(overlaps.load(), 0);
    // Counted once the slot is done with each (just after its answer).
    while (s.stats().served < 3u) std::this_thread::yield();
    EXPECT_EQ(s.stats().served, 3u);

    // A request the owner cannot start (busy, then the request is cancelled) ends with a 503.
    std::mutex gate;
    gate.lock();
    owner.post([&] { std::lock_guard<std::mutex> hold(gate); });
    std::atomic<bool> gone{false};
    auto r = s.start_completion(body, [&] { return gone.load(); });
    ASSERT_TRUE(std::holds_alternative<Prepared>(r));
    gone = true;
    Reply reply = await_job(std::get<Prepared>(r), [&] { return gone.load(); });
    EXPECT_EQ(reply.status, 499);
    gate.unlock();
    s.detach();
    EXPECT_EQ(s.stats().served, 0u);
}
