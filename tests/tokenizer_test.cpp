// The tokenizer against the Hugging Face `tokenizers` library: every fixture string encodes to
// the library's ids (with and without special tokens) and decodes to the library's text; random
// id sequences decode as the library decodes them; the pre-tokenizers alone split as the library's
// do; and the regex classes agree with the library's Oniguruma on every code point.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "tokenizer/model.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/utf8.hpp"
#include "tokenizer_fixtures.hpp"

namespace mntest {
namespace {

using meganeura::Tokenizer;
using nlohmann::json;

std::string show_ids(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + std::to_string(ids[i]) + " " + escaped(tok.id_to_token(ids[i]).value_or("?"));
  return out + "]";
}

std::vector<int32_t> concat(const json& a, const std::vector<int32_t>& b, const json& c) {
  std::vector<int32_t> out = a.get<std::vector<int32_t>>();
  out.insert(out.end(), b.begin(), b.end());
  for (int32_t id : c.get<std::vector<int32_t>>()) out.push_back(id);
  return out;
}

std::string text_or(const json& map, size_t index, const std::string& fallback) {
  auto it = map.find(std::to_string(index));
  return it == map.end() ? fallback : it->get<std::string>();
}

// Counts of agreement for one tokenizer, printed and checked together so one run shows them all.
struct Tally {
  int strings = 0, ids = 0, ids_with_special = 0, decoded = 0, decoded_skipping = 0, decoded_with_special = 0,
      checked_with_special = 0;
};

void check_tokenizer(const std::string& name) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  const json& t = v.of(name);
  Tokenizer tok = v.load(name);
  EXPECT_EQ(tok.vocab_size(), t.at("vocab_size").get<int64_t>());
  const json& special = t.at("with_special");
  Tally tally;
  int failures = 0;
  auto report = [&](size_t i, const std::string& what) {
    if (++failures <= 12) ADD_FAILURE() << name << " string " << i << " " << escaped(v.strings[i]) << ": " << what;
  };
  const auto& indices = t.at("indices");
  for (size_t k = 0; k < indices.size(); ++k) {
    size_t i = indices[k].get<size_t>();
    const std::string& s = v.strings[i];
    auto expected = t.at("ids")[k].get<std::vector<int32_t>>();
    ++tally.strings;

    std::vector<int32_t> ids = tok.encode(s, false);
    if (ids == expected)
      ++tally.ids;
    else
      report(i, "ids " + show_ids(tok, ids) + "\n  tokenizers: " + show_ids(tok, expected));

    auto exception = special.at("exceptions").find(std::to_string(i));
    auto expected_special = exception != special.at("exceptions").end()
                                ? exception->get<std::vector<int32_t>>()
                                : concat(special.at("prefix"), expected, special.at("suffix"));
    std::vector<int32_t> with_special = tok.encode(s, true);
    if (with_special == expected_special)
      ++tally.ids_with_special;
    else
      report(i, "ids with special tokens " + show_ids(tok, with_special) +
                    "\n  tokenizers: " + show_ids(tok, expected_special));

    std::string decoded = tok.decode(expected), expected_text = text_or(t.at("decoded"), i, s);
    if (decoded == expected_text)
      ++tally.decoded;
    else
      report(i, "decodes to " + escaped(decoded) + ", tokenizers: " + escaped(expected_text));

    std::string skipped = tok.decode(expected, true),
                expected_skipped = text_or(t.at("decoded_skip_special"), i, expected_text);
    if (skipped == expected_skipped)
      ++tally.decoded_skipping;
    else
      report(i,
             "decodes (skipping special tokens) to " + escaped(skipped) + ", tokenizers: " + escaped(expected_skipped));

    auto with = t.at("decoded_with_special").find(std::to_string(i));
    if (with != t.at("decoded_with_special").end()) {
      ++tally.checked_with_special;
      std::string d = tok.decode(expected_special);
      if (d == with->get<std::string>())
        ++tally.decoded_with_special;
      else
        report(i, "ids with special tokens decode to " + escaped(d) +
                      ", tokenizers: " + escaped(with->get<std::string>()));
    }
  }
  std::printf(
      "%s (tokenizers %s): %d strings; equal ids %d, ids with special tokens %d, decoded text %d, "
      "decoded skipping special tokens %d, decoded with special tokens %d of %d\n",
      name.c_str(), v.vectors.at("tokenizers_version").get<std::string>().c_str(), tally.strings, tally.ids,
      tally.ids_with_special, tally.decoded, tally.decoded_skipping, tally.decoded_with_special,
      tally.checked_with_special);
  EXPECT_EQ(failures, 0) << "mismatches (the first 12 are shown above)";
  EXPECT_GT(tally.strings, 500);
}

TEST(TokenizerVectors, SmolLM2LikeMatchesTokenizers) { check_tokenizer("smollm2_like"); }
TEST(TokenizerVectors, Llama3LikeMatchesTokenizers) { check_tokenizer("llama3_like"); }
TEST(TokenizerVectors, AddedTokenFlagsMatchTokenizers) { check_tokenizer("added_flags"); }

// Random id sequences, many not valid UTF-8: the library's lossy decoding, U+FFFD for each
// maximal invalid subsequence.
TEST(TokenizerVectors, RandomIdSequencesDecodeLikeTokenizers) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  int checked = 0;
  for (const char* name : {"smollm2_like", "llama3_like", "added_flags"}) {
    Tokenizer tok = v.load(name);
    for (const json& c : v.of(name).at("random_decodes")) {
      auto ids = c.at("ids").get<std::vector<int32_t>>();
      EXPECT_EQ(tok.decode(ids), c.at("text").get<std::string>()) << name << " " << c.at("ids").dump();
      EXPECT_EQ(tok.decode(ids, true), c.at("skip_special").get<std::string>()) << name << " " << c.at("ids").dump();
      ++checked;
    }
  }
  std::printf("random id sequences decoded: %d\n", checked);
  EXPECT_GE(checked, 900);
}

// The pre-tokenizers alone: each split behaviour, invert, string patterns, empty matches, Digits
// runs, ByteLevel's prefix space on every piece.
TEST(TokenizerVectors, PreTokenizersSplitLikeTokenizers) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  const std::string file = "vectors.json.gz";
  int checked = 0;
  for (const json& c : v.vectors.at("pre_tokenizers")) {
    meganeura::tokenizer::JsonNode node(c.at("pre_tokenizer"), "pre_tokenizer", file);
    meganeura::tokenizer::PreTokenizer pre = meganeura::tokenizer::load_pre_tokenizer(node);
    const auto& indices = c.at("indices");
    for (size_t k = 0; k < indices.size(); ++k) {
      const std::string& s = v.strings[indices[k].get<size_t>()];
      EXPECT_EQ(pre.split(s), c.at("pieces")[k].get<std::vector<std::string>>())
          << c.at("pre_tokenizer").dump() << " on " << escaped(s);
      ++checked;
    }
  }
  std::printf("pre-tokenizer cases: %d\n", checked);
}

// Every code point that Unicode 14 (Debian 12's PCRE2) assigns falls in the same classes as in
// the library's Oniguruma: \p{L}, \p{N}, \s, \w, \d, a case-insensitive class, and what Digits
// calls numeric. Code points assigned later are unknown to PCRE2 and are counted, not compared.
TEST(TokenizerVectors, RegexClassesAgreeWithOnigurumaOnEveryCodePoint) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  using meganeura::tokenizer::Regex;
  const json& classes = v.vectors.at("unicode_classes");
  const std::map<std::string, std::string> patterns = {
      {"L", R"(\p{L})"},      {"N", R"(\p{N})"}, {"s", R"(\s)"},
      {"w", R"(\w)"},         {"d", R"(\d)"},    {"caseless_strevmld", R"((?i:[strevmld]))"},
      {"numeric", R"(\p{N})"}};
  Regex unassigned = Regex::compile(R"(\p{Cn})", "test");
  int compared = 0, newer = 0;
  for (const auto& [name, pattern] : patterns) {
    Regex re = Regex::compile(pattern, "test");
    std::vector<bool> member(0x110000, false);
    for (const json& r : classes.at(name))
      for (uint32_t c = r[0].get<uint32_t>(); c <= r[1].get<uint32_t>(); ++c) member[c] = true;
    int mismatches = 0;
    for (const json& span : classes.at("span")) {
      for (uint32_t c = span[0].get<uint32_t>(); c <= span[1].get<uint32_t>(); ++c) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        std::string ch;
        meganeura::tokenizer::append_utf8(ch, c);
        if (unassigned.matches_at_start(ch)) {
          newer += member[c] ? 1 : 0;
          continue;
        }
        ++compared;
        if (re.matches_at_start(ch) != member[c] && ++mismatches <= 10)
          ADD_FAILURE() << name << ": U+" << std::hex << c << std::dec << (member[c] ? " is" : " is not")
                        << " in the class for Oniguruma";
      }
    }
    EXPECT_EQ(mismatches, 0) << name;
  }
  std::printf(
      "code points compared: %d (7 classes); class members Oniguruma knows from Unicode 15-16 and PCRE2 does not: %d\n",
      compared, newer);
}

// merges in the legacy "a b" form give the same tokenizer as the ["a", "b"] pairs.
TEST(TokenizerVectors, LegacyMergeStringsEncodeAlike) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  json spec = json::parse(v.tokenizer_json("smollm2_like"));
  for (json& m : spec["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  Tokenizer legacy = Tokenizer::from_json(spec.dump()), pairs = v.load("smollm2_like");
  for (size_t i = 0; i < v.strings.size(); i += 7)
    EXPECT_EQ(legacy.encode(v.strings[i]), pairs.encode(v.strings[i])) << i;
}

}  // namespace
}  // namespace mntest
