#include "kubeletplugin/executor.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "kubeletplugin/call_serializer.h"
#include "support/notification.h"
#include "support/poll.h"

namespace dra::kubeletplugin::internal {
namespace {

using dra::testing::PollUntil;

TEST_CASE("executor: no thread before the first work, the work runs on one of its own", "[executor]") {
  dra::testing::Notification ran;  // outlives the executor's threads
  std::thread::id on;
  Executor executor({.max_threads = 4});
  CHECK(executor.threads() == 0);
  executor.Post([&] {
    on = std::this_thread::get_id();
    ran.Notify();
  });
  ran.WaitForNotification();
  CHECK(on != std::this_thread::get_id());
  CHECK(executor.threads() == 1);
}

TEST_CASE("executor: a thread per busy one up to the bound, then the work queues", "[executor]") {
  // These outlive the executor's threads.
  dra::testing::Notification release;
  std::atomic<int> started{0};
  std::mutex mu;
  std::vector<int> order;
  Executor executor({.max_threads = 2, .parallelism = 2});
  for (int i = 0; i < 2; ++i) {
    executor.Post([&] {
      ++started;
      release.WaitForNotification();
    });
  }
  REQUIRE(PollUntil([&] { return started == 2; }));
  CHECK(executor.threads() == 2);
  for (int i = 0; i < 5; ++i) {
    executor.Post([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  }
  CHECK(executor.threads() == 2);  // bounded: the five wait
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(order.empty());
  }
  release.Notify();
  REQUIRE(PollUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return order.size() == 5;
  }));
  CHECK(executor.threads() == 2);
}

TEST_CASE("executor: an idle thread is reused, not joined by another", "[executor]") {
  Executor executor({.max_threads = 8, .parallelism = 8});
  for (int i = 0; i < 20; ++i) {
    dra::testing::Notification done;
    executor.Post([&] { done.Notify(); });
    done.WaitForNotification();
    // The thread counts as idle only once the work returned.
    REQUIRE(PollUntil([&] { return executor.idle_threads() == 1; }));
  }
  CHECK(executor.threads() == 1);
}

TEST_CASE("executor: past its parallelism, a thread is added only when queued work stalls", "[executor]") {
  dra::testing::Notification release;  // these outlive the executor's threads
  dra::testing::Notification fourth;
  std::atomic<int> blocked{0};
  Executor executor({.max_threads = 3, .parallelism = 1, .stall = absl::Milliseconds(5)});
  // Each blocks until released: the queue behind them only moves on new threads.
  for (int i = 0; i < 3; ++i) {
    executor.Post([&] {
      ++blocked;
      release.WaitForNotification();
    });
  }
  REQUIRE(PollUntil([&] { return blocked == 3; }));
  CHECK(executor.threads() == 3);
  executor.Post([&] { fourth.Notify(); });  // at the bound: waits for one of them
  CHECK_FALSE(fourth.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  CHECK(executor.threads() == 3);
  release.Notify();
  fourth.WaitForNotification();
}

TEST_CASE("executor: idle threads exit after the idle timeout and start again on demand", "[executor]") {
  dra::testing::Notification first;  // these outlive the executor's threads
  dra::testing::Notification second;
  Executor executor({.max_threads = 4, .idle_timeout = absl::Milliseconds(20)});
  executor.Post([&] { first.Notify(); });
  first.WaitForNotification();
  REQUIRE(PollUntil([&] { return executor.threads() == 0; }));
  executor.Post([&] { second.Notify(); });
  second.WaitForNotification();
  CHECK(executor.threads() == 1);
}

TEST_CASE("executor: the destructor runs what is still queued", "[executor]") {
  std::atomic<int> ran{0};
  {
    dra::testing::Notification release;  // outlives the executor's threads
    Executor executor({.max_threads = 1});
    executor.Post([&] { release.WaitForNotification(); });
    for (int i = 0; i < 10; ++i) executor.Post([&] { ++ran; });
    release.Notify();
  }
  CHECK(ran == 10);
}

TEST_CASE("serializer off: every section runs at once on the caller's thread", "[serializer]") {
  Executor executor({.max_threads = 2});
  auto serializer = CallSerializer::Create(false, "", executor);
  REQUIRE(serializer.ok());
  int ran = 0;
  for (int i = 0; i < 3; ++i) {
    (*serializer)->Run([&](absl::Status locked) {
      CHECK(locked.ok());
      ++ran;
    });
  }
  CHECK(ran == 3);
  CHECK(executor.threads() == 0);
}

TEST_CASE("serializer on: a section behind a running one is queued without holding the caller", "[serializer]") {
  Executor executor({.max_threads = 4});
  auto created = CallSerializer::Create(true, "", executor);
  REQUIRE(created.ok());
  CallSerializer& serializer = **created;
  dra::testing::Notification inside;
  dra::testing::Notification release;
  std::thread first([&] {
    serializer.Run([&](absl::Status) {
      inside.Notify();
      release.WaitForNotification();
    });
  });
  inside.WaitForNotification();

  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  std::atomic<int> not_locked{0};  // Catch's CHECK is for the test's thread only
  for (int i = 0; i < 8; ++i) {
    // Returns at once although the first section still runs.
    serializer.Run([&, i](absl::Status locked) {
      if (!locked.ok()) ++not_locked;
      int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
      }
      --running;
    });
  }
  CHECK(serializer.waiting() == 8);
  release.Notify();
  first.join();
  REQUIRE(PollUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return order.size() == 8;
  }));
  CHECK(serializer.waiting() == 0);
  CHECK(not_locked == 0);
  CHECK(peak == 1);
  std::lock_guard<std::mutex> lock(mu);
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("serializer on: RunAndWait returns after its section ran behind the others", "[serializer]") {
  Executor executor({.max_threads = 2});
  auto created = CallSerializer::Create(true, "", executor);
  REQUIRE(created.ok());
  dra::testing::Notification inside;
  dra::testing::Notification release;
  std::atomic<bool> first_done{false};
  std::thread first([&] {
    (*created)->Run([&](absl::Status) {
      inside.Notify();
      release.WaitForNotification();
      first_done = true;
    });
  });
  inside.WaitForNotification();
  bool queued = false;  // checked on the test's thread: Catch's macros are not thread-safe
  std::thread releaser([&] {
    queued = PollUntil([&] { return (*created)->waiting() == 1; });
    release.Notify();
  });
  bool saw_first_done = false;
  (*created)->RunAndWait([&](absl::Status) { saw_first_done = first_done; });
  releaser.join();
  CHECK(queued);
  CHECK(saw_first_done);
  first.join();
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
