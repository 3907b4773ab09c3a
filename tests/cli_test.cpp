// The `meganeura` command line tool as a new user meets it: the built binary, run as child
// processes, fed bad values for every flag of every command, --help everywhere, local paths
// that do not exist, and a few thousand random command lines. No line may kill it by a signal
// (an uncaught exception aborts); every mistake exits 2 naming the command, the flag and the
// value. Nothing reaches the network (HF_HUB_OFFLINE=1, an empty cache) or runs a model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "fake_hub.hpp"
#include "file_fixtures.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Line = std::vector<std::string>;

const std::vector<std::string> kCommands = {"info", "optimize", "download", "generate"};

enum class Kind { whole, real, text, text_may_be_empty };
struct ValuedFlag {
  std::string command, flag;
  Kind kind;
};

// Every flag that takes a value, of every command (tools/meganeura.cpp, tools/generate.cpp).
const std::vector<ValuedFlag> kValuedFlags = {
    {"optimize", "--layers", Kind::whole},     {"optimize", "--seq", Kind::whole},
    {"optimize", "--max-seconds", Kind::real}, {"download", "--revision", Kind::text},
    {"generate", "--model", Kind::text},       {"generate", "--prompt", Kind::text_may_be_empty},
    {"generate", "--revision", Kind::text},    {"generate", "--max-tokens", Kind::whole},
    {"generate", "--temperature", Kind::real}, {"generate", "--top-k", Kind::whole},
    {"generate", "--top-p", Kind::real},       {"generate", "--seed", Kind::whole},
    {"generate", "--max-seq", Kind::whole},
};
const std::vector<std::pair<std::string, std::string>> kSwitches = {{"optimize", "--train"},
                                                                    {"optimize", "--rule-times"}};

// Values each kind must refuse; every whole or real flag here has a lower bound of 0 or more.
std::vector<std::string> bad_values(Kind kind) {
  switch (kind) {
    case Kind::whole:
      return {"abc", "99999999999999999999", "-99999999999999999999", "-5", "", "1.5", "12abc", "0x10", " 7", "1e3"};
    case Kind::real: return {"abc", "1e999", "-1", "", "nan", "inf", "-inf", "0.5x", "1,5"};
    case Kind::text: return {""};
    case Kind::text_may_be_empty: return {};
  }
  return {};
}

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    for (const char* sub : {"hub", "hf_home", "home", "work"}) std::filesystem::create_directories(*dir_ / sub);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // The options every run uses: offline, an empty cache, a home and a working directory of
  // the test's own, no validation layer (nothing here tests Vulkan).
  static ChildOptions options() {
    ChildOptions o;
    o.program = MEGANEURA_CLI;
    o.cwd = *dir_ / "work";
    o.env = environment_without({"HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_HOME", "HF_TOKEN", "HF_ENDPOINT", "HOME",
                                 "MEGANEURA_VALIDATION", "MEGANEURA_TRACE"},
                                {"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + *dir_ / "hub", "HF_HOME=" + *dir_ / "hf_home",
                                 "HOME=" + *dir_ / "home", "HF_ENDPOINT=http://127.0.0.1:9"});
    return o;
  }
  static std::vector<ChildResult> run_all(const std::vector<Line>& lines) { return run_children(lines, options()); }
  static ChildResult run(const Line& line) { return run_all({line})[0]; }

  static TempDir* dir_;
};
TempDir* Cli::dir_ = nullptr;

// The common shape of a refused command line: exit 2, by no signal, the command named first.
void expect_usage_error(const ChildResult& r, const std::string& command) {
  EXPECT_EQ(r.signal, 0) << r.describe();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_THAT(r.err, StartsWith("meganeura " + command + ": ")) << r.describe();
}

TEST_F(Cli, EveryBadValueOfEveryFlagIsNamed) {
  std::vector<Line> lines;
  std::vector<std::pair<ValuedFlag, std::string>> cases;
  for (const ValuedFlag& f : kValuedFlags)
    for (const std::string& v : bad_values(f.kind)) {
      lines.push_back({f.command, f.flag, v});
      lines.push_back({f.command, f.flag + "=" + v});
      cases.emplace_back(f, v);
      cases.emplace_back(f, v);
    }
  const std::vector<ChildResult> results = run_all(lines);
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& [f, v] = cases[i];
    expect_usage_error(results[i], f.command);
    EXPECT_THAT(results[i].err, HasSubstr(f.flag + ": '" + v + "'")) << results[i].describe();
    EXPECT_THAT(results[i].err, HasSubstr("expected")) << results[i].describe();
  }
}

TEST_F(Cli, MissingValuesAreNamed) {
  std::vector<Line> lines;
  for (const ValuedFlag& f : kValuedFlags) {
    lines.push_back({f.command, f.flag});                      // at the end of the line
    lines.push_back({f.command, f.flag, "--another-option"});  // the value forgotten
  }
  const std::vector<ChildResult> results = run_all(lines);
  for (size_t i = 0; i < results.size(); ++i) {
    const ValuedFlag& f = kValuedFlags[i / 2];
    expect_usage_error(results[i], f.command);
    EXPECT_THAT(results[i].err, HasSubstr(f.flag + " needs a value")) << results[i].describe();
  }
}

TEST_F(Cli, SwitchesTakeNoValue) {
  for (const auto& [command, flag] : kSwitches) {
    const ChildResult r = run({command, flag + "=yes"});
    expect_usage_error(r, command);
    EXPECT_THAT(r.err, HasSubstr(flag + " takes no value")) << r.describe();
  }
}

TEST_F(Cli, UnknownOptionsNameTheOptionAndTheCommand) {
  for (const std::string& command : kCommands)
    for (const std::string option : {"--no-such-option", "-x", "--no-such-option=3"}) {
      const ChildResult r = run({command, option});
      expect_usage_error(r, command);
      EXPECT_THAT(r.err, HasSubstr("unknown option '" + option.substr(0, option.find('=')) + "'")) << r.describe();
      EXPECT_THAT(r.err, HasSubstr("meganeura " + command + " --help")) << r.describe();
    }
}

TEST_F(Cli, ValuesAtTheEdgesOfTheirRangesAreAccepted) {
  // Every value parses; what stops the run is the model directory, which does not exist.
  const ChildResult r = run({"generate", "--max-tokens", "1000000", "--temperature=100", "--top-k", "0", "--top-p", "0",
                             "--seed", "18446744073709551615", "--max-seq", "+1", "--prompt", "", "--model", "./nope"});
  expect_usage_error(r, "generate");
  EXPECT_THAT(r.err, HasSubstr("no such directory: ./nope")) << r.describe();
  // A small valid optimizer run: one layer, a short time limit.
  const ChildResult o = run({"optimize", "--layers", "1", "--seq=8", "--max-seconds", "0.01"});
  EXPECT_EQ(o.exit_code, 0) << o.describe();
  EXPECT_THAT(o.out, HasSubstr("model: 1 layers")) << o.describe();
}

TEST_F(Cli, HelpOnEveryCommand) {
  std::vector<Line> lines;
  for (const std::string& c : kCommands)
    for (const Line& l : std::vector<Line>{{c, "--help"}, {c, "-h"}, {"help", c}, {c, "--seed", "x", "--help"}})
      lines.push_back(l);
  const std::vector<ChildResult> results = run_all(lines);
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string& command = kCommands[i / 4];
    EXPECT_EQ(results[i].exit_code, 0) << results[i].describe();
    EXPECT_THAT(results[i].out, StartsWith("usage: meganeura " + command)) << results[i].describe();
    for (const ValuedFlag& f : kValuedFlags)  // the help lists every flag the command reads
      if (f.command == command) {
        EXPECT_THAT(results[i].out, HasSubstr(f.flag)) << results[i].describe();
      }
  }
}

// The range a flag's error states is the one its --help states, so the two cannot drift apart.
TEST_F(Cli, HelpStatesTheRangeEachFlagChecks) {
  for (const ValuedFlag& f : kValuedFlags) {
    if (f.kind != Kind::whole && f.kind != Kind::real) continue;
    const ChildResult bad = run({f.command, f.flag, "abc"});
    const size_t from = bad.err.find(" from ");
    const size_t end = bad.err.find(')', from);
    ASSERT_NE(from, std::string::npos) << bad.describe();
    ASSERT_NE(end, std::string::npos) << bad.describe();
    const std::string range = bad.err.substr(from + 6, end - from - 6);  // "1 to 1000000"
    const ChildResult help = run({f.command, "--help"});
    const size_t line = help.out.find("  " + f.flag + " ");
    ASSERT_NE(line, std::string::npos) << f.flag << " is not in " << help.out;
    EXPECT_THAT(help.out.substr(line, help.out.find('\n', line) - line), HasSubstr(range)) << f.flag;
  }
}

TEST_F(Cli, GeneralHelpAndUnknownCommands) {
  for (const Line& l : std::vector<Line>{{"help"}, {"--help"}, {"-h"}}) {
    const ChildResult r = run(l);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    for (const std::string& c : kCommands) EXPECT_THAT(r.out, HasSubstr("  " + c + " ")) << r.describe();
  }
  EXPECT_EQ(run(Line{}).exit_code, 2);
  const ChildResult unknown = run({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.describe();
  EXPECT_THAT(unknown.err, HasSubstr("unknown command 'frobnicate'"));
  const ChildResult help_unknown = run({"help", "frobnicate"});
  EXPECT_EQ(help_unknown.exit_code, 2) << help_unknown.describe();
  EXPECT_THAT(help_unknown.err, HasSubstr("unknown command 'frobnicate'"));
  const ChildResult info_args = run({"info", "extra"});
  expect_usage_error(info_args, "info");
  EXPECT_THAT(info_args.err, HasSubstr("'extra'"));
}

// A path that cannot be a Hub repository id is reported as a missing directory.
TEST_F(Cli, MissingLocalModelDirectoryIsNamedAsSuch) {
  const std::string home = *dir_ / "home";
  const std::vector<std::pair<std::string, std::string>> cases = {{"./does/not/exist", "./does/not/exist"},
                                                                  {"/does/not/exist", "/does/not/exist"},
                                                                  {"models/org/name", "models/org/name"},
                                                                  {"~/models/x", home + "/models/x"},
                                                                  {"../x", "../x"}};
  for (const auto& [model, shown] : cases) {
    const ChildResult r = run({"generate", "--model", model});
    expect_usage_error(r, "generate");
    EXPECT_THAT(r.err, AllOf(HasSubstr("no such directory: " + shown), Not(HasSubstr("repository id"))))
        << r.describe();
  }
}

TEST_F(Cli, ModelDirectoryWithoutItsFilesSaysWhichAndWhy) {
  const std::string model = *dir_ / "model";
  std::filesystem::create_directories(model);
  ChildResult r = run({"generate", "--model", model});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_THAT(r.err, AllOf(HasSubstr(model), HasSubstr("has no config.json"), HasSubstr("architecture")))
      << r.describe();
  write_bytes(model + "/config.json", "{}");
  r = run({"generate", "--model", model});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_THAT(r.err, AllOf(HasSubstr(model), HasSubstr("has no tokenizer.json"), HasSubstr("prompt"))) << r.describe();
  const ChildResult file = run({"generate", "--model", model + "/config.json"});
  expect_usage_error(file, "generate");
  EXPECT_THAT(file.err, HasSubstr("is a file, not a model directory")) << file.describe();
}

TEST_F(Cli, OfflineHubFailuresExitOne) {
  for (const Line& l :
       std::vector<Line>{{"generate", "--model", "org/name"}, {"download", "org/name", "config.json"}}) {
    const ChildResult r = run(l);
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("offline")) << r.describe();
  }
}

// "models/x" (one slash) may be a Hub repository or a mistyped directory: when the Hub cannot
// give it, the one error says there is no such local directory either (or that it is a file).
TEST_F(Cli, HubFailureOfAModelThatCouldBeADirectorySaysThereIsNone) {
  const std::string work = *dir_ / "work";
  for (const std::string model : {"models/x", "name", "models/my model"}) {
    const ChildResult r = run({"generate", "--model", model});
    EXPECT_EQ(r.signal, 0) << r.describe();
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_THAT(r.err, AllOf(StartsWith("meganeura: hub: "), HasSubstr("and there is no local directory " + model +
                                                                       " either (no " + work + "/" + model + ")")))
        << r.describe();
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message: " << r.describe();
    if (model != "models/my model") {
      EXPECT_THAT(r.err, HasSubstr("offline")) << r.describe();
    } else {
      EXPECT_THAT(r.err, HasSubstr("is not a repository id")) << r.describe();
    }
  }
  // A file of that name is said to be one.
  std::filesystem::create_directories(work + "/notes");
  write_bytes(work + "/notes/model", "not a model");
  const ChildResult file = run({"generate", "--model", "notes/model"});
  std::filesystem::remove_all(work + "/notes");
  EXPECT_EQ(file.exit_code, 1) << file.describe();
  EXPECT_THAT(file.err,
              AllOf(HasSubstr("offline"), HasSubstr("; and " + work + "/notes/model is a file, not a model directory")))
      << file.describe();
}

// The same through a Hub that answers (FakeHub): a repository it does not have (404) or will not
// show (401, as the Hub answers for a missing one without a token) gets the note; a missing
// file of a repository it has does not (the user meant the Hub).
TEST_F(Cli, HubAnswersForAModelThatCouldBeADirectory) {
  FakeHub hub;
  hub.put("org/gated", "config.json", "{}");
  hub.require_token("org/gated", "hf_secret");
  hub.put("org/real", "config.json", "{}");
  ChildOptions o = options();
  std::erase_if(o.env,
                [](const std::string& v) { return v.starts_with("HF_HUB_OFFLINE=") || v.starts_with("HF_ENDPOINT="); });
  o.env.push_back("HF_ENDPOINT=" + hub.endpoint());
  const std::vector<ChildResult> r = run_children(
      {{"generate", "--model", "models/x"}, {"generate", "--model", "org/gated"}, {"generate", "--model", "org/real"}},
      o);
  for (const ChildResult& c : r) {
    EXPECT_EQ(c.signal, 0) << c.describe();
    EXPECT_EQ(c.exit_code, 1) << c.describe();
  }
  EXPECT_THAT(r[0].err, AllOf(HasSubstr("repository models/x not found"),
                              HasSubstr("; and there is no local directory models/x either")))
      << r[0].describe();
  EXPECT_THAT(r[1].err, AllOf(HasSubstr("HF_TOKEN"), HasSubstr("; and there is no local directory org/gated either")))
      << r[1].describe();
  EXPECT_THAT(r[2].err, AllOf(HasSubstr("org/real"), Not(HasSubstr("local directory")))) << r[2].describe();
}

// Random picks of commands, flags and junk. Lines that would run the optimizer in full end in
// an unknown option, so every line fails (or prints help) within milliseconds.
Line random_line(Rng& rng) {
  static const std::vector<std::string> commands = {"info",     "optimize", "download",   "generate", "generate",
                                                    "optimize", "help",     "frobnicate", "--help",   ""};
  static const std::vector<std::string> junk = {"abc",
                                                "",
                                                "-1",
                                                "0",
                                                "1",
                                                "99999999999999999999",
                                                "-99999999999999999999",
                                                "18446744073709551616",
                                                "9223372036854775808",
                                                "-9223372036854775809",
                                                "1e999",
                                                "1e-400",
                                                "nan",
                                                "inf",
                                                "-inf",
                                                "0x10",
                                                "1.5",
                                                " 3",
                                                "3 ",
                                                "+",
                                                "-",
                                                "--",
                                                "=",
                                                "==",
                                                "--=",
                                                "\xff\xfe",
                                                std::string(5000, 'a'),
                                                "./x",
                                                "/",
                                                ".",
                                                "~",
                                                "~/x",
                                                "a/b/c",
                                                "org/name",
                                                "%s%n",
                                                "\\",
                                                "org/na me",
                                                "-h",
                                                "../nope"};
  std::vector<std::string> flags = {"--no-such-option", "-x"};
  for (const ValuedFlag& f : kValuedFlags) flags.push_back(f.flag);
  for (const auto& s : kSwitches) flags.push_back(s.second);
  auto pick = [&](const std::vector<std::string>& from) {
    return from[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(from.size()) - 1))];
  };
  auto random_text = [&] {
    std::string s(static_cast<size_t>(rng.integer(0, 12)), ' ');
    for (char& c : s) c = static_cast<char>(rng.integer(1, 255));
    return s;
  };

  Line line;
  if (const std::string c = pick(commands); !c.empty()) line.push_back(c);
  for (int64_t n = rng.integer(0, 6); n > 0; --n) {
    const int64_t r = rng.integer(0, 9);
    if (r < 4)
      line.push_back(pick(flags));
    else if (r < 7)
      line.push_back(pick(junk));
    else if (r < 8)
      line.push_back(pick(flags) + "=" + pick(junk));
    else
      line.push_back(random_text());
  }
  if (!line.empty() && line[0] == "optimize") line.push_back("--fuzz-end");
  return line;
}

// A fixed number of lines from a seed (MEGANEURA_TEST_SEED repeats a run), each allowed a
// minute: on a loaded 2-core machine the lot takes about 15 s (3000 lines ran in 21 s).
TEST_F(Cli, RandomCommandLinesNeverCrash) {
  constexpr int kLines = 2000;
  Rng rng;
  std::vector<Line> lines;
  for (int i = 0; i < kLines; ++i) lines.push_back(random_line(rng));
  ChildOptions o = options();
  o.per_child = std::chrono::seconds(60);  // a slow line fails as a timeout, not by a clock of the whole
  const std::vector<ChildResult> results = run_children(lines, o);
  int ran = 0, failures = 0, exits[3] = {0, 0, 0};
  for (const ChildResult& r : results) {
    ran += r.started;
    if (r.exit_code >= 0 && r.exit_code <= 2) ++exits[r.exit_code];
    const bool said_why = r.exit_code == 0 || r.err.find("meganeura") != std::string::npos;
    const bool ok = !r.timed_out && r.signal == 0 && r.exit_code >= 0 && r.exit_code <= 2 && said_why &&
                    r.err.find("terminate called") == std::string::npos;
    if (!ok && ++failures <= 10) ADD_FAILURE() << seed_note(rng.seed()) << ": " << r.describe();
  }
  RecordProperty("lines", ran);
  EXPECT_EQ(failures, 0) << seed_note(rng.seed());
  EXPECT_EQ(ran, kLines) << seed_note(rng.seed());
  std::printf("%d random command lines (exit 0: %d, 1: %d, 2: %d), %s\n", ran, exits[0], exits[1], exits[2],
              seed_note(rng.seed()).c_str());
}

}  // namespace
}  // namespace mntest
