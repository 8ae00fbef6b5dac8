/// @file
/// dra::FlagSet: command-line flags as Go drivers take them (--name=value,
/// --name value, -name, -v 5, boolean --name or --name=false), each
/// optionally also read from an environment variable (the flag wins, as a
/// DaemonSet's env and args combine), with --help listing defaults. A bad
/// value is an error naming the flag and the rule, never an exception.
///
///     dra::FlagSet flags("gpu-driver", "A DRA driver for GPUs.");
///     int devices = 8;
///     flags.Int("num-devices", &devices, "mock GPUs to publish", "NUM_DEVICES", 0, 128);
///     if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
///
/// dra::kubeletplugin::PluginFlags registers the flags every kubelet plugin
/// takes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace dra {

/// The flags of one program; each registration binds a flag to a variable
/// that holds its default until Parse() stores what was given. Not
/// thread-safe; parse once, in main.
class FlagSet {
 public:
  /// `program` and `summary` head the --help text.
  FlagSet(std::string program, std::string summary);
  ~FlagSet();
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  /// A flag `--name` bound to `*target` (whose value is the default), also
  /// read from environment variable `env` unless it is empty.
  void String(std::string name, std::string* target, std::string help, std::string env = "");
  /// `--name`, `--name=true|false|1|0`; never the next argument.
  void Bool(std::string name, bool* target, std::string help, std::string env = "");
  /// Within [min, max].
  void Int(std::string name, int* target, std::string help, std::string env = "", int min = 0, int max = 1 << 30);
  /// Go duration syntax: "300ms", "2s", "1m30s".
  void Duration(std::string name, absl::Duration* target, std::string help, std::string env = "");
  /// Within [min, max].
  void Double(std::string name, double* target, std::string help, std::string env = "", double min = 0, double max = 1);
  /// Anything else: `parse` checks and stores the text; its error message is
  /// the rule ("must be a quantity such as 8Gi"). `default_text` is shown in
  /// --help.
  void Custom(std::string name, std::string value_name, std::string default_text, std::string help, std::string env,
              std::function<absl::Status(const std::string&)> parse);

  /// Environment first, then the arguments. InvalidArgument: "flag
  /// --num-devices: invalid value "x": must be an integer" (or "environment
  /// variable NUM_DEVICES: ..."), "unknown flag --foo", "flag --node-name
  /// needs a value", "unexpected argument x".
  absl::Status Parse(int argc, char** argv);
  /// Whether -h or --help was given: print Usage() and exit 0.
  bool help_requested() const { return help_requested_; }
  /// The --help text: every flag with its default and variable.
  std::string Usage() const;

  /// Parse() for main: nullopt when the program goes on; otherwise the exit
  /// code main returns, after writing to stderr the usage (-h, --help: 0) or
  /// the error and where to look ("<program>: flag --x: ...", 2).
  std::optional<int> ParseCommandLine(int argc, char** argv);

 private:
  struct Flag;
  void Add(Flag flag);
  const Flag* Find(const std::string& name) const;

  const std::string program_;
  const std::string summary_;
  std::vector<Flag> flags_;
  bool help_requested_ = false;
};

}  // namespace dra
