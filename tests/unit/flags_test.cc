// dra::FlagSet: the flag forms Go drivers accept, environment variables,
// and errors that name the flag and the rule.
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/flags.h"

namespace {

struct Argv {
  explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
    for (std::string& s : strings) pointers.push_back(s.data());
  }
  int argc() { return static_cast<int>(pointers.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

struct Flags {
  dra::FlagSet set{"prog", "A program."};
  std::string name = "n";
  int count = 8;
  bool on = false;
  absl::Duration delay = absl::Seconds(2);
  double rate = 0;
  Flags() {
    set.String("name", &name, "a name", "FLAGS_TEST_NAME");
    set.Int("count", &count, "a count", "FLAGS_TEST_COUNT", 0, 16);
    set.Bool("on", &on, "a switch");
    set.Duration("delay", &delay, "a delay");
    set.Double("rate", &rate, "a rate", "", 0, 1);
  }
  absl::Status Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "prog");
    Argv argv(std::move(args));
    return set.Parse(argv.argc(), argv.argv());
  }
  std::optional<int> ParseCommandLine(std::vector<std::string> args) {
    args.insert(args.begin(), "prog");
    Argv argv(std::move(args));
    return set.ParseCommandLine(argv.argc(), argv.argv());
  }
};

TEST_CASE("flags take --name=value, --name value, -name and bare booleans", "[flags]") {
  Flags f;
  REQUIRE(f.Parse({"--name=x", "-count", "3", "--on", "--delay", "300ms", "--rate=0.25"}).ok());
  CHECK(f.name == "x");
  CHECK(f.count == 3);
  CHECK(f.on);
  CHECK(f.delay == absl::Milliseconds(300));
  CHECK(f.rate == 0.25);
  REQUIRE(f.Parse({"--on=false"}).ok());
  CHECK_FALSE(f.on);
  CHECK_FALSE(f.set.help_requested());
  REQUIRE(f.Parse({"-h"}).ok());
  CHECK(f.set.help_requested());
}

TEST_CASE("the environment sets defaults that flags override", "[flags]") {
  setenv("FLAGS_TEST_NAME", "from-env", 1);
  setenv("FLAGS_TEST_COUNT", "5", 1);
  Flags f;
  REQUIRE(f.Parse({"--count=6"}).ok());
  CHECK(f.name == "from-env");
  CHECK(f.count == 6);
  setenv("FLAGS_TEST_COUNT", "many", 1);
  Flags g;
  CHECK(g.Parse({}).message() == "environment variable FLAGS_TEST_COUNT: invalid value \"many\": must be an integer");
  unsetenv("FLAGS_TEST_NAME");
  unsetenv("FLAGS_TEST_COUNT");
}

TEST_CASE("bad flags are errors naming the flag and the rule", "[flags]") {
  Flags f;
  CHECK(f.Parse({"--count=17"}).message() == "flag --count: invalid value \"17\": must be between 0 and 16");
  CHECK(f.Parse({"--count", "x"}).message() == "flag --count: invalid value \"x\": must be an integer");
  CHECK(f.Parse({"--delay=soon"}).message() ==
        "flag --delay: invalid value \"soon\": must be a non-negative duration such as 500ms or 2s");
  CHECK(f.Parse({"--rate=2"}).message() == "flag --rate: invalid value \"2\": must be between 0 and 1");
  CHECK(f.Parse({"--on=maybe"}).message() == "flag --on: invalid value \"maybe\": must be true or false");
  CHECK(f.Parse({"--nope"}).message() == "unknown flag --nope");
  CHECK(f.Parse({"--name"}).message() == "flag --name needs a value");
  CHECK(f.Parse({"stray"}).message() == "unexpected argument stray");
}

TEST_CASE("ParseCommandLine gives main its exit code: none to go on, 0 after --help, 2 after an error", "[flags]") {
  CHECK(Flags().ParseCommandLine({"--count=3"}) == std::nullopt);
  CHECK(Flags().ParseCommandLine({"--help"}) == 0);
  CHECK(Flags().ParseCommandLine({"--count=x"}) == 2);
}

TEST_CASE("the usage lists every flag with its default and variable", "[flags]") {
  Flags f;
  const std::string usage = f.set.Usage();
  CHECK_THAT(usage, Catch::Contains("Usage: prog [flags]"));
  CHECK_THAT(usage, Catch::Contains("--count int\n      a count (default 8, env FLAGS_TEST_COUNT)"));
  CHECK_THAT(usage, Catch::Contains("--on\n      a switch (default false)"));
  CHECK_THAT(usage, Catch::Contains("--delay duration\n      a delay (default 2s)"));
}

}  // namespace
