# The Go programs that tests outside tests/e2e need too, as ctest fixtures:
# the pinned Kubernetes binaries (build-k8s.sh), and the kubelet peer
# (kubeletpeer/: the kubelet's own plugin manager and DRA plugin manager),
# which the crash and load harnesses (tests/crash) drive the example drivers
# with. Included by tests/CMakeLists.txt whether or not the e2e tests are
# built (the sanitizer build leaves them out).
set(dra_build_k8s "${CMAKE_CURRENT_LIST_DIR}/build-k8s.sh")
add_test(NAME e2e_build_k8s COMMAND "${dra_build_k8s}")
set_tests_properties(e2e_build_k8s PROPERTIES
  FIXTURES_SETUP e2e_binaries LABELS e2e TIMEOUT 5400)
add_test(NAME e2e_build_kubeletpeer COMMAND "${dra_build_k8s}" kubeletpeer)
set_tests_properties(e2e_build_kubeletpeer PROPERTIES
  FIXTURES_SETUP e2e_kubeletpeer FIXTURES_REQUIRED e2e_binaries LABELS e2e TIMEOUT 3600)
