// The docs against the code: the listing docs/concepts.md shows is what examples/hello prints,
// the op counts the README and docs/ quote are the op table's and the gradient table's, and
// every link of the README, CHANGELOG.md and docs/ resolves to a file (and heading) in the
// repository, and none of them names a path outside it. The quickstart's accuracies are checked apart
// (scripts/readme-numbers.sh --check): they take minutes to train.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "meganeura/autodiff.hpp"
#include "meganeura/graph.hpp"

namespace fs = std::filesystem;
namespace mn = meganeura;

namespace {

const fs::path kRoot = fs::weakly_canonical(MEGANEURA_SOURCE_DIR);

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<fs::path> doc_files() {
  std::vector<fs::path> files = {kRoot / "README.md", kRoot / "CHANGELOG.md"};
  for (const auto& e : fs::directory_iterator(kRoot / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path());
  return files;
}

std::string rel(const fs::path& p) { return fs::relative(p, kRoot).string(); }

// The lines between <!-- name ... --> and <!-- /name -->, fences and blank lines left out.
std::string marked_block(const std::string& doc, const std::string& name) {
  size_t a = doc.find("<!-- " + name), b = doc.find("<!-- /" + name + " -->");
  if (a == std::string::npos || b == std::string::npos || b < a) return {};
  a = doc.find("-->", a) + 3;
  std::istringstream in(doc.substr(a, b - a));
  std::string out, line;
  while (std::getline(in, line))
    if (line.rfind("```", 0) != 0 && !line.empty()) out += line + "\n";
  return out;
}

bool inside_repo(const fs::path& p) {
  std::string c = fs::weakly_canonical(p).string(), r = kRoot.string();
  return c == r || c.rfind(r + "/", 0) == 0;
}

// GitHub's heading anchors: lower case, spaces to '-', other punctuation (and non-ASCII) dropped.
std::set<std::string> anchors(const std::string& doc) {
  std::set<std::string> out;
  std::istringstream in(doc);
  std::string line;
  bool fenced = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    size_t text = line.find_first_not_of('#');
    if (fenced || text == 0 || text == std::string::npos || line[text] != ' ') continue;
    std::string slug;
    for (char c : line.substr(text + 1)) {
      auto u = static_cast<unsigned char>(c);
      if (std::isalnum(u) && u < 128)
        slug += static_cast<char>(std::tolower(u));
      else if (c == ' ' || c == '-' || c == '_')
        slug += c == ' ' ? '-' : c;
    }
    std::string unique = slug;
    for (int n = 1; out.count(unique); ++n) unique = slug + "-" + std::to_string(n);
    out.insert(unique);
  }
  return out;
}

const std::regex kLink(R"(\]\(([^)\s]+)\))");

// Directories every Linux system has (or that the docs' own commands create, as /tmp/smol):
// paths there are not another machine's files.
bool system_path(const std::string& p) {
  for (const char* root : {"/usr/", "/opt/", "/tmp/", "/etc/", "/dev/", "/proc/", "/sys/", "/var/", "/bin/", "/lib/"})
    if (p.rfind(root, 0) == 0) return true;
  return false;
}

// The references of a doc (at `doc_file`) to files outside the repository, each as a message:
// a link that is absolute or climbs out of the repository; in the text, inline code and code
// blocks, a path that is absolute (outside the system's directories, and other than the path of
// an http(s) URL) or climbs out with ../ (from the doc's folder; in a code block, from the
// root, where the docs' commands run); any mention of ../shared or /work/.
std::vector<std::string> outside_references(const fs::path& doc_file, const std::string& doc) {
  std::vector<std::string> problems;
  for (const char* never : {"../shared", "/work/"})
    for (size_t at = doc.find(never); at != std::string::npos; at = doc.find(never, at + 1))
      problems.push_back(std::string("mentions ") + never + " (the build machine's, not the repository's)");

  for (std::sregex_iterator m(doc.begin(), doc.end(), kLink), end; m != end; ++m) {
    const std::string target = (*m)[1];
    if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
    const std::string file = target.substr(0, target.find('#'));
    if (!file.empty() && file[0] == '/')
      problems.push_back("absolute link " + target);
    else if (!file.empty() && !inside_repo(doc_file.parent_path() / file))
      problems.push_back("link " + target + " leaves the repository");
  }

  // The rest: links and URLs out, then each run of path characters in prose or in a code block.
  std::string text = std::regex_replace(doc, kLink, "]");
  text = std::regex_replace(text, std::regex(R"(https?://[^\s)>\]`'"]*)"), " ");
  const std::regex path_token(R"([\w.~+/-]+)");
  std::istringstream in(text);
  std::string line;
  bool fenced = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    for (std::sregex_iterator m(line.begin(), line.end(), path_token), end; m != end; ++m) {
      const std::string token = m->str();
      if (token[0] == '/') {
        const size_t lead = token.find_first_not_of('/');  // "///home/x" (file:///home/x) is /home/x
        const std::string p = lead == std::string::npos ? "/" : token.substr(lead - 1);
        // "/a/b", or "/a.md" unless it ends a string in code (dir + "/config.json"); not "/s"
        // (division) or "/hello-listing" (an HTML comment's end).
        const std::string first =
            p.substr(1, p.find('/', 1) == std::string::npos ? std::string::npos : p.find('/', 1) - 1);
        const bool deeper = p.find('/', 1) != std::string::npos && p.size() > first.size() + 2;
        const bool in_string = m->position() > 0 && (line[m->position() - 1] == '"' || line[m->position() - 1] == '\'');
        const bool file = first.find('.') != std::string::npos && first.find('.') > 0 && !in_string;
        if ((deeper || file) && !system_path(p)) problems.push_back("absolute path " + token);
      } else if (token.find("../") != std::string::npos || token.ends_with("/..")) {
        const fs::path from = fenced ? kRoot : doc_file.parent_path();
        if (!inside_repo(from / token))
          problems.push_back(token + " leaves the repository" + (fenced ? " (run from the root)" : ""));
      }
    }
  }
  return problems;
}

}  // namespace

TEST(Docs, HelloListingIsWhatHelloPrints) {
#ifndef MEGANEURA_HELLO
  GTEST_SKIP() << "examples are not built (MEGANEURA_BUILD_EXAMPLES=OFF)";
#else
  std::string doc = marked_block(read_text(kRoot / "docs/concepts.md"), "hello-listing");
  ASSERT_FALSE(doc.empty()) << "docs/concepts.md has no <!-- hello-listing --> ... <!-- /hello-listing --> block";

  // The listing is the last paragraph of hello's output (after the results and the statistics).
  // The block is lavapipe's listing (workgroup counts may differ elsewhere).
  setenv("MEGANEURA_DEVICE", "llvmpipe", 0);
  std::string out;
  FILE* p = popen("'" MEGANEURA_HELLO "'", "r");
  ASSERT_NE(p, nullptr);
  std::array<char, 4096> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ASSERT_EQ(pclose(p), 0) << out;
  size_t last = out.rfind("\n\n");
  ASSERT_NE(last, std::string::npos) << out;
  EXPECT_EQ(doc, out.substr(last + 2))
      << "update the hello-listing block of docs/concepts.md from: build/examples/hello";
#endif
}

TEST(Docs, OpCountsAreTheTables) {
  // Forward ops: every row but the backward ops autodiff emits (named *_backward, *_weight_grad)
  // and the training ops build_session appends.
  int forward = 0, rules = 0;
  for (int i = 0; i < mn::op_count(); ++i) {
    std::string name(mn::op_name(mn::op_at(i)));
    bool backward =
        name.ends_with("_backward") || name.ends_with("_weight_grad") || mn::op_kind(mn::op_at(i)) == mn::OpKind::Train;
    forward += !backward;
    rules += mn::has_gradient(mn::op_at(i));
  }
  // "62 ops" and "49 of them with a gradient rule" / "49 gradient rules"; CHANGELOG.md is history.
  const std::regex ops(R"((\d+) ops\b)"), grads(R"((\d+) (of them with a gradient rule|gradient rules)\b)");
  int quoted = 0;
  for (const fs::path& f : doc_files()) {
    if (f.filename() == "CHANGELOG.md") continue;
    std::string doc = read_text(f);
    for (std::sregex_iterator m(doc.begin(), doc.end(), ops), end; m != end; ++m, ++quoted)
      EXPECT_EQ(std::stoi((*m)[1]), forward)
          << rel(f) << ": \"" << m->str() << "\"; the op table has " << forward << " ops";
    for (std::sregex_iterator m(doc.begin(), doc.end(), grads), end; m != end; ++m, ++quoted)
      EXPECT_EQ(std::stoi((*m)[1]), rules)
          << rel(f) << ": \"" << m->str() << "\"; the gradient table has " << rules << " rules";
  }
  EXPECT_GE(quoted, 2) << "the README quotes the op count and the gradient-rule count";
}

// Every link resolves to a file (and heading) of the repository.
TEST(Docs, LinksResolveInTheRepository) {
  for (const fs::path& f : doc_files()) {
    std::string doc = read_text(f);
    for (std::sregex_iterator m(doc.begin(), doc.end(), kLink), end; m != end; ++m) {
      std::string target = (*m)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      std::string file = target.substr(0, target.find('#'));
      std::string anchor = target.find('#') == std::string::npos ? "" : target.substr(target.find('#') + 1);
      fs::path p = file.empty() ? f : f.parent_path() / file;
      if ((!file.empty() && file[0] == '/') || !inside_repo(p)) continue;  // OutsideReferences* report these
      EXPECT_TRUE(fs::exists(p)) << rel(f) << ": " << target << " does not exist";
      if (!anchor.empty() && p.extension() == ".md" && fs::exists(p)) {
        EXPECT_TRUE(anchors(read_text(p)).count(anchor)) << rel(f) << ": " << target << " names no heading";
      }
    }
  }
}

// No doc points at files a user of the repository does not have.
TEST(Docs, NoDocPointsOutsideTheRepository) {
  for (const fs::path& f : doc_files())
    for (const std::string& problem : outside_references(f, read_text(f))) ADD_FAILURE() << rel(f) << ": " << problem;
}

// The check itself, on a made-up docs/x.md.
TEST(Docs, OutsideReferencesAreFound) {
  const fs::path doc = kRoot / "docs" / "x.md";
  auto found = [&](const std::string& text) { return outside_references(doc, text); };
  // Each of these is found (a path under /work/ also as a mention of it).
  for (const std::string text :
       {"see [notes](/home/me/notes.md)", "see [notes](../../notes.md)", "see [notes](../../notes.md#a)",
        "run `/home/me/bin/tool`", "in `/work/main/src`", "the file /root/x.md", "`../../other/repo`", "in ../shared",
        "`cat ../shared`", "```sh\nls ../x\n```", "```sh\ncp /mnt/data/a b\n```", "the machine's /work/ folder",
        "`/README.md`", "[guide](/docs/api.md)", "file:///home/me/x.txt"}) {
    EXPECT_FALSE(found(text).empty()) << "'" << text << "' is not found";
    EXPECT_LE(found(text).size(), 2u) << "'" << text << "' gives " << ::testing::PrintToString(found(text));
  }
  // None of these is one: inside the repository, the system's paths, URLs, division, HTML comments.
  for (const std::string text :
       {"[README](../README.md)", "`../src/graph`", "[api](api.md#tensor)", "see https://example.com/home/me/x.md",
        "[link](https://github.com/a/b/blob/main/x.md)", "`/usr/share/datasets/fashion-mnist`",
        "`--prefix /opt/meganeura`", "`/tmp/smol`", "```sh\nls docs/images\ncmake -S . -B build\n```",
        "`q/s`, `/s`, 1/√d", "<!-- /hello-listing -->", "`load(dir + \"/config.json\")`", "~/.cache/huggingface/hub",
        "read/write and/or", "`../`", "`/`"}) {
    EXPECT_TRUE(found(text).empty()) << "'" << text << "' gives " << ::testing::PrintToString(found(text));
  }
}
