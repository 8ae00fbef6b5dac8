#include "dra/cdi/spec.h"

namespace dra::cdi {
namespace {

template <typename T>
void AppendAll(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

bool ContainerEdits::empty() const {
  return env.empty() && device_nodes.empty() && net_devices.empty() && hooks.empty() && mounts.empty() &&
         !intel_rdt.has_value() && additional_gids.empty();
}

void ContainerEdits::Append(const ContainerEdits& other) {
  AppendAll(env, other.env);
  AppendAll(device_nodes, other.device_nodes);
  AppendAll(net_devices, other.net_devices);
  AppendAll(hooks, other.hooks);
  AppendAll(mounts, other.mounts);
  if (other.intel_rdt.has_value()) intel_rdt = other.intel_rdt;
  AppendAll(additional_gids, other.additional_gids);
}

}  // namespace dra::cdi
