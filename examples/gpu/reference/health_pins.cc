#include "health_pins.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpu {

namespace kp = dra::kubeletplugin;
using nlohmann::json;

HealthPins ParseHealthPins(const json& pod) {
  HealthPins out;
  const json* annotations = pod.is_object() && pod.contains("metadata") && pod["metadata"].is_object() &&
                                    pod["metadata"].contains("annotations")
                                ? &pod["metadata"]["annotations"]
                                : nullptr;
  if (annotations == nullptr || !annotations->is_object()) return out;
  for (const auto& [key, value] : annotations->items()) {
    if (!absl::StartsWith(key, kHealthPinPrefix)) continue;
    const std::string device = key.substr(sizeof(kHealthPinPrefix) - 1);
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (device.empty()) {
      out.invalid.push_back(absl::StrCat(key, ": ", text, " (no device name)"));
    } else if (text == "healthy") {
      out.by_device[device] = kp::HealthStatus::kHealthy;
    } else if (text == "unhealthy") {
      out.by_device[device] = kp::HealthStatus::kUnhealthy;
    } else if (text == "unknown") {
      out.by_device[device] = kp::HealthStatus::kUnknown;
    } else {
      out.invalid.push_back(absl::StrCat(key, ": ", text, " (want healthy, unhealthy or unknown)"));
    }
  }
  return out;
}

HealthPinWatch::HealthPinWatch(dra::Logger logger, std::function<void()> changed)
    : logger_(std::move(logger)), changed_(std::move(changed)) {}

HealthPinWatch::~HealthPinWatch() {
  if (informer_ != nullptr) informer_->Stop();
}

absl::StatusOr<std::unique_ptr<HealthPinWatch>> HealthPinWatch::Start(std::shared_ptr<dra::k8s::Client> client,
                                                                      const std::string& pod_namespace,
                                                                      const std::string& pod_name, dra::Logger logger,
                                                                      std::function<void()> changed) {
  std::unique_ptr<HealthPinWatch> watch(new HealthPinWatch(std::move(logger), std::move(changed)));
  dra::k8s::InformerOptions options;
  options.resource = dra::k8s::ResourceRef{"", "v1", "pods", true};
  options.namespace_ = pod_namespace;
  options.field_selector = "metadata.name=" + pod_name;
  absl::StatusOr<std::unique_ptr<dra::k8s::Informer>> informer =
      dra::k8s::Informer::Start(std::move(client), options, *watch);
  if (!informer.ok()) return informer.status();
  watch->informer_ = *std::move(informer);
  return watch;
}

std::map<std::string, kp::HealthStatus> HealthPinWatch::pins() const {
  std::scoped_lock lock(mu_);
  return pins_;
}

void HealthPinWatch::OnEvent(const dra::k8s::InformerEvent& event) {
  HealthPins pins;
  if (event.type != dra::k8s::InformerEvent::Type::kDeleted) pins = ParseHealthPins(event.object);
  if (!pins.invalid.empty()) {
    logger_.Error("Ignoring health pins with an invalid value", {{"pins", absl::StrJoin(pins.invalid, "; ")}});
  }
  {
    std::scoped_lock lock(mu_);
    if (pins.by_device == pins_) return;
    pins_ = pins.by_device;
  }
  logger_.Info("Device health pins changed", {{"pinned", absl::StrCat(pins.by_device.size())}});
  changed_();
}

void HealthPinWatch::OnError(const absl::Status& status, std::string_view context) {
  logger_.Error("Watching the driver's pod for health pins failed; retrying",
                {{"context", std::string(context)}, {"err", status.ToString()}});
}

}  // namespace gpu
