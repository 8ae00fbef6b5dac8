# Install rules: public headers, the SDK libraries, dractl and a CMake
# package (find_package(dra CONFIG)) exporting them as dra::<name>.
# Generated protobuf headers stay private: no public header includes them.
include(CMakePackageConfigHelpers)

set(DRA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/dra"
  CACHE STRING "Where draConfig.cmake is installed, relative to the prefix")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/dra"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h")

# Filled by dra_add_library() and by targets that add themselves.
get_property(dra_install_targets GLOBAL PROPERTY DRA_INSTALL_TARGETS)
install(TARGETS ${dra_install_targets}
  EXPORT draTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

if(TARGET dractl)
  install(TARGETS dractl RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

install(EXPORT draTargets
  NAMESPACE dra::
  FILE draTargets.cmake
  DESTINATION "${DRA_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/draConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/draConfig.cmake"
  INSTALL_DESTINATION "${DRA_INSTALL_CMAKEDIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/draConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/draConfig.cmake"
  "${PROJECT_BINARY_DIR}/draConfigVersion.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/DraStaticGrpc.cmake"
  DESTINATION "${DRA_INSTALL_CMAKEDIR}")
