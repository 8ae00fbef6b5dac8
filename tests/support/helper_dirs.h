// The directories of a Helper under test, all in one temp dir: the kubelet's
// registry, the plugin data dir and the CDI spec dir (never the host's
// /var/run/cdi, which the Helper scans for orphans at start), Options for
// TestDriver pointing at them, and a Start that fails the test with the
// Helper's reason.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/helper.h"
#include "support/discard_logger.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra::testing {

struct HelperDirs {
  TempDir dir;
  std::string registry = dir.Join("plugins_registry");
  std::string data = dir.Join("plugins/gpu.example.com");
  std::string cdi_dir = dir.Join("run/cdi");

  HelperDirs() { std::filesystem::create_directories(registry); }

  kubeletplugin::Options MakeOptions(std::shared_ptr<kubeletplugin::ClaimSource> claims) const {
    kubeletplugin::Options options;
    options.driver_name = kTestDriverName;
    options.node_name = "node-1";
    options.registrar_dir = registry;
    options.plugin_data_dir = data;
    options.claim_source = std::move(claims);
    options.logger = DiscardLogger();
    options.cdi.dir.path = cdi_dir;
    return options;
  }

  static std::unique_ptr<kubeletplugin::Helper> Start(kubeletplugin::Driver& driver, kubeletplugin::Options options) {
    absl::StatusOr<std::unique_ptr<kubeletplugin::Helper>> helper =
        kubeletplugin::Helper::Start(driver, std::move(options));
    INFO(helper.status().ToString());
    REQUIRE(helper.ok());
    return *std::move(helper);
  }
};

}  // namespace dra::testing
