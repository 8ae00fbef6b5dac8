#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "dra/cdi/device_node.h"
#include "support/temp_dir.h"

namespace dra::cdi {
namespace {

TEST_CASE("type, major and minor come from the host device", "[cdi][devicenode]") {
  DeviceNode node;
  node.path = "/dev/null";  // character device 1:3 on Linux
  REQUIRE(FillDeviceNodeFromHost(node).ok());
  CHECK(node.type == "c");
  CHECK(node.major == 1);
  CHECK(node.minor == 3);
}

TEST_CASE("hostPath is looked at when set, and set fields are kept", "[cdi][devicenode]") {
  DeviceNode node;
  node.path = "/dev/container-null";
  node.host_path = "/dev/null";
  node.type = "u";  // unbuffered character device
  REQUIRE(FillDeviceNodeFromHost(node).ok());
  CHECK(node.type == "u");
  CHECK(node.major == 1);

  DeviceNode preset;
  preset.path = "/dev/null";
  preset.major = 7;
  preset.minor = 9;
  REQUIRE(FillDeviceNodeFromHost(preset).ok());
  CHECK(preset.major == 7);
  CHECK(preset.minor == 9);
}

TEST_CASE("a fifo gets type p and no numbers", "[cdi][devicenode]") {
  dra::testing::TempDir temp;
  const std::string fifo = temp.Join("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  DeviceNode node;
  node.path = fifo;
  REQUIRE(FillDeviceNodeFromHost(node).ok());
  CHECK(node.type == "p");
  CHECK(node.major == 0);
}

TEST_CASE("non-devices, missing files and type mismatches fail", "[cdi][devicenode]") {
  dra::testing::TempDir temp;
  dra::testing::WriteFile(temp.Join("file"), "x");
  DeviceNode file;
  file.path = temp.Join("file");
  CHECK(FillDeviceNodeFromHost(file).message() ==
        "device node " + file.path + ": " + file.path + " is not a device node");

  DeviceNode missing;
  missing.path = temp.Join("missing");
  CHECK(absl::IsNotFound(FillDeviceNodeFromHost(missing)));

  DeviceNode block;
  block.path = "/dev/null";
  block.type = "b";
  CHECK(FillDeviceNodeFromHost(block).message() == "device node /dev/null: type \"b\" but /dev/null has type \"c\"");
}

}  // namespace
}  // namespace dra::cdi
