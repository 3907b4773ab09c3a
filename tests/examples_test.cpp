// The examples as a new user runs them (scripts/run.sh passes its arguments to
// examples/fashion_mnist): bad epoch counts exit 2 with a usage message naming the argument, a
// missing data set exits 1 with its message, never a crash or an abort. No line here trains:
// each one stops at the arguments or at loading the data set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "file_fixtures.hpp"

namespace mntest {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Line = std::vector<std::string>;

ChildOptions fashion_options(const TempDir& dir, const std::string& data_dir) {
  ChildOptions o;
  o.program = MEGANEURA_FASHION_MNIST_EXAMPLE;
  o.cwd = dir.path().string();  // out/ would go here; no line gets that far
  o.env = environment_without({"MEGANEURA_FASHION_MNIST", "MEGANEURA_VALIDATION", "MEGANEURA_TRACE"},
                              {"MEGANEURA_FASHION_MNIST=" + data_dir});
  return o;
}

TEST(FashionMnistExample, BadEpochCountsExitTwoNamingTheArgument) {
  TempDir dir;
  // An empty data set directory: a line that got past its arguments would fail there (exit 1).
  const std::vector<std::string> bad = {"0",  "abc", "99999999999", "-1",  "1001", "",   "3x",
                                        " 3", "3 ",  "+3",          "1e3", "0x3",  "1.5"};
  std::vector<Line> lines;
  for (const std::string& v : bad) lines.push_back({v});
  const std::vector<ChildResult> results = run_children(lines, fashion_options(dir, dir.path().string()));
  for (size_t i = 0; i < results.size(); ++i) {
    const ChildResult& r = results[i];
    EXPECT_EQ(r.signal, 0) << r.describe();
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_THAT(r.err, AllOf(HasSubstr("fashion_mnist: epochs: '" + bad[i] + "' is not a whole number from 1 to 1000"),
                             HasSubstr("usage: fashion_mnist [epochs]")))
        << r.describe();
    EXPECT_THAT(r.out, Not(HasSubstr("test accuracy"))) << r.describe();
  }
}

TEST(FashionMnistExample, ExtraArgumentsAndHelp) {
  TempDir dir;
  const std::vector<ChildResult> r =
      run_children({{"3", "4"}, {"--help"}, {"-h"}}, fashion_options(dir, dir.path().string()));
  EXPECT_EQ(r[0].exit_code, 2) << r[0].describe();
  EXPECT_THAT(r[0].err, AllOf(HasSubstr("one argument at most"), HasSubstr("usage: fashion_mnist"))) << r[0].describe();
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_EQ(r[i].exit_code, 0) << r[i].describe();
    EXPECT_THAT(r[i].out, HasSubstr("usage: fashion_mnist [epochs]")) << r[i].describe();
  }
}

// A valid count reaches the data set: a missing one is the library's message and exit 1, not
// "terminate called" (exit 134).
TEST(FashionMnistExample, MissingDataSetExitsOneWithItsMessage) {
  TempDir dir;
  const std::string data = dir / "no-data-here";
  const std::vector<ChildResult> results = run_children({{}, {"1"}, {"1000"}}, fashion_options(dir, data));
  for (const ChildResult& r : results) {
    EXPECT_EQ(r.signal, 0) << r.describe();
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_THAT(r.err, AllOf(HasSubstr("meganeura: cannot open " + data + "/"), Not(HasSubstr("terminate called"))))
        << r.describe();
  }
}

}  // namespace
}  // namespace mntest
