import os
from io import StringIO

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class DraCppTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    # No CMakeDeps: the package is found through its own draConfig.cmake.
    generators = "CMakeToolchain"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            usage = StringIO()  # dra::FlagSet prints it on stderr
            self.run(os.path.join(self.cpp.build.bindir, "test_package") + " --help", stderr=usage)
            if "--node-name" not in usage.getvalue():
                raise Exception("test_package --help does not list the kubelet plugin's --node-name flag")
