#include "cpu_pinner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cpu {

namespace api = nri::api;

namespace {

constexpr absl::Duration kMinRetry = absl::Seconds(1);
constexpr absl::Duration kMaxRetry = absl::Seconds(30);

std::string NameOf(const api::PodSandbox& pod, const api::Container& container) {
  return absl::StrCat(pod.namespace_(), "/", pod.name(), "/", container.name());
}

// A claim's container needs its mems too; "" mems are left to the runtime.
bool Differs(const Placement& want, const Placement& given) {
  return want.cpus != given.cpus || (!want.mems.empty() && want.mems != given.mems);
}

api::LinuxCPU CpuOf(const Placement& placement) {
  api::LinuxCPU cpu;
  cpu.set_cpus(placement.cpus);
  cpu.set_mems(placement.mems);
  return cpu;
}

}  // namespace

CpuPinner::CpuPinner(nri::PluginOptions options, std::function<PinningState()> state, dra::Logger logger)
    : state_(std::move(state)),
      logger_(std::move(logger)),
      mover_([this] { Run(); }),
      plugin_(std::make_unique<nri::Plugin>(std::move(options), *this, logger_)) {}

CpuPinner::~CpuPinner() {
  {
    std::scoped_lock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  mover_.join();
}

void CpuPinner::ClaimsChanged() {
  std::scoped_lock lock(mu_);
  changed_ = true;
  cv_.notify_all();
}

std::vector<api::ContainerUpdate> CpuPinner::Moves(const PinningState& state) const {
  std::vector<api::ContainerUpdate> moves;
  for (const auto& [id, known] : containers_) {
    if (known.stopped) continue;
    const Placement want = PlaceContainer(known.claims, state.claims, state.online);
    if (!Differs(want, known.given)) continue;
    api::ContainerUpdate& move = moves.emplace_back();
    move.set_container_id(id);
    *move.mutable_linux()->mutable_resources()->mutable_cpu() = CpuOf(want);
  }
  return moves;
}

void CpuPinner::Given(const std::vector<api::ContainerUpdate>& moves) {
  for (const api::ContainerUpdate& move : moves) {
    auto it = containers_.find(move.container_id());
    if (it == containers_.end()) continue;
    const api::LinuxCPU& cpu = move.linux().resources().cpu();
    it->second.given = {cpu.cpus(), cpu.mems()};
  }
}

void CpuPinner::Run() {
  absl::Duration retry = kMinRetry;
  for (;;) {
    std::vector<api::ContainerUpdate> moves;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return changed_ || stopping_; });
      if (stopping_) return;
      changed_ = false;
      moves = Moves(state_());
    }
    if (moves.empty()) continue;
    absl::Status moved = plugin_->UpdateContainers(moves);
    std::vector<std::string> names;
    std::unique_lock lock(mu_);
    for (const api::ContainerUpdate& move : moves) {
      auto it = containers_.find(move.container_id());
      if (it == containers_.end()) continue;
      names.push_back(absl::StrCat(it->second.name, "=", move.linux().resources().cpu().cpus()));
    }
    // Given only once the runtime applied them. Not moved: without a
    // connection the next Synchronize reports what the containers have;
    // otherwise try again.
    if (moved.ok()) {
      Given(moves);
      logger_.Info("Moved containers to their cpusets", {{"containers", absl::StrJoin(names, " ")}});
      retry = kMinRetry;
      continue;
    }
    if (absl::IsUnavailable(moved)) continue;
    logger_.Warning(
        "Moving containers failed; retrying",
        {{"containers", absl::StrJoin(names, " ")}, {"err", moved.ToString()}, {"in", absl::FormatDuration(retry)}});
    changed_ = true;
    cv_.wait_for(lock, absl::ToChronoNanoseconds(retry), [this] { return stopping_; });
    retry = std::min(retry * 2, kMaxRetry);
  }
}

std::vector<api::ContainerUpdate> CpuPinner::Synchronize(const std::vector<api::PodSandbox>& pods,
                                                         const std::vector<api::Container>& containers) {
  std::map<std::string, const api::PodSandbox*> pod_by_id;
  for (const api::PodSandbox& pod : pods) pod_by_id[pod.id()] = &pod;
  const PinningState state = state_();
  std::scoped_lock lock(mu_);
  containers_.clear();
  for (const api::Container& container : containers) {
    Known& known = containers_[container.id()];
    auto pod = pod_by_id.find(container.pod_sandbox_id());
    known.name = pod == pod_by_id.end() ? container.name() : NameOf(*pod->second, container);
    known.claims = ClaimsInEnvironment({container.env().begin(), container.env().end()});
    known.given = {container.linux().resources().cpu().cpus(), container.linux().resources().cpu().mems()};
    known.stopped = container.state() == api::CONTAINER_STOPPED;
  }
  std::vector<api::ContainerUpdate> moves = Moves(state);
  Given(moves);  // the runtime applies what Synchronize answers
  return moves;
}

api::CreateContainerResponse CpuPinner::CreateContainer(const api::PodSandbox& pod, const api::Container& container) {
  const PinningState state = state_();
  std::scoped_lock lock(mu_);
  Known& known = containers_[container.id()];
  known.name = NameOf(pod, container);
  known.claims = ClaimsInEnvironment({container.env().begin(), container.env().end()});
  known.given = PlaceContainer(known.claims, state.claims, state.online);
  api::CreateContainerResponse response;
  *response.mutable_adjust()->mutable_linux()->mutable_resources()->mutable_cpu() = CpuOf(known.given);
  logger_.Info("Pinned container", {{"container", known.name},
                                    {"cpus", known.given.cpus},
                                    {"mems", known.given.mems},
                                    {"claims", absl::StrJoin(known.claims, ",")}});
  std::vector<api::ContainerUpdate> moves = Moves(state);
  Given(moves);  // applied before the container is created
  for (api::ContainerUpdate& move : moves) *response.add_update() = std::move(move);
  return response;
}

void CpuPinner::StopContainer(const api::PodSandbox&, const api::Container& container) {
  std::scoped_lock lock(mu_);
  if (auto it = containers_.find(container.id()); it != containers_.end()) it->second.stopped = true;
}

void CpuPinner::RemoveContainer(const api::PodSandbox&, const api::Container& container) {
  std::scoped_lock lock(mu_);
  containers_.erase(container.id());
}

std::string CpuPinner::Metrics() const {
  int64_t pinned = 0;
  {
    std::scoped_lock lock(mu_);
    for (const auto& [id, known] : containers_) pinned += known.stopped ? 0 : 1;
  }
  std::string out;
  auto gauge = [&](const char* name, const char* help, int64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n", name, " ", value, "\n");
  };
  gauge("dra_cpu_nri_connected", "Whether the driver is connected to the runtime's NRI as the node's plugin.",
        plugin_->connected() ? 1 : 0);
  gauge("dra_cpu_pinned_containers", "Live containers whose cpuset the driver sets.", pinned);
  return out;
}

}  // namespace cpu
