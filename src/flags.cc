#include "dra/flags.h"

#include <cstdlib>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dra {

struct FlagSet::Flag {
  std::string name;
  std::string value_name;  // "string", "int", ...; empty for booleans
  std::string default_text;
  std::string help;
  std::string env;
  std::function<absl::Status(const std::string&)> parse;
};

FlagSet::FlagSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

FlagSet::~FlagSet() = default;

void FlagSet::String(std::string name, std::string* target, std::string help, std::string env) {
  Add({std::move(name), "string", absl::StrCat("\"", *target, "\""), std::move(help), std::move(env),
       [target](const std::string& text) {
         *target = text;
         return absl::OkStatus();
       }});
}

void FlagSet::Bool(std::string name, bool* target, std::string help, std::string env) {
  Add({std::move(name), "", *target ? "true" : "false", std::move(help), std::move(env),
       [target](const std::string& text) {
         const std::string lower = absl::AsciiStrToLower(text);
         if (lower == "true" || lower == "1") {
           *target = true;
         } else if (lower == "false" || lower == "0") {
           *target = false;
         } else {
           return absl::InvalidArgumentError("must be true or false");
         }
         return absl::OkStatus();
       }});
}

void FlagSet::Int(std::string name, int* target, std::string help, std::string env, int min, int max) {
  Add({std::move(name), "int", absl::StrCat(*target), std::move(help), std::move(env),
       [target, min, max](const std::string& text) {
         int value = 0;
         if (!absl::SimpleAtoi(text, &value)) return absl::InvalidArgumentError("must be an integer");
         if (value < min || value > max) {
           return absl::InvalidArgumentError(absl::StrCat("must be between ", min, " and ", max));
         }
         *target = value;
         return absl::OkStatus();
       }});
}

void FlagSet::Duration(std::string name, absl::Duration* target, std::string help, std::string env) {
  Add({std::move(name), "duration", absl::FormatDuration(*target), std::move(help), std::move(env),
       [target](const std::string& text) {
         absl::Duration value;
         if (!absl::ParseDuration(text, &value) || value < absl::ZeroDuration()) {
           return absl::InvalidArgumentError("must be a non-negative duration such as 500ms or 2s");
         }
         *target = value;
         return absl::OkStatus();
       }});
}

void FlagSet::Double(std::string name, double* target, std::string help, std::string env, double min, double max) {
  Add({std::move(name), "float", absl::StrFormat("%g", *target), std::move(help), std::move(env),
       [target, min, max](const std::string& text) {
         double value = 0;
         if (!absl::SimpleAtod(text, &value)) return absl::InvalidArgumentError("must be a number");
         if (!(value >= min && value <= max)) {
           return absl::InvalidArgumentError(absl::StrFormat("must be between %g and %g", min, max));
         }
         *target = value;
         return absl::OkStatus();
       }});
}

void FlagSet::Custom(std::string name, std::string value_name, std::string default_text, std::string help,
                     std::string env, std::function<absl::Status(const std::string&)> parse) {
  Add({std::move(name), std::move(value_name), std::move(default_text), std::move(help), std::move(env),
       std::move(parse)});
}

void FlagSet::Add(Flag flag) { flags_.push_back(std::move(flag)); }

const FlagSet::Flag* FlagSet::Find(const std::string& name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

absl::Status FlagSet::Parse(int argc, char** argv) {
  for (const Flag& flag : flags_) {
    if (flag.env.empty()) continue;
    const char* value = std::getenv(flag.env.c_str());
    if (value == nullptr || *value == '\0') continue;
    if (absl::Status parsed = flag.parse(value); !parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", flag.env, ": invalid value \"", value, "\": ", parsed.message()));
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!absl::StartsWith(arg, "-") || arg == "-" || arg == "--") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument ", arg));
    }
    arg = arg.substr(absl::StartsWith(arg, "--") ? 2 : 1);
    std::string name = arg;
    std::optional<std::string> value;
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (name == "h" || name == "help") {
      help_requested_ = true;
      continue;
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (!value.has_value()) {
      if (flag->value_name.empty()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    if (absl::Status parsed = flag->parse(*value); !parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", name, ": invalid value \"", *value, "\": ", parsed.message()));
    }
  }
  return absl::OkStatus();
}

std::optional<int> FlagSet::ParseCommandLine(int argc, char** argv) {
  if (absl::Status parsed = Parse(argc, argv); !parsed.ok()) {
    std::cerr << program_ << ": " << parsed.message() << "\n(see " << program_ << " --help)\n";
    return 2;
  }
  if (!help_requested_) return std::nullopt;
  std::cerr << Usage();
  return 0;
}

std::string FlagSet::Usage() const {
  std::string text = absl::StrCat("Usage: ", program_, " [flags]\n\n", summary_, "\n\nFlags:\n");
  for (const Flag& flag : flags_) {
    absl::StrAppend(&text, "  --", flag.name, flag.value_name.empty() ? "" : " " + flag.value_name, "\n      ",
                    flag.help, " (default ", flag.default_text, flag.env.empty() ? "" : ", env " + flag.env, ")\n");
  }
  absl::StrAppend(&text, "  -h, --help\n      show this help\n");
  return text;
}

}  // namespace dra
