// dra-example-webhook: dra-example-driver's validating admission webhook,
// which its chart runs as a Deployment from the driver's image when
// `webhook.enabled` is set (the image links the name to gpu-driver). It
// refuses ResourceClaims and ResourceClaimTemplates whose opaque config for
// the driver is not a valid GpuConfig (NetConfig with the net profile),
// in the reference's words (common/claim_config_review.h).
#pragma once

namespace gpu {

// Runs it with dra-example-webhook's flags: --tls-cert-file and
// --tls-private-key-file (required; read again when they change), --port
// (443), --device-profile (gpu or net; DEVICE_PROFILE), --driver-name
// (default <profile>.example.com; DRIVER_NAME), -v and --log-format. Serves
// POST /validate-resource-claim-parameters and GET /readyz until SIGTERM.
// Returns the exit code.
int RunAdmissionWebhook(int argc, char** argv);

}  // namespace gpu
