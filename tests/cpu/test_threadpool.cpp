#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "cpu/threadpool.h"

using ember::cpu::ThreadPool;

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
    for (int threads : {1, 2, 4}) {
        ThreadPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        std::vector<std::atomic<int>> counts(1000);
        std::atomic<int> bad_thread{0};
        for (int call = 0; call < 2000; ++call) {
            const int n = (call * 37) % 300 + (call % 5 == 0 ? 0 : 1);  // includes 0 and 1
            for (int i = 0; i < n; ++i) counts[i].store(0);
            pool.parallel_for(n, [&](int task, int thread) {
                counts[task].fetch_add(1);
                if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
            });
            for (int i = 0; i < n; ++i) ASSERT_EQ(counts[i].load(), 1) << "call " << call;
        }
        EXPECT_EQ(bad_thread.load(), 0);
    }
}

// Workers that went to sleep between calls must wake for the next one. Each of the 3 tasks
// waits until all 3 have started, so every thread must take one (a worker that never wakes
// hangs the test rather than failing it by chance on a busy machine, where a worker may get
// no CPU while the caller alone runs through a batch of short tasks).
TEST(ThreadPool, WakesAfterIdle) {
    ThreadPool pool(3);
    for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the workers go to sleep
        std::atomic<int> sum{0}, started{0};
        std::vector<std::atomic<int>> seen(3);
        pool.parallel_for(3, [&](int task, int thread) {
            sum.fetch_add(task);
            seen[thread].fetch_add(1);
            started.fetch_add(1);
            while (started.load() < 3) std::this_thread::yield();
        });
        EXPECT_EQ(sum.load(), 0 + 1 + 2);
        for (auto& s : seen) EXPECT_EQ(s.load(), 1);
    }
}

TEST(ThreadPool, PhysicalCores) {
    int n = ember::cpu::physical_cores();
    EXPECT_GE(n, 1);
    unsigned hw = std::thread::hardware_concurrency();
    if (hw > 0) EXPECT_LE(n, int(hw));
}
