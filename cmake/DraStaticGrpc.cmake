# dra_link_grpc_statically(): makes everything that links gRPC::grpc++ link
# gRPC, protobuf, abseil, re2 and c-ares from the static archives Debian ships
# next to the shared ones (libgrpc++.a, libprotobuf.a, libabsl_*.a, ...).
#
# Why: a driver linked against Debian's shared gRPC loads 85 shared libraries
# (abseil alone is 50); their loading and relocation is most of the time from
# exec to the kubelet's registration, and the pages they touch are a third of
# the idle RSS. bench/go_vs_cpp.sh measures both builds.
#
# OpenSSL and zlib stay shared: libcurl.so loads them anyway, and a second,
# static copy of OpenSSL in the same process would interpose on libcurl's.
#
# It rewrites the imported targets in place (their IMPORTED_LOCATION and
# "-l<name>" link items), so it applies to every target in the directory scope
# where gRPC was found, including a consumer's own uses of gRPC::grpc++.
function(dra_link_grpc_statically)
  set(pending gRPC::grpc++)
  set(visited "")
  while(pending)
    list(POP_FRONT pending target)
    if(target IN_LIST visited OR NOT TARGET "${target}")
      continue()
    endif()
    list(APPEND visited "${target}")
    if(NOT target MATCHES "^(gRPC|absl|protobuf|re2|c-ares)::")
      continue()
    endif()

    foreach(property IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE
        IMPORTED_LOCATION_DEBUG IMPORTED_LOCATION_RELWITHDEBINFO IMPORTED_LOCATION_MINSIZEREL)
      get_target_property(location "${target}" ${property})
      if(NOT location MATCHES "^(.*/lib[^/]+)\\.so(\\.[0-9.]+)?$")
        continue()
      endif()
      set(archive "${CMAKE_MATCH_1}.a")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "DRA_STATIC_GRPC: ${target} has no static archive beside ${location}")
      endif()
      set_target_properties("${target}" PROPERTIES ${property} "${archive}")
    endforeach()

    get_target_property(links "${target}" INTERFACE_LINK_LIBRARIES)
    if(NOT links)
      continue()
    endif()
    set(rewritten "")
    foreach(item IN LISTS links)
      if(item MATCHES "^-l(re2|cares)$")
        find_library(dra_static_${CMAKE_MATCH_1} NAMES lib${CMAKE_MATCH_1}.a REQUIRED)
        set(item "${dra_static_${CMAKE_MATCH_1}}")
      endif()
      list(APPEND rewritten "${item}")
      list(APPEND pending "${item}")
    endforeach()
    set_target_properties("${target}" PROPERTIES INTERFACE_LINK_LIBRARIES "${rewritten}")
  endwhile()
endfunction()

# dra_link_grpc_unsecure(): makes gRPC::grpc++ and gRPC::grpc the libraries
# gRPC builds without its security stack (libgrpc++_unsecure,
# libgrpc_unsecure): no TLS or ALTS channel credentials, xDS, or cloud
# credential plugins, all of which gRPC's plugin registry links in whether
# used or not. The SDK's gRPC is plaintext (the kubelet's Unix sockets, the
# health port), so a driver loses nothing it uses; one that calls
# grpc::SslCredentials itself must leave DRA_GRPC_UNSECURE off. Statically
# linked, the GPU example is 2.7 MB (20%) smaller (docs/performance.md).
# Call it before dra_link_grpc_statically(), which then finds the unsecure
# archives.
function(dra_link_grpc_unsecure)
  foreach(library grpc++ grpc)
    set(from "gRPC::${library}_unsecure")
    if(NOT TARGET "${from}")
      message(FATAL_ERROR "DRA_GRPC_UNSECURE: gRPC provides no ${from}")
    endif()
    get_target_property(configurations "${from}" IMPORTED_CONFIGURATIONS)
    set(properties IMPORTED_CONFIGURATIONS INTERFACE_LINK_LIBRARIES IMPORTED_LOCATION IMPORTED_SONAME)
    foreach(configuration IN LISTS configurations)
      list(APPEND properties IMPORTED_LOCATION_${configuration} IMPORTED_SONAME_${configuration})
    endforeach()
    foreach(property IN LISTS properties)
      get_target_property(value "${from}" ${property})
      if(value)
        set_target_properties("gRPC::${library}" PROPERTIES ${property} "${value}")
      else()
        set_property(TARGET "gRPC::${library}" PROPERTY ${property})
      endif()
    endforeach()
  endforeach()
endfunction()
