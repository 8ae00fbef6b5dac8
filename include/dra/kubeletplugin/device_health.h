/// @file
/// dra::kubeletplugin::DeviceHealth: one entry of the health list a driver
/// streams to the kubelet (DRA resource health API).
#pragma once

#include <string>

#include "absl/time/time.h"

namespace dra::kubeletplugin {

/// A device's health, as the kubelet shows it in the pod status.
enum class HealthStatus { kUnknown, kHealthy, kUnhealthy };

/// The health of one device.
struct DeviceHealth {
  std::string pool_name;                         ///< the device's pool
  std::string device_name;                       ///< the device's name in that pool
  HealthStatus health = HealthStatus::kUnknown;  ///< its health
  /// Up to 1024 characters; longer messages are cut to 1021 plus "...".
  std::string message;
  /// When the driver last determined this status; InfinitePast means "now"
  /// at publication time.
  absl::Time last_updated = absl::InfinitePast();
  /// How long the kubelet trusts this entry; zero means the kubelet's default.
  absl::Duration health_check_timeout = absl::ZeroDuration();
};

}  // namespace dra::kubeletplugin
