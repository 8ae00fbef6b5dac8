// Specs shared by the CDI unit tests.
#pragma once

#include "dra/cdi/spec.h"

namespace dra::cdi::testing {

// One device with one device node: needs only CDI 0.3.0.
inline Spec MinimalSpec() {
  Spec spec;
  spec.kind = "example.com/gpu";
  Device& device = spec.devices.emplace_back();
  device.name = "gpu0";
  device.container_edits.device_nodes.emplace_back().path = "/dev/gpu0";
  return spec;
}

// Every field of the model set at least once: needs CDI 1.1.0.
inline Spec FullSpec() {
  Spec spec;
  spec.kind = "example.com/gpu.shared";
  spec.annotations = {{"example.com/owner", "team-a"}, {"build", "42"}};

  Device& gpu0 = spec.devices.emplace_back();
  gpu0.name = "gpu0";
  gpu0.annotations = {{"example.com/uuid", "GPU-1234"}};
  ContainerEdits& edits = gpu0.container_edits;
  edits.env = {"GPU_VISIBLE=0", "EMPTY="};
  DeviceNode& node = edits.device_nodes.emplace_back();
  node.path = "/dev/gpu0";
  node.host_path = "/dev/dri/card0";
  node.type = "c";
  node.major = 226;
  node.minor = 0;
  node.file_mode = 0660;
  node.permissions = "rw";
  node.uid = 0;
  node.gid = 44;
  NetDevice& net = edits.net_devices.emplace_back();
  net.host_interface_name = "eth1";
  net.name = "net0";
  Hook& hook = edits.hooks.emplace_back();
  hook.hook_name = "createContainer";
  hook.path = "/usr/bin/gpu-hook";
  hook.args = {"gpu-hook", "--device", "0"};
  hook.env = {"HOOK_LOG=1"};
  hook.timeout = 10;
  Mount& mount = edits.mounts.emplace_back();
  mount.host_path = "/usr/lib/libgpu.so.1";
  mount.container_path = "/usr/lib/libgpu.so.1";
  mount.options = {"ro", "nosuid", "nodev", "bind"};
  mount.type = "bind";
  IntelRdt& rdt = edits.intel_rdt.emplace();
  rdt.clos_id = "gpu-clos";
  rdt.l3_cache_schema = "L3:0=ff";
  rdt.mem_bw_schema = "MB:0=50";
  rdt.schemata = {"L2:0=f"};
  rdt.enable_monitoring = true;
  edits.additional_gids = {44, 109};

  Device& second = spec.devices.emplace_back();
  second.name = "0:mig-1g.5gb";
  second.container_edits.env = {"GPU_MIG=1"};

  spec.container_edits.env = {"GPU_DRIVER=1.0"};
  spec.container_edits.device_nodes.emplace_back().path = "/dev/gpuctl";
  return spec;
}

}  // namespace dra::cdi::testing
