import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load

# The repository's root: this recipe lives in packaging/conan.
REPOSITORY_ROOT = os.path.join("..", "..")


class DraCppConan(ConanFile):
    name = "dra-cpp"
    description = "C++ SDK for Kubernetes DRA kubelet plugins"
    license = "Apache-2.0"
    topics = ("kubernetes", "dra", "kubelet-plugin", "grpc")
    # The SDK's libraries are static and position-independent whatever the
    # options (CMAKE_POSITION_INDEPENDENT_CODE is on): no shared or fPIC option.
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"dractl": [True, False]}
    default_options = {"dractl": False}

    def set_version(self):
        cmakelists = load(self, os.path.join(self.recipe_folder, REPOSITORY_ROOT, "CMakeLists.txt"))
        self.version = re.search(r"project\(dra VERSION (\d+\.\d+\.\d+)", cmakelists).group(1)

    def export_sources(self):
        root = os.path.join(self.recipe_folder, REPOSITORY_ROOT)
        for pattern in ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*", "proto/*", "tools/*"):
            copy(self, pattern, root, self.export_sources_folder)

    def layout(self):
        cmake_layout(self)

    def validate(self):
        if self.settings.os != "Linux":
            raise ConanInvalidConfiguration(f"{self.ref} is a kubelet plugin SDK: Linux only")
        check_min_cppstd(self, 20)

    # Debian 12's versions, the ones the SDK is built and tested against; the
    # debian12 profile takes them from the system.
    def requirements(self):
        self.requires("abseil/20220623.1", transitive_headers=True)  # include/dra's absl::Status, absl::Time
        self.requires("nlohmann_json/3.11.2", transitive_headers=True)  # include/dra/cdi, k8s
        self.requires("protobuf/3.21.12")
        self.requires("grpc/1.51.1")
        self.requires("yaml-cpp/0.7.0")
        self.requires("libcurl/7.88.1")
        self.requires("openssl/3.0.19")
        self.requires("zlib/1.2.13")

    def build_requirements(self):
        self.tool_requires("protobuf/<host_version>")  # protoc
        self.tool_requires("grpc/<host_version>")  # grpc_cpp_plugin

    def generate(self):
        toolchain = CMakeToolchain(self)
        toolchain.cache_variables["DRA_BUILD_TESTS"] = False
        toolchain.cache_variables["DRA_BUILD_EXAMPLES"] = False
        toolchain.cache_variables["DRA_BUILD_BENCHMARKS"] = False
        toolchain.cache_variables["DRA_BUILD_TOOLS"] = bool(self.options.dractl)
        toolchain.cache_variables["DRA_INSTALL"] = True
        toolchain.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        CMake(self).install()

    def package_info(self):
        # Consumers use the SDK's own CMake package (find_package(dra CONFIG),
        # dra::dra, dra::cdi, ...): it knows the libraries' link order and
        # dependencies, finds gRPC, protobuf and abseil the way the build did,
        # and honours DRA_STATIC_GRPC. Components declared here would repeat
        # that target graph and drift from it.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = [os.path.join("lib", "cmake", "dra")]
        # Likewise the SDK installs dra.pc and dra-cdi.pc in lib/pkgconfig.
        self.cpp_info.set_property("pkg_config_name", "none")
