// The docs against the code: the listing docs/concepts.md shows is what examples/hello prints,
// the op counts the README and docs/ quote are the op table's and the gradient table's, and
// every link of the README, CHANGELOG.md and docs/ resolves to a file (and heading) in the
// repository. The quickstart's accuracies are checked apart (scripts/readme-numbers.sh --check):
// they take minutes to train.
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
      if (std::isalnum(u) && u < 128) slug += static_cast<char>(std::tolower(u));
      else if (c == ' ' || c == '-' || c == '_') slug += c == ' ' ? '-' : c;
    }
    std::string unique = slug;
    for (int n = 1; out.count(unique); ++n) unique = slug + "-" + std::to_string(n);
    out.insert(unique);
  }
  return out;
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
  EXPECT_EQ(doc, out.substr(last + 2)) << "update the hello-listing block of docs/concepts.md from: build/examples/hello";
#endif
}

TEST(Docs, OpCountsAreTheTables) {
  // Forward ops: every row but the backward ops autodiff emits (named *_backward, *_weight_grad).
  int forward = 0, rules = 0;
  for (int i = 0; i < mn::op_count(); ++i) {
    std::string name(mn::op_name(mn::op_at(i)));
    bool backward = name.ends_with("_backward") || name.ends_with("_weight_grad");
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
      EXPECT_EQ(std::stoi((*m)[1]), forward) << rel(f) << ": \"" << m->str() << "\"; the op table has " << forward << " ops";
    for (std::sregex_iterator m(doc.begin(), doc.end(), grads), end; m != end; ++m, ++quoted)
      EXPECT_EQ(std::stoi((*m)[1]), rules) << rel(f) << ": \"" << m->str() << "\"; the gradient table has " << rules << " rules";
  }
  EXPECT_GE(quoted, 2) << "the README quotes the op count and the gradient-rule count";
}

TEST(Docs, LinksStayInTheRepository) {
  const std::regex link(R"(\]\(([^)\s]+)\))");
  const std::regex dotdot(R"((?:\.\./)+[\w.-][\w./-]*)");  // a bare ../path, run from the root
  const std::regex absolute_doc(R"((?:^|[\s`(])(/[\w./-]+\.md)\b)");  // another machine's docs
  for (const fs::path& f : doc_files()) {
    std::string doc = read_text(f);
    for (std::sregex_iterator m(doc.begin(), doc.end(), link), end; m != end; ++m) {
      std::string target = (*m)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      std::string file = target.substr(0, target.find('#'));
      std::string anchor = target.find('#') == std::string::npos ? "" : target.substr(target.find('#') + 1);
      fs::path p = file.empty() ? f : f.parent_path() / file;
      if (!file.empty() && file[0] == '/') {
        ADD_FAILURE() << rel(f) << ": absolute link " << target;
        continue;
      }
      EXPECT_TRUE(inside_repo(p)) << rel(f) << ": " << target << " leaves the repository";
      if (!inside_repo(p)) continue;
      EXPECT_TRUE(fs::exists(p)) << rel(f) << ": " << target << " does not exist";
      if (!anchor.empty() && p.extension() == ".md" && fs::exists(p)) {
        EXPECT_TRUE(anchors(read_text(p)).count(anchor)) << rel(f) << ": " << target << " names no heading";
      }
    }
    std::string text = std::regex_replace(doc, link, "]");
    for (std::sregex_iterator m(text.begin(), text.end(), dotdot), end; m != end; ++m)
      EXPECT_TRUE(inside_repo(kRoot / m->str())) << rel(f) << ": " << m->str() << " is outside the repository";
    for (std::sregex_iterator m(text.begin(), text.end(), absolute_doc), end; m != end; ++m)
      ADD_FAILURE() << rel(f) << ": " << (*m)[1] << " is outside the repository";
  }
}
