// The modes gpu-driver has for dra-example-driver's users, beside the GPU
// node plugin (main.cc): the fabric pool's controller, the net profile's
// NICs and the cpu profile's NUMA nodes. Each returns main's exit code.
#pragma once

#include "common/plugin_flags.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/log.h"
#include "gpu_flags.h"

namespace gpu {

// --fabric-controller: the fabric pool's one publisher, away from the nodes.
int RunFabricController(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                        dra::kubeletplugin::TerminationSignals& signals);
// --device-profile=net: --num-devices NICs, shared by bandwidth.
int RunNicDriver(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                 dra::kubeletplugin::TerminationSignals& signals);
// --device-profile=cpu: the CPU example's driver on --cpu-numa-nodes
// made-up NUMA nodes, published as dra-example-driver's cpu profile does
// ("numa-<id>", grouped by NUMA node). Its CPUs are not the node's: nothing
// pins containers to them.
int RunCpuProfile(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                  dra::kubeletplugin::TerminationSignals& signals);

}  // namespace gpu
