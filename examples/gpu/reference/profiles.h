// The modes gpu-driver has for dra-example-driver's users, beside the GPU
// node plugin (main.cc): the fabric pool's controller, the net profile's
// NICs and the cpu profile's NUMA nodes.
#pragma once

#include <optional>

#include "common/plugin_flags.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/log.h"
#include "gpu_flags.h"
#include "reference_flags.h"

namespace gpu {

// Runs the mode the flags ask for and returns main's exit code:
// --fabric-controller, the fabric pool's one publisher, away from the nodes;
// --device-profile=net, --num-devices NICs shared by bandwidth;
// --device-profile=cpu, the CPU example's driver on --cpu-numa-nodes made-up
// NUMA nodes, published as dra-example-driver's cpu profile does
// ("numa-<id>", grouped by NUMA node; nothing pins containers to their CPUs).
// nullopt for the GPU node plugin.
std::optional<int> RunReferenceMode(const example::PluginFlags& plugin, const GpuFlags& gpu_flags,
                                    const ReferenceFlags& flags, const dra::Logger& logger,
                                    dra::kubeletplugin::TerminationSignals& signals);

}  // namespace gpu
