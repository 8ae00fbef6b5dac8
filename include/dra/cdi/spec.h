/// @file
/// The CDI spec model (Container Device Interface, spec versions up to 1.1.0):
/// what a container runtime reads from /var/run/cdi to inject devices.
/// Field names follow the JSON keys; see SPEC.md of
/// tags.cncf.io/container-device-interface.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dra::cdi {

/// A device node to create in the container.
struct DeviceNode {
  std::string path;                   ///< required: path inside the container
  std::string host_path;              ///< host path when it differs from `path` (CDI 0.5.0)
  std::string type;                   ///< "b", "c", "u", "p" or empty (the runtime looks at the host)
  int64_t major = 0;                  ///< 0 means unset
  int64_t minor = 0;                  ///< with major
  std::optional<uint32_t> file_mode;  ///< the node's file mode
  std::string permissions;            ///< cgroup access, a subset of "rwm"; empty means "rwm"
  std::optional<uint32_t> uid;        ///< owner of the node in the container
  std::optional<uint32_t> gid;        ///< group of the node in the container

  bool operator==(const DeviceNode&) const = default;  ///< member-wise equality
};

/// A mount to add to the container.
struct Mount {
  std::string host_path;             ///< required
  std::string container_path;        ///< required
  std::vector<std::string> options;  ///< mount options, e.g. "bind", "ro"
  std::string type;                  ///< CDI 0.4.0

  bool operator==(const Mount&) const = default;  ///< member-wise equality
};

/// An OCI hook to run.
struct Hook {
  std::string hook_name;           ///< prestart, createRuntime, createContainer, startContainer, poststart, poststop
  std::string path;                ///< required
  std::vector<std::string> args;   ///< the full argv, args[0] included
  std::vector<std::string> env;    ///< KEY=VALUE
  std::optional<int64_t> timeout;  ///< seconds, > 0 when set

  bool operator==(const Hook&) const = default;  ///< member-wise equality
};

/// Linux resctrl settings (CDI 0.7.0; schemata and enable_monitoring 1.1.0).
struct IntelRdt {
  std::string clos_id;                ///< closID: the resctrl class of service
  std::string l3_cache_schema;        ///< l3CacheSchema: L3 cache allocation
  std::string mem_bw_schema;          ///< memBwSchema: memory bandwidth allocation
  std::vector<std::string> schemata;  ///< further schemata lines
  bool enable_monitoring = false;     ///< enableMonitoring: a resctrl monitoring group for the container

  bool operator==(const IntelRdt&) const = default;  ///< member-wise equality
};

/// A host network interface moved into the container (CDI 1.1.0).
struct NetDevice {
  std::string host_interface_name;  ///< required
  std::string name;                 ///< required: the name inside the container

  bool operator==(const NetDevice&) const = default;  ///< member-wise equality
};

/// Edits a runtime makes to the container's OCI spec.
struct ContainerEdits {
  std::vector<std::string> env;           ///< KEY=VALUE
  std::vector<DeviceNode> device_nodes;   ///< device nodes to create
  std::vector<NetDevice> net_devices;     ///< CDI 1.1.0
  std::vector<Hook> hooks;                ///< hooks to run
  std::vector<Mount> mounts;              ///< mounts to add
  std::optional<IntelRdt> intel_rdt;      ///< CDI 0.7.0
  std::vector<uint32_t> additional_gids;  ///< CDI 0.7.0

  /// Whether there is no edit at all (invalid for a device, fine at spec level).
  bool empty() const;
  /// Appends `other`'s edits; its intel_rdt, if set, replaces this one's.
  void Append(const ContainerEdits& other);

  bool operator==(const ContainerEdits&) const = default;  ///< member-wise equality
};

/// A device of a spec, named "vendor/class=name" by the spec's kind.
struct Device {
  std::string name;                                ///< unqualified: "gpu0", the part after '=' in "vendor/class=gpu0"
  std::map<std::string, std::string> annotations;  ///< CDI 0.6.0
  ContainerEdits container_edits;                  ///< must not be empty

  bool operator==(const Device&) const = default;  ///< member-wise equality
};

/// One CDI spec file: a kind and its devices.
struct Spec {
  /// The cdiVersion to write. Empty (the default) means the minimum version
  /// the spec's contents need (see version.h), so older runtimes accept it.
  std::string cdi_version;
  std::string kind;                                ///< "vendor/class", e.g. "example.com/gpu"
  std::map<std::string, std::string> annotations;  ///< CDI 0.6.0
  std::vector<Device> devices;                     ///< at least one
  ContainerEdits container_edits;                  ///< applied when any device is used

  bool operator==(const Spec&) const = default;  ///< member-wise equality
};

}  // namespace dra::cdi
