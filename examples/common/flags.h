// example::FlagSet: command-line flags as Go drivers take them (--name=value,
// --name value, -name, -v 5, boolean --name or --name=false), each optionally
// also read from an environment variable (the flag wins), with --help
// listing defaults. A bad value is an error naming the flag and the rule,
// never an exception.
//
//   example::FlagSet flags("gpu-driver", "A DRA driver for GPUs.");
//   int devices = 8;
//   flags.Int("num-devices", &devices, "mock GPUs to publish", "NUM_DEVICES", 0, 128);
//   absl::Status parsed = flags.Parse(argc, argv);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace example {

class FlagSet {
 public:
  FlagSet(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

  void String(std::string name, std::string* target, std::string help, std::string env = "");
  void Bool(std::string name, bool* target, std::string help, std::string env = "");
  // Within [min, max].
  void Int(std::string name, int* target, std::string help, std::string env = "", int min = 0, int max = 1 << 30);
  // Go duration syntax: "300ms", "2s", "1m30s".
  void Duration(std::string name, absl::Duration* target, std::string help, std::string env = "");
  // Within [min, max].
  void Double(std::string name, double* target, std::string help, std::string env = "", double min = 0, double max = 1);
  // Anything else: `parse` checks and stores the text; its error message is
  // the rule ("must be a quantity such as 8Gi"). `default_text` is shown in
  // --help.
  void Custom(std::string name, std::string value_name, std::string default_text, std::string help, std::string env,
              std::function<absl::Status(const std::string&)> parse);

  // Environment first, then the arguments. InvalidArgument: "flag
  // --num-devices: invalid value "x": must be an integer" (or "environment
  // variable NUM_DEVICES: ..."), "unknown flag --foo", "flag --node-name
  // needs a value", "unexpected argument x".
  absl::Status Parse(int argc, char** argv);
  // Whether -h or --help was given: print Usage() and exit 0.
  bool help_requested() const { return help_requested_; }
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // "string", "int", ...; empty for booleans
    std::string default_text;
    std::string help;
    std::string env;
    std::function<absl::Status(const std::string&)> parse;
  };
  void Add(Flag flag);
  const Flag* Find(const std::string& name) const;

  const std::string program_;
  const std::string summary_;
  std::vector<Flag> flags_;
  bool help_requested_ = false;
};

}  // namespace example
