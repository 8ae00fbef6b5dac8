// dra-example-controller: dra-example-driver's claim controller, which its
// chart runs as a Deployment from the driver's image when
// `controller.plugins` is set (the image links the name to gpu-driver).
#pragma once

namespace gpu {

// Runs it with dra-example-controller's flags: --driver-name (default
// gpu.example.com), --enable-plugin NAME (repeated or comma-separated; the
// one plugin is BindingConditions, which marks every binding condition of the
// driver's allocated devices True), and dra::k8s::ClientFlags'.
// Returns the exit code.
int RunBindingController(int argc, char** argv);

}  // namespace gpu
