/// @file
/// Validation of a CDI spec with the rules of the CDI specification and its
/// reference library (tags.cncf.io/container-device-interface): names, kind,
/// annotations, env "KEY=VALUE", device-node type and permissions, hook names,
/// mount paths, net devices, intelRdt closID, non-empty device edits, unique
/// device names, and the version. Errors name the device, the field and the
/// rule, e.g. `devices["gpu0"].containerEdits.deviceNodes[0].permissions:
/// "rwx" has 'x'; allowed are r, w and m`.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "dra/cdi/spec.h"

namespace dra::cdi {

/// OK or InvalidArgument with the first problem found.
absl::Status ValidateSpec(const Spec& spec);

/// The edits alone, for a driver that checks them before handing them over;
/// `where` prefixes the error path (e.g. `devices["gpu0"].containerEdits`).
absl::Status ValidateContainerEdits(const ContainerEdits& edits, absl::string_view where);

}  // namespace dra::cdi
