// dra-example-driver's device health pins: an annotation
// `health.example.com/<device>: healthy|unhealthy|unknown` on the driver's own
// pod sets the health the kubelet is told for that device, whatever the
// device source says, until it is removed (for demos and e2e tests of
// allocatedResourcesStatus). HealthPinWatch follows the pod with an informer
// on it alone (field selector metadata.name), so a pin reaches the kubelet
// as soon as the watch event does.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/k8s/client.h"
#include "dra/k8s/informer.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/log.h"
#include "nlohmann/json.hpp"

namespace gpu {

inline constexpr char kHealthPinPrefix[] = "health.example.com/";

struct HealthPins {
  std::map<std::string, dra::kubeletplugin::HealthStatus> by_device;
  // "<annotation>: <value>" of pins whose value is none of the three.
  std::vector<std::string> invalid;
};

// The pins in a pod's metadata.annotations.
HealthPins ParseHealthPins(const nlohmann::json& pod);

class HealthPinWatch : public dra::k8s::InformerHandler {
 public:
  // Watches pod `pod_name` in `pod_namespace`; `changed` is called on the
  // watch's thread whenever the pins differ from before.
  static absl::StatusOr<std::unique_ptr<HealthPinWatch>> Start(std::shared_ptr<dra::k8s::Client> client,
                                                               const std::string& pod_namespace,
                                                               const std::string& pod_name, dra::Logger logger,
                                                               std::function<void()> changed);
  ~HealthPinWatch() override;

  // The pins now. Thread-safe.
  std::map<std::string, dra::kubeletplugin::HealthStatus> pins() const;

  void OnEvent(const dra::k8s::InformerEvent& event) override;
  void OnError(const absl::Status& status, std::string_view context) override;

 private:
  HealthPinWatch(dra::Logger logger, std::function<void()> changed);

  const dra::Logger logger_;
  const std::function<void()> changed_;
  mutable std::mutex mu_;
  std::map<std::string, dra::kubeletplugin::HealthStatus> pins_;  // guarded by mu_
  std::unique_ptr<dra::k8s::Informer> informer_;                  // last: stopped first
};

}  // namespace gpu
