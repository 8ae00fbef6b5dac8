// Device exclusivity (Options::device_exclusivity): what a claim holds on
// the node, and whether a claim being prepared collides with another's.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dra/k8s/claim_ref.h"
#include "dra/k8s/resource_claim.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/options.h"
#include "kubeletplugin/held_device.h"

namespace dra::kubeletplugin::internal {

// The devices of `claim`'s allocation results (the caller left only this
// driver's), each with its units.
std::vector<HeldDevice> HeldDevicesOf(const k8s::ResourceClaim& claim, const DeviceUnits& units);

// What the devices a claim was prepared with hold, for a checkpoint entry
// written before entries recorded their holds (0.1.0): no adminAccess, no
// units but those `units` gives now.
std::vector<HeldDevice> HeldDevicesOf(std::span<const Device> prepared, const DeviceUnits& units);

// Keys that find the claims whose holds may collide (Collision) with a
// claim's wanted devices without looking at every claim: a claim holding
// `devices` is indexed under HoldKeys, and looked up under WantedKeys. A
// device is keyed by its name (a hold without a pool matches by name
// alone), apart for a share (shareID), which only a device that is not a
// share can collide with, and by each unit it occupies; an adminAccess
// device, which collides with nothing, has no keys.
std::vector<std::string> HoldKeys(std::span<const HeldDevice> devices);
std::vector<std::string> WantedKeys(std::span<const HeldDevice> devices);

// Another claim that holds devices on the node.
// A view: it copies nothing of the checkpoint entry it is made of.
struct Holder {
  const k8s::ClaimRef& claim;
  bool prepared = false;  // else its preparation started (or failed, or is running)
  std::span<const HeldDevice> devices;
};

// Why `wanted` (a claim's devices) cannot be prepared while `holder` holds
// its devices: the first device of `wanted` that one of them overlaps (the
// same device, or a shared unit) where neither allocation has adminAccess
// and they are not two shares (shareID) of the same device. nullopt when
// they may be held at once.
std::optional<std::string> Collision(std::span<const HeldDevice> wanted, const Holder& holder);

}  // namespace dra::kubeletplugin::internal
