// SPDX-License-Identifier: BSD-2-Clause
// The progress engine (transport/progress_engine.h): while it turns through spinners it takes
// no lock, so a timer, task or spinner another thread adds then must still be seen at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "common/clock.h"
#include "transport/progress_engine.h"

using namespace softrdma;
using transport::Pollable;
using transport::ProgressEngine;

namespace {

// Keeps the engine turning (never sleeping) until stopped; counts its calls.
struct Spinner : Pollable {
    std::atomic<bool> keep{true};
    std::atomic<uint64_t> spins{0};
    void on_io(uint32_t) override {}
    bool on_spin() override {
        spins.fetch_add(1, std::memory_order_relaxed);
        return keep.load(std::memory_order_relaxed);
    }
};

struct TimerUser : Pollable {
    std::atomic<uint64_t> fired_ns{0};
    void on_io(uint32_t) override {}
    void on_timer() override { fired_ns.store(now_ns()); }
};

template <class F>
bool wait_for(F done, int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
}

// Starts a spinner and waits until the engine has turned through it many times (so its
// turns run without the lock).
std::shared_ptr<Spinner> start_spinning(ProgressEngine &e) {
    auto s = std::make_shared<Spinner>();
    e.spin(s);
    EXPECT_TRUE(wait_for([&] { return s->spins.load() > 1000; }, 5000));
    return s;
}

}  // namespace

TEST(ProgressEngine, TimersFireOnTimeWhileTheEngineSpins) {
    ProgressEngine e;
    auto s = start_spinning(e);
    for (int round = 0; round < 3; ++round) {
        auto t = std::make_shared<TimerUser>();
        const uint64_t deadline = now_ns() + 2'000'000;  // 2 ms
        e.schedule(t, deadline);
        ASSERT_TRUE(wait_for([&] { return t->fired_ns.load() != 0; }, 2000)) << "round " << round;
        EXPECT_GE(t->fired_ns.load(), deadline);
        // Well within the 2 s bound: late only by a turn of the engine and the test's naps.
        EXPECT_LT(t->fired_ns.load() - deadline, 200'000'000u);
    }
    // A later timer first, then an earlier one: the earlier fires first, on time.
    auto late = std::make_shared<TimerUser>(), early = std::make_shared<TimerUser>();
    const uint64_t now = now_ns();
    e.schedule(late, now + 400'000'000);
    e.schedule(early, now + 1'000'000);
    ASSERT_TRUE(wait_for([&] { return early->fired_ns.load() != 0; }, 200));
    EXPECT_EQ(late->fired_ns.load(), 0u);
    s->keep = false;
}

TEST(ProgressEngine, TasksAndNewSpinnersAreTakenWhileTheEngineSpins) {
    ProgressEngine e;
    auto s = start_spinning(e);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) e.post([&] { ran.fetch_add(1); });
    EXPECT_TRUE(wait_for([&] { return ran.load() == 100; }, 2000)) << ran.load();
    auto second = std::make_shared<Spinner>();
    e.spin(second);
    EXPECT_TRUE(wait_for([&] { return second->spins.load() > 10; }, 2000));
    // Both keep being turned through.
    const uint64_t a = s->spins.load();
    EXPECT_TRUE(wait_for([&] { return s->spins.load() > a + 10; }, 2000));
    second->keep = false;
    s->keep = false;
}

TEST(ProgressEngine, ASleepingEngineWakesForTimersAndTasks) {
    ProgressEngine e;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // nothing to do: it sleeps
    auto t = std::make_shared<TimerUser>();
    e.schedule(t, now_ns() + 1'000'000);
    EXPECT_TRUE(wait_for([&] { return t->fired_ns.load() != 0; }, 2000));
    std::atomic<bool> ran{false};
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    e.post([&] { ran = true; });
    EXPECT_TRUE(wait_for([&] { return ran.load(); }, 2000));
}
