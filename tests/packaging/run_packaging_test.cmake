# cmake -DMODE=install|deb|fetchcontent -DSOURCE_DIR=<dra-cpp> -DCONSUMER_DIR=<consumer project>
#       -DWORK_DIR=<scratch dir> [-DSDK_BUILD_DIR=<built dra-cpp tree, for install>]
#       [-DBUILD_TYPE=...] [-DCXX_COMPILER=...] [-DMAKE_PROGRAM=...] [-DVERSION=<the SDK's>]
#       -P run_packaging_test.cmake
#
# install:      install the built dra-cpp tree SDK_BUILD_DIR into
#               WORK_DIR/prefix, then build the consumer with
#               find_package(dra CONFIG) and run it, once as it is, once
#               with DRA_STATIC_GRPC=ON and once with DRA_GRPC_UNSECURE=ON
#               too, and once without CMake, with the flags pkg-config gives
#               for dra and dra-cdi at VERSION.
# deb:          the same from the Debian packages cpack builds in SDK_BUILD_DIR
#               (libdra-dev, dractl, dra-example-drivers), installed with
#               dpkg -i into WORK_DIR/root; the packaged programs run --help.
# fetchcontent: build the consumer with FetchContent(dra SOURCE_DIR ...) and
#               DRA_STATIC_GRPC=ON, check that no dra-cpp test, example or
#               benchmark was built, run it. This builds the SDK from scratch
#               in Debug without debug info (-O0 alone): the test checks how
#               the SDK is found, configured and linked, not how it is
#               optimised or debugged (-O0 halves the build, leaving out
#               -g saves a fifth of the rest: 152 s instead of 194 on 2 CPUs).
# Every consumer binary's DT_NEEDED entries are checked against how it was
# meant to link gRPC, and a statically linked one's symbols for gRPC's xDS
# client: there with the full gRPC, absent with DRA_GRPC_UNSECURE.
cmake_minimum_required(VERSION 3.25)

foreach(required MODE SOURCE_DIR CONSUMER_DIR WORK_DIR)
  if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
    message(FATAL_ERROR "run_packaging_test.cmake needs -D${required}=...")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Debug)
endif()

if(MODE STREQUAL "fetchcontent")
  set(BUILD_TYPE Debug)
endif()
set(common_args -G Ninja "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(MODE STREQUAL "fetchcontent")
  list(APPEND common_args -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0)
endif()
if(CXX_COMPILER)
  list(APPEND common_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(MAKE_PROGRAM)
  list(APPEND common_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

# run(<step> <command...>): runs a command, echoing its output, and fails the
# test with the step's name when it fails. Leaves its stdout in last_stdout.
function(run step)
  message(STATUS "[${MODE}] ${step}: ${ARGN}")
  execute_process(COMMAND ${ARGN} TIMEOUT 3000
    RESULT_VARIABLE result OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  message("${stdout}${stderr}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "[${MODE}] ${step} failed (${result})")
  endif()
  set(last_stdout "${stdout}" PARENT_SCOPE)
endfunction()

# needed_libraries(<binary> <out-var>): the binary's DT_NEEDED entries.
function(needed_libraries binary out)
  run("read the NEEDED entries of ${binary}" readelf --dynamic --wide "${binary}")
  string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" entries "${last_stdout}")
  list(TRANSFORM entries REPLACE "Shared library: \\[([^]]+)\\]" "\\1")
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

# run_consumer(<binary-dir> <grpc-linkage>): runs both consumer programs and
# checks that app needs gRPC's shared libraries exactly when <grpc-linkage> is
# "shared" (else "static" or "static-unsecure"), that a static app holds
# gRPC's xDS client exactly when it is not "static-unsecure", and that app_cdi
# (dra::cdi only) never needs gRPC, protobuf or curl.
function(run_consumer binary_dir grpc_linkage)
  set(unsecure OFF)
  if(grpc_linkage STREQUAL "static-unsecure")
    set(grpc_linkage static)
    set(unsecure ON)
  endif()
  foreach(app app app_cdi)
    run("run the consumer ${app}" "${binary_dir}/${app}")
    if(NOT last_stdout STREQUAL "OK\n")
      message(FATAL_ERROR "[${MODE}] the consumer ${app} printed '${last_stdout}' instead of OK")
    endif()
  endforeach()

  needed_libraries("${binary_dir}/app" app_needed)
  list(FILTER app_needed INCLUDE REGEX "^lib(grpc|gpr|protobuf|absl_|upb|re2|cares)")
  if(grpc_linkage STREQUAL "shared" AND NOT app_needed MATCHES "libgrpc\\+\\+\\.so")
    message(FATAL_ERROR "[${MODE}] app should need libgrpc++.so, needs only: ${app_needed}")
  elseif(grpc_linkage STREQUAL "static" AND app_needed)
    message(FATAL_ERROR "[${MODE}] app was linked with DRA_STATIC_GRPC=ON but needs ${app_needed}")
  endif()

  if(grpc_linkage STREQUAL "static")
    run("read the symbols of ${binary_dir}/app" nm --demangle "${binary_dir}/app")
    string(FIND "${last_stdout}" "grpc_core::XdsClient::" xds_at)
    if(unsecure AND NOT xds_at EQUAL -1)
      message(FATAL_ERROR "[${MODE}] app was linked with DRA_GRPC_UNSECURE=ON but holds gRPC's xDS client")
    elseif(NOT unsecure AND xds_at EQUAL -1)
      message(FATAL_ERROR "[${MODE}] app was linked with the full gRPC but holds no xDS client: the check is void")
    endif()
  endif()

  needed_libraries("${binary_dir}/app_cdi" cdi_needed)
  list(FILTER cdi_needed INCLUDE REGEX "^lib(grpc|protobuf|curl)")
  if(cdi_needed)
    message(FATAL_ERROR "[${MODE}] app_cdi (dra::cdi only) needs ${cdi_needed}")
  endif()
endfunction()

# A fresh start each time: stale caches would hide packaging mistakes.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

if(MODE STREQUAL "install" OR MODE STREQUAL "deb")
  if(NOT SDK_BUILD_DIR OR NOT VERSION)
    message(FATAL_ERROR "MODE=${MODE} needs -DSDK_BUILD_DIR=<a built dra-cpp tree> and -DVERSION=<its version>")
  endif()
  if(MODE STREQUAL "install")
    set(prefix "${WORK_DIR}/prefix")
    run("install dra-cpp" ${CMAKE_COMMAND} --install "${SDK_BUILD_DIR}" --prefix "${prefix}")
  else()
    # dpkg -i into a root of its own (its own package database), so that the
    # machine's /usr is left alone; the packages' dependencies are the
    # machine's, hence --force-depends.
    run("build the Debian packages" cpack -G DEB -B "${WORK_DIR}/debs" --config "${SDK_BUILD_DIR}/CPackConfig.cmake")
    set(packages "")
    foreach(package libdra-dev dractl dra-example-drivers)
      file(GLOB deb "${WORK_DIR}/debs/${package}_${VERSION}_*.deb")
      if(NOT deb)
        message(FATAL_ERROR "[${MODE}] cpack made no ${package}_${VERSION}_<arch>.deb")
      endif()
      list(APPEND packages "${deb}")
    endforeach()
    set(root "${WORK_DIR}/root")
    file(MAKE_DIRECTORY "${root}/var/lib/dpkg/info" "${root}/var/lib/dpkg/updates")
    file(TOUCH "${root}/var/lib/dpkg/status" "${root}/var/lib/dpkg/available")
    run("dpkg -i the packages" dpkg "--root=${root}" --force-not-root --force-depends --force-script-chrootless
      -i ${packages})
    set(prefix "${root}/usr")
    foreach(program dractl gpu-driver cpu-driver)
      run("run ${program} --help" "${prefix}/bin/${program}" --help)
    endforeach()
  endif()

  foreach(expected
      include/dra/kubeletplugin/helper.h
      include/dra/k8s/resource_claim.h
      include/dra/cdi/spec_dir.h
      bin/dractl)
    if(NOT EXISTS "${prefix}/${expected}")
      message(FATAL_ERROR "[${MODE}] ${expected} is not installed")
    endif()
  endforeach()
  file(GLOB_RECURSE config_files "${prefix}/*/draConfig.cmake")
  if(NOT config_files)
    message(FATAL_ERROR "[${MODE}] draConfig.cmake is not installed")
  endif()
  file(GLOB_RECURSE generated_headers "${prefix}/include/*.pb.h")
  if(generated_headers)
    message(FATAL_ERROR "[${MODE}] generated protobuf headers were installed: ${generated_headers}")
  endif()

  # Without CMake: the same two programs built with what pkg-config says
  # (dra, the whole SDK; dra-cdi, CDI alone), against Debian's shared gRPC.
  file(GLOB_RECURSE pc_files "${prefix}/*/pkgconfig/dra.pc")
  if(NOT pc_files)
    message(FATAL_ERROR "[${MODE}] dra.pc is not installed")
  endif()
  get_filename_component(pc_dir "${pc_files}" DIRECTORY)
  set(pkgconfig_dir "${WORK_DIR}/consumer-pkgconfig")
  file(MAKE_DIRECTORY "${pkgconfig_dir}")
  if(NOT CXX_COMPILER)
    set(CXX_COMPILER c++)
  endif()
  foreach(pair "app:main.cc:dra" "app_cdi:cdi_main.cc:dra-cdi")
    string(REPLACE ":" ";" pair "${pair}")
    list(GET pair 0 program)
    list(GET pair 1 source)
    list(GET pair 2 package)
    run("pkg-config ${package}" ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${pc_dir}"
      pkg-config --cflags --libs "${package} = ${VERSION}")
    separate_arguments(flags UNIX_COMMAND "${last_stdout}")
    run("build ${program} with pkg-config" "${CXX_COMPILER}" "${CONSUMER_DIR}/${source}" -o "${pkgconfig_dir}/${program}"
      ${flags})
  endforeach()
  run_consumer("${pkgconfig_dir}" shared)

  foreach(linkage shared static static-unsecure)
    set(consumer_dir "${WORK_DIR}/consumer-${linkage}")
    set(static_grpc OFF)
    if(linkage MATCHES "^static")
      set(static_grpc ON)
    endif()
    set(unsecure OFF)
    if(linkage STREQUAL "static-unsecure")
      set(unsecure ON)
    endif()
    run("configure the ${linkage} consumer" ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${consumer_dir}"
      ${common_args} -DDRA_CONSUMER_MODE=find_package "-DCMAKE_PREFIX_PATH=${prefix}"
      -DDRA_STATIC_GRPC=${static_grpc} -DDRA_GRPC_UNSECURE=${unsecure})
    run("build the ${linkage} consumer" ${CMAKE_COMMAND} --build "${consumer_dir}" --parallel 2)
    run_consumer("${consumer_dir}" ${linkage})
  endforeach()

elseif(MODE STREQUAL "fetchcontent")
  # The SDK must turn its own tests, examples and benchmarks off when it is
  # not the top-level project, so none of sdk_options are passed here.
  run("configure the consumer" ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/consumer" ${common_args}
    -DDRA_CONSUMER_MODE=fetchcontent "-DDRA_SOURCE_DIR=${SOURCE_DIR}" -DDRA_STATIC_GRPC=ON)
  run("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/consumer" --parallel 2)

  file(GLOB_RECURSE built_extras LIST_DIRECTORIES false
    "${WORK_DIR}/consumer/_deps/*/unit_*"
    "${WORK_DIR}/consumer/_deps/*/integration_*"
    "${WORK_DIR}/consumer/_deps/*/e2e_*"
    "${WORK_DIR}/consumer/_deps/*/bench_*"
    "${WORK_DIR}/consumer/_deps/*/libdra_catch_main.a")
  if(built_extras)
    message(FATAL_ERROR "[${MODE}] dra-cpp built its tests or benchmarks for a consumer: ${built_extras}")
  endif()
  foreach(extra_dir tests examples bench)
    if(EXISTS "${WORK_DIR}/consumer/_deps/dra-build/${extra_dir}")
      message(FATAL_ERROR "[${MODE}] dra-cpp configured its ${extra_dir}/ for a consumer")
    endif()
  endforeach()
  run_consumer("${WORK_DIR}/consumer" static)

else()
  message(FATAL_ERROR "MODE must be install, deb or fetchcontent, not '${MODE}'")
endif()

message(STATUS "[${MODE}] passed")
