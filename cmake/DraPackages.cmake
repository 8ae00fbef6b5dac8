# Debian packages of the installed components (`cpack -G DEB` in the build
# tree):
#   libdra-dev            headers, libraries, CMake package, pkg-config files
#   dractl                the kubelet stand-in
#   dra-example-drivers   the example GPU and CPU drivers
# Dependencies of the binaries come from dpkg-shlibdeps; the development
# package names the Debian 12 packages its CMake and pkg-config files find.
set(CPACK_PACKAGE_NAME dra)
set(CPACK_PACKAGE_VENDOR "dra-cpp")
set(CPACK_PACKAGE_CONTACT "dra-cpp maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL dev tools examples)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # executables; static libraries keep their symbols
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdra-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "libgrpc++-dev, libprotobuf-dev, libabsl-dev, nlohmann-json3-dev, libyaml-cpp-dev, zlib1g-dev, libssl-dev, libcurl4")
set(CPACK_DEBIAN_DEV_DESCRIPTION "dra-cpp: C++ SDK for Kubernetes DRA kubelet plugins (development files)")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME dractl)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libcurl4")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "dractl: drives a DRA kubelet plugin as the kubelet does")
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_NAME dra-example-drivers)
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_DEPENDS "libcurl4")
set(CPACK_DEBIAN_EXAMPLES_DESCRIPTION "dra-cpp's example GPU and CPU DRA drivers")
include(CPack)
