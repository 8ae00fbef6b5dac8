#include "base/work_pool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dra {
namespace {

// Tracks how many calls of fn run at the same time.
struct Gauge {
  std::atomic<int> now{0};
  std::atomic<int> peak{0};

  void Enter() {
    int current = ++now;
    int seen = peak.load();
    while (current > seen && !peak.compare_exchange_weak(seen, current)) {
    }
  }
  void Leave() { --now; }
};

TEST_CASE("work pool: every index runs exactly once", "[work_pool]") {
  WorkPool pool(7);
  for (size_t n : {0, 1, 2, 5, 8, 64, 1000}) {
    std::vector<std::atomic<int>> runs(n);
    pool.ParallelFor(n, 8, [&](size_t i) { ++runs[i]; });
    for (size_t i = 0; i < n; ++i) CHECK(runs[i] == 1);
  }
}

TEST_CASE("work pool: one index runs inline and starts no thread", "[work_pool]") {
  WorkPool pool(7);
  std::thread::id where;
  pool.ParallelFor(1, 8, [&](size_t) { where = std::this_thread::get_id(); });
  CHECK(where == std::this_thread::get_id());
  CHECK(pool.threads_started() == 0);
  pool.ParallelFor(5, 1, [](size_t) {});  // max_parallel 1: inline as well
  CHECK(pool.threads_started() == 0);
}

TEST_CASE("work pool: threads start on demand, up to the pool's size", "[work_pool]") {
  WorkPool pool(7);
  pool.ParallelFor(3, 8, [](size_t) {});
  CHECK(pool.threads_started() == 2);
  pool.ParallelFor(100, 8, [](size_t) {});
  CHECK(pool.threads_started() == 7);
  pool.ParallelFor(100, 64, [](size_t) {});
  CHECK(pool.threads_started() == 7);
}

// The first `wave` calls wait inside until all of them are: they are only
// all in at once if that many run in parallel. The wait gives up after 10 s
// (a pool that does not work in parallel then shows a lower peak).
struct Wave {
  explicit Wave(int size) : size(size) {}
  void Arrive() {
    std::unique_lock<std::mutex> lock(mu);
    if (++arrived > size) return;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived >= size; });
  }
  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
};

TEST_CASE("work pool: concurrency is bounded by max_parallel, and reaches it", "[work_pool]") {
  WorkPool pool(15);
  for (size_t max_parallel : {2, 4, 16}) {
    Gauge gauge;
    Wave wave(static_cast<int>(max_parallel));
    pool.ParallelFor(64, max_parallel, [&](size_t) {
      gauge.Enter();
      wave.Arrive();
      gauge.Leave();
    });
    INFO("max_parallel " << max_parallel);
    CHECK(gauge.peak == static_cast<int>(max_parallel));
  }
}

TEST_CASE("work pool: a pool of 15 and its caller run 16 calls at once", "[work_pool]") {
  WorkPool pool(15);
  Gauge gauge;
  Wave wave(16);
  pool.ParallelFor(16, 16, [&](size_t) {
    gauge.Enter();
    wave.Arrive();
    gauge.Leave();
  });
  CHECK(gauge.peak == 16);
}

TEST_CASE("work pool: concurrent calls from many threads complete", "[work_pool]") {
  // Fewer pool threads than callers' demand: callers must not wait for one.
  WorkPool pool(3);
  Gauge gauge;
  constexpr int kCallers = 16;
  constexpr int kCalls = 50;
  std::atomic<int> total{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int k = 0; k < kCalls; ++k) {
        const size_t n = 1 + static_cast<size_t>((c + k) % 9);
        std::vector<std::atomic<int>> runs(n);
        pool.ParallelFor(n, 4, [&](size_t i) {
          gauge.Enter();
          ++runs[i];
          ++total;
          if ((i + k) % 5 == 0) std::this_thread::yield();
          gauge.Leave();
        });
        for (size_t i = 0; i < n; ++i) {
          if (runs[i] != 1) ++wrong;
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(wrong == 0);
  int expected = 0;
  for (int c = 0; c < kCallers; ++c) {
    for (int k = 0; k < kCalls; ++k) expected += 1 + (c + k) % 9;
  }
  CHECK(total == expected);
  // Every caller plus every pool thread at most.
  CHECK(gauge.peak <= kCallers + 3);
  CHECK(pool.threads_started() <= 3);
}

TEST_CASE("work pool: a nested call does not deadlock", "[work_pool]") {
  WorkPool pool(2);
  std::atomic<int> runs{0};
  pool.ParallelFor(3, 3, [&](size_t) { pool.ParallelFor(4, 3, [&](size_t) { ++runs; }); });
  CHECK(runs == 12);
}

TEST_CASE("work pool: destruction joins the threads", "[work_pool]") {
  auto pool = std::make_unique<WorkPool>(4);
  std::atomic<int> runs{0};
  pool->ParallelFor(20, 5, [&](size_t) { ++runs; });
  CHECK(pool->threads_started() == 4);
  pool.reset();  // must return (joins idle workers)
  CHECK(runs == 20);
  WorkPool unused(4);  // never started: nothing to join
}

}  // namespace
}  // namespace dra
