# Install rules: public headers, the SDK libraries, dractl, a CMake package
# (find_package(dra CONFIG)) exporting them as dra::<name>, and pkg-config
# files for builds without CMake (dra: the whole SDK; dra-cdi: CDI alone).
# Generated protobuf headers stay private: no public header includes them.
include(CMakePackageConfigHelpers)

set(DRA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/dra"
  CACHE STRING "Where draConfig.cmake is installed, relative to the prefix")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/dra"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  COMPONENT dev
  FILES_MATCHING PATTERN "*.h")

# Filled by dra_add_library() and by targets that add themselves.
get_property(dra_install_targets GLOBAL PROPERTY DRA_INSTALL_TARGETS)
install(TARGETS ${dra_install_targets}
  EXPORT draTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT dev
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

if(TARGET dractl)
  install(TARGETS dractl RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT tools)
endif()
foreach(driver gpu-driver cpu-driver)
  if(TARGET ${driver})
    install(TARGETS ${driver} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT examples)
  endif()
endforeach()

install(EXPORT draTargets
  NAMESPACE dra::
  FILE draTargets.cmake
  DESTINATION "${DRA_INSTALL_CMAKEDIR}"
  COMPONENT dev)

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
  DESTINATION "${DRA_INSTALL_CMAKEDIR}"
  COMPONENT dev)

# pkg-config: the libraries in link order, each before the ones it uses
# (the packaging test links a consumer with them). dra's come first, then
# dra-cdi's, which none of dra-cdi's use back. pkg-config gives Debian's
# shared gRPC; DRA_STATIC_GRPC is a CMake-only choice.
set(dra_pc_libs kubeletplugin resourceclaim resourceslice call_context k8s flags log k8s_proto proto base)
set(dra_cdi_pc_libs cdi fileutil crashpoint)
set(dra_pc_all ${dra_pc_libs} ${dra_cdi_pc_libs})
list(TRANSFORM dra_pc_all PREPEND "dra_")
set(dra_installed "")
foreach(target ${dra_install_targets})
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")  # dra::dra: only the others
    list(APPEND dra_installed ${target})
  endif()
endforeach()
list(SORT dra_pc_all)
list(SORT dra_installed)
if(NOT dra_pc_all STREQUAL dra_installed)
  message(FATAL_ERROR "cmake/DraInstall.cmake: the pkg-config link order lists ${dra_pc_all}, "
    "the installed libraries are ${dra_installed}: add the new one where it belongs")
endif()
foreach(list dra_pc_libs dra_cdi_pc_libs)
  list(TRANSFORM ${list} PREPEND "-ldra_")
  list(JOIN ${list} " " ${list})
endforeach()
# The prefix relative to ${pcfiledir}, so that `cmake --install --prefix`
# and DESTDIR keep the files right.
set(dra_pc_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${dra_pc_dir}")
  set(dra_pc_prefix "${CMAKE_INSTALL_PREFIX}")
else()
  string(REGEX REPLACE "[^/]+" ".." dra_pc_up "${dra_pc_dir}")
  set(dra_pc_prefix "\${pcfiledir}/${dra_pc_up}")
endif()
foreach(dir INCLUDEDIR LIBDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(dra_pc_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(dra_pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
foreach(pc dra dra-cdi)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in" "${PROJECT_BINARY_DIR}/${pc}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/${pc}.pc" DESTINATION "${dra_pc_dir}" COMPONENT dev)
endforeach()

# CPack is the top-level project's: a parent that vendors dra-cpp with
# DRA_INSTALL on packages itself.
if(PROJECT_IS_TOP_LEVEL)
  include(DraPackages)
endif()
