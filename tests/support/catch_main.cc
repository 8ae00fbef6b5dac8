#define CATCH_CONFIG_MAIN
// Catch 2's console reporter indents a failed test's name after its first
// ": ", and loops forever when that indent reaches the console width (79 by
// default): a test named "a long description: ..." would hang on failure
// instead of failing. Names here put ": " up to about 100 characters in.
#define CATCH_CONFIG_CONSOLE_WIDTH 160
#include <catch2/catch.hpp>
