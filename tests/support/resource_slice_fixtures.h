// ResourceSlices as JSON that the codecs' tests share (JSON and protobuf).
#pragma once

namespace dra::testing {

// A slice with per-device node selection as a driver publishes it and the API
// server returns it, using every Device field including the alpha ones.
// Quantities are canonical, so it round-trips byte for byte.
constexpr char kSlice[] = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceSlice",
  "metadata": {
    "name": "node-a-gpu.example.com-7xk2p",
    "generateName": "node-a-gpu.example.com-",
    "uid": "3e1f0c2a-9b8d-4c7e-a6f5-1d2c3b4a5968",
    "resourceVersion": "9182",
    "generation": 3,
    "creationTimestamp": "2026-03-01T09:00:00Z",
    "labels": {"app.kubernetes.io/managed-by": "dra-cpp"},
    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-a",
                         "uid": "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d", "controller": true}]
  },
  "spec": {
    "driver": "gpu.example.com",
    "pool": {"name": "node-a", "generation": 4, "resourceSliceCount": 2},
    "perDeviceNodeSelection": true,
    "partitionTypeAttribute": "gpu.example.com/profile",
    "skipNodeOperations": ["NodePrepareResources", "NodeUnprepareResources"],
    "devices": [
      {
        "name": "gpu-0",
        "attributes": {
          "gpu.example.com/index": {"int": 0},
          "gpu.example.com/mig-capable": {"bool": true},
          "gpu.example.com/profile": {"string": "Full"},
          "gpu.example.com/driverVersion": {"version": "580.65.6"},
          "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}
        },
        "capacity": {
          "gpu.example.com/memory": {
            "value": "80Gi",
            "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}
          },
          "gpu.example.com/multiprocessors": {
            "value": "132",
            "requestPolicy": {"default": "4", "validValues": ["4", "8", "16", "132"]}
          },
          "gpu.example.com/copyEngines": {"value": "7"}
        },
        "consumesCounters": [
          {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "132"}}}
        ],
        "nodeName": "node-a",
        "taints": [
          {"key": "gpu.example.com/ecc-errors", "value": "uncorrectable", "effect": "NoSchedule",
           "timeAdded": "2026-03-01T09:30:00Z"},
          {"key": "gpu.example.com/firmware-update", "effect": "None"}
        ],
        "bindsToNode": true,
        "bindingConditions": ["gpu.example.com/FabricAttached"],
        "bindingFailureConditions": ["gpu.example.com/FabricAttachFailed"],
        "allowMultipleAllocations": true,
        "nodeAllocatableResources": {
          "memory": {"overhead": {"perPod": "512Mi", "perContainer": "64Mi"}}
        }
      },
      {
        "name": "cpu-socket-0",
        "attributes": {
          "dra.example.com/numaNodes": {"ints": [0, 1]},
          "dra.example.com/smtEnabled": {"bools": [true, false]},
          "dra.example.com/flags": {"strings": ["avx512", "amx"]},
          "dra.example.com/microcode": {"versions": ["1.2.3", "1.3.0"]}
        },
        "capacity": {"dra.example.com/cores": {"value": "64"}},
        "nodeSelector": {"nodeSelectorTerms": [{
          "matchExpressions": [{"key": "topology.example.com/rack", "operator": "In", "values": ["r1", "r2"]}],
          "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]
        }]},
        "nodeAllocatableResources": {
          "cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
          "hugepages-2Mi": {"mapping": {"deviceMultiplier": "1Gi"}, "overhead": {"perPod": "4Mi"}}
        }
      },
      {
        "name": "ccx-0",
        "allNodes": true,
        "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "8"}}}
      }
    ]
  }
})json";

// The other kind of slice in a partitionable pool: only the counter sets,
// available on the nodes a selector picks.
constexpr char kCounterSlice[] = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceSlice",
  "metadata": {"name": "rack-1-gpu.example.com-counters"},
  "spec": {
    "driver": "gpu.example.com",
    "pool": {"name": "rack-1", "generation": 4, "resourceSliceCount": 2},
    "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "topology.example.com/rack", "operator": "In", "values": ["r1"]},
      {"key": "gpu.example.com/present", "operator": "Exists"}]}]},
    "sharedCounters": [
      {"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "132"}}},
      {"name": "gpu-1-counters", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "132"}}}
    ]
  }
})json";

}  // namespace dra::testing
