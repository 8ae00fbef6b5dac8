# Finds the Debian 12 packages the SDK builds against. Protobuf and CURL ship
# no CMake config files on Debian, so they are found in module mode.
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(ZLIB REQUIRED)

include(DraStaticGrpc)
if(DRA_GRPC_UNSECURE)
  dra_link_grpc_unsecure()
endif()
if(DRA_STATIC_GRPC)
  dra_link_grpc_statically()
endif()
