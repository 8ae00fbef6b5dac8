// A kubelet-like client for DRA plugins: discovers registration sockets,
// registers plugins the way the kubelet does, and calls the DRA and health
// services. Used by dractl and by the test suite.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/k8s/claim_ref.h"

namespace dra::kubeletclient {

struct PluginInfo {
  std::string type;
  std::string name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
};

// Outcome of registering one socket found in a registry directory.
struct Registration {
  std::string socket_path;
  PluginInfo info;             // as returned by GetInfo; an empty endpoint is
                               // replaced by socket_path, as the kubelet does
  std::string chosen_service;  // e.g. "v1.DRAPlugin"; empty when refused
  absl::Status status;         // OK, or why the kubelet would refuse
};

// Sockets the kubelet's plugin watcher would consider: non-dot entries of
// `registry_dir` that are Unix sockets, sorted by name.
absl::StatusOr<std::vector<std::string>> DiscoverSockets(const std::string& registry_dir);

// The kubelet's checks on a DRA plugin's GetInfo answer: type "DRAPlugin",
// non-empty name, absolute endpoint, and a supported version it knows. Like
// the kubelet, it chooses the first of the plugin's supported versions that is
// "v1.DRAPlugin" or "v1beta1.DRAPlugin" and returns it.
absl::StatusOr<std::string> ValidateDraPluginInfo(const PluginInfo& info);

// GetInfo on one registration socket, without registering: an empty endpoint
// is replaced by `socket_path`, as the kubelet does. Errors name the socket
// and the step that failed ("connect", "GetInfo").
absl::StatusOr<PluginInfo> GetPluginInfo(const std::string& socket_path, absl::Duration timeout = absl::Seconds(10));

// GetInfo, validate, NotifyRegistrationStatus(registered, error) on one socket.
// Errors name the socket and the step that failed.
Registration RegisterPlugin(const std::string& socket_path, absl::Duration timeout = absl::Seconds(10));

enum class DraApi { kV1, kV1beta1 };
enum class HealthApi { kV1, kV1alpha1 };

struct PreparedDevice {
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
  std::optional<std::string> share_id;  // v1 only
};

struct PrepareOutcome {
  std::string error;  // empty on success
  std::vector<PreparedDevice> devices;
};

struct DeviceHealthEntry {
  std::string pool_name;
  std::string device_name;
  std::string health;  // "UNKNOWN", "HEALTHY", "UNHEALTHY"
  std::string message;
  int64_t last_updated_time = 0;
  int64_t health_check_timeout_seconds = 0;
};

class HealthStream {
 public:
  virtual ~HealthStream() = default;
  // Next complete list sent by the plugin; an error when the stream ended or
  // the timeout passed.
  virtual absl::StatusOr<std::vector<DeviceHealthEntry>> Next(absl::Duration timeout) = 0;
  virtual void Cancel() = 0;
};

// A connection to a DRA socket. Thread-safe; calls may run concurrently.
class DraClient {
 public:
  // `endpoint` is a socket path. Connects lazily, as the kubelet does.
  static std::unique_ptr<DraClient> Create(const std::string& endpoint);
  virtual ~DraClient() = default;

  // Keyed by claim UID.
  virtual absl::StatusOr<std::map<std::string, PrepareOutcome>> NodePrepareResources(
      DraApi api, std::span<const k8s::ClaimRef> claims, absl::Duration timeout = absl::Seconds(45)) = 0;
  // Keyed by claim UID; the value is the per-claim error, empty on success.
  virtual absl::StatusOr<std::map<std::string, std::string>> NodeUnprepareResources(
      DraApi api, std::span<const k8s::ClaimRef> claims, absl::Duration timeout = absl::Seconds(45)) = 0;
  virtual absl::StatusOr<std::unique_ptr<HealthStream>> WatchHealth(HealthApi api) = 0;
  // grpc.health.v1.Health/Check for `service` ("" is the server as a whole);
  // returns "SERVING", "NOT_SERVING", ...
  virtual absl::StatusOr<std::string> CheckGrpcHealth(const std::string& service,
                                                      absl::Duration timeout = absl::Seconds(5)) = 0;
};

// Parses "NS/NAME/UID" as dractl takes it on the command line.
absl::StatusOr<k8s::ClaimRef> ParseClaimArg(const std::string& text);

}  // namespace dra::kubeletclient
