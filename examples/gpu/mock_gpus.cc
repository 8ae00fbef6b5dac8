#include "mock_gpus.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace gpu {
namespace {

constexpr int64_t kMemoryBytes = 80LL << 30;
constexpr int64_t kComputeUnits = 108;
constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

}  // namespace

std::string MockUuid(std::string_view prefix, const std::string& node, int index) {
  const uint64_t a = std::hash<std::string>{}(absl::StrCat(node, "/", index));
  const uint64_t b = std::hash<std::string>{}(absl::StrCat(index, "/", node));
  return absl::StrFormat("%s%08x-%04x-%04x-%04x-%012x", prefix, a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                         b & 0xffffffffffffULL);
}

absl::StatusOr<std::vector<GpuInfo>> MockGpus::Discover() {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count_; ++i) {
    GpuInfo& gpu = gpus.emplace_back();
    gpu.index = i;
    gpu.uuid = MockUuid("GPU-", node_name_, i);
    gpu.model = "LATEST-GPU-MODEL";
    gpu.product_name = "Mock GPU 80GB";
    gpu.driver_version = "1.0.0";
    const int bus = 0x3b + 8 * i;
    gpu.pci_bus_id = absl::StrFormat("0000:%02x:00.0", bus % 256);
    gpu.pcie_root = absl::StrFormat("pci0000:%02x", (bus - 1) % 256 / 2 * 2);  // two GPUs per root
    gpu.memory_bytes = kMemoryBytes;
    gpu.compute_units = kComputeUnits;
    gpu.device_nodes.push_back(CharDeviceNode(absl::StrCat("/dev/mock-gpu", i), 195, i));
  }
  return gpus;
}

absl::StatusOr<std::vector<HealthEvent>> MockGpus::WaitForHealthEvents(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    absl::StatusOr<std::vector<HealthEvent>> events = ReadNewLines();
    if (!events.ok() || !events->empty()) return events;
    const absl::Time now = absl::Now();
    if (now >= deadline) return events;
    absl::SleepFor(std::min(kPollInterval, deadline - now));  // a file has no wake-up; this stands in for hardware
  }
}

absl::StatusOr<std::vector<HealthEvent>> MockGpus::ReadNewLines() {
  std::vector<HealthEvent> events;
  if (health_file_.empty()) return events;
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(health_file_, error);
  if (error || size <= offset_) {
    if (!error && size < offset_) offset_ = 0;  // truncated: start over
    return events;
  }
  std::ifstream in(health_file_, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", health_file_));
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  const size_t complete = chunk.rfind('\n');
  if (complete == std::string::npos) return events;
  offset_ += complete + 1;
  for (absl::string_view line : absl::StrSplit(chunk.substr(0, complete), '\n', absl::SkipWhitespace())) {
    std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    HealthEvent event;
    if (words.size() != 2 || !absl::SimpleAtoi(words[0], &event.index) || event.index < 0 || event.index >= count_ ||
        (words[1] != "healthy" && words[1] != "unhealthy" && words[1] != "fatal")) {
      return absl::InvalidArgumentError(absl::StrCat(
          health_file_, ": line \"", line, "\": want \"<index> healthy|unhealthy|fatal\" with index below ", count_));
    }
    event.healthy = words[1] == "healthy";
    event.fatal = words[1] == "fatal";
    event.reason = absl::StrCat("mock health file: ", words[1]);
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace gpu
