// Tokenizer properties that hold for any input: decode(encode(s)) == s for valid UTF-8, the
// streaming decoder's pieces are valid UTF-8 and add up to decode(), special tokens split where
// they appear, megabyte-long runs encode without blowing up, and the lookup functions agree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "tokenizer/bpe.hpp"
#include "tokenizer/utf8.hpp"
#include "tokenizer_fixtures.hpp"

namespace mntest {
namespace {

using meganeura::DecodeStream;
using meganeura::Tokenizer;

// Valid UTF-8 from anywhere in the code space, with ASCII, whitespace and digits mixed in.
std::vector<std::string> random_texts(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int n = 0; n < count; ++n) {
    std::string s;
    int len = std::uniform_int_distribution<int>(1, 40)(rng);
    for (int i = 0; i < len; ++i) {
      uint32_t kind = rng() % 6, c;
      if (kind == 0)
        c = 0x20 + rng() % 0x5F;
      else if (kind == 1)
        c = " \t\n\r0123456789'"[rng() % 15];
      else if (kind == 2)
        c = 0x80 + rng() % 0x780;
      else if (kind == 3)
        c = 0x800 + rng() % 0xF800;
      else
        c = rng() % 0x110000;
      if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;  // surrogates are not characters
      meganeura::tokenizer::append_utf8(s, c);
    }
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> texts_to_check() {
  std::vector<std::string> texts = random_texts(1234, 2000);
  const TokenizerVectors& v = TokenizerVectors::get();
  texts.insert(texts.end(), v.strings.begin(), v.strings.end());
  return texts;
}

TEST(TokenizerBehavior, DecodeOfEncodeIsTheInput) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  int checked = 0;
  for (const char* name : {"smollm2_like", "llama3_like"}) {
    Tokenizer tok = v.load(name);
    for (const std::string& s : texts_to_check()) {
      ASSERT_EQ(tok.decode(tok.encode(s, false)), s) << name << " " << escaped(s);
      ++checked;
    }
  }
  std::printf("round trips: %d\n", checked);
}

// Pieces from the stream: each valid UTF-8, together the whole decode, and nothing held back at
// the end of a text that was valid.
void expect_stream_matches(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip, const std::string& what) {
  DecodeStream stream = tok.decode_stream(skip);
  std::string joined;
  for (int32_t id : ids) {
    std::string piece = stream.step(id);
    ASSERT_TRUE(valid_utf8(piece)) << what << ": piece " << escaped(piece);
    joined += piece;
  }
  std::string rest = stream.finish();
  ASSERT_TRUE(valid_utf8(rest)) << what;
  EXPECT_EQ(joined + rest, tok.decode(ids, skip)) << what;
}

TEST(TokenizerBehavior, StreamingDecodeNeverSplitsACharacter) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  int checked = 0;
  for (const char* name : {"smollm2_like", "llama3_like", "added_flags"}) {
    Tokenizer tok = v.load(name);
    for (const std::string& s : texts_to_check()) {
      expect_stream_matches(tok, tok.encode(s, true), false, escaped(s));
      expect_stream_matches(tok, tok.encode(s, true), true, escaped(s));
      ++checked;
    }
    // Random ids: invalid UTF-8 comes out as U+FFFD, in the same places as in decode().
    for (const auto& c : v.of(name).at("random_decodes")) {
      expect_stream_matches(tok, c.at("ids").get<std::vector<int32_t>>(), false, c.at("ids").dump());
      ++checked;
    }
  }
  std::printf("streamed decodes: %d\n", checked);
}

TEST(TokenizerBehavior, StreamingHoldsBytesUntilTheCharacterIsWhole) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  Tokenizer tok = v.load("smollm2_like");
  // "😀" is F0 9F 98 80: four single-byte tokens in the byte-level alphabet ð Ł ĺ Ģ.
  std::vector<int32_t> ids;
  for (const char* t : {"ð", "Ł", "ĺ", "Ģ"}) ids.push_back(tok.token_to_id(t).value());
  DecodeStream stream = tok.decode_stream();
  EXPECT_EQ(stream.step(ids[0]), "");
  EXPECT_EQ(stream.step(ids[1]), "");
  EXPECT_EQ(stream.step(ids[2]), "");
  EXPECT_TRUE(stream.has_pending());
  EXPECT_EQ(stream.step(ids[3]), "😀");
  EXPECT_FALSE(stream.has_pending());
  // A character cut short by the end of generation is one U+FFFD, as decode() gives it.
  EXPECT_EQ(stream.step(ids[0]), "");
  EXPECT_EQ(stream.step(ids[1]), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{ids[0], ids[1]}), "\xEF\xBF\xBD");
  // A byte that can never start a character comes out at once.
  EXPECT_EQ(stream.step(ids[1]), "\xEF\xBF\xBD");
}

TEST(TokenizerBehavior, SpecialTokensSplitOutAndSkip) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  Tokenizer smol = v.load("smollm2_like");
  const int32_t start = smol.token_to_id("<|im_start|>").value(), end = smol.token_to_id("<|im_end|>").value();
  EXPECT_EQ(start, 1);
  EXPECT_EQ(end, 2);
  EXPECT_TRUE(smol.is_special(start));
  EXPECT_FALSE(smol.is_special(smol.token_to_id("a").value()));
  std::string chat = "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n";
  std::vector<int32_t> ids = smol.encode(chat);
  EXPECT_EQ(ids.front(), start);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), start), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 1);
  EXPECT_EQ(smol.decode(ids), chat);
  EXPECT_EQ(smol.decode(ids, true), "user\nHi there\nassistant\n");
  // Glued to text on both sides, and a near miss that stays text.
  ids = smol.encode("a<|im_end|>b<|im_end");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 1);
  EXPECT_EQ(smol.decode(ids), "a<|im_end|>b<|im_end");
  // No post-processor: nothing added; bos and eos are <|endoftext|>, as SmolLM2 configures them.
  EXPECT_EQ(smol.encode("hi", true), smol.encode("hi", false));
  EXPECT_EQ(smol.bos_id(), smol.token_to_id("<|endoftext|>"));
  EXPECT_EQ(smol.eos_id(), smol.token_to_id("<|endoftext|>"));

  Tokenizer llama = v.load("llama3_like");
  const int32_t bos = llama.token_to_id("<|begin_of_text|>").value();
  EXPECT_EQ(bos, 2000);  // added after the 2000-token vocabulary
  EXPECT_EQ(llama.vocab_size(), 2006);
  EXPECT_EQ(llama.bos_id(), bos);
  EXPECT_EQ(llama.eos_id(), llama.token_to_id("<|end_of_text|>"));
  ids = llama.encode("hello");
  EXPECT_EQ(ids.front(), bos);
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()), llama.encode("hello", false));
  EXPECT_EQ(llama.decode(ids), "<|begin_of_text|>hello");
  EXPECT_EQ(llama.decode(ids, true), "hello");
  EXPECT_EQ(llama.id_to_token(bos), "<|begin_of_text|>");
  EXPECT_EQ(llama.id_to_token(-1), std::nullopt);
  EXPECT_EQ(llama.id_to_token(2006), std::nullopt);
  EXPECT_EQ(llama.token_to_id("no such token"), std::nullopt);
}

// Megabyte-long runs of one character class: the regexes backtrack linearly and BPE merges in
// O(n log n). No timing is asserted; a quadratic path would hit ctest's timeout.
TEST(TokenizerBehavior, LongRunsEncode) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  const size_t mb = 1 << 20;
  std::vector<std::string> inputs = {std::string(mb, 'a'), std::string(mb, ' '), std::string(mb, '\n'),
                                     std::string(mb, '7'), std::string(mb - 1, ' ') + "x"};
  std::string mixed;
  while (mixed.size() < mb) mixed += " a\t\r\n日本 ";
  inputs.push_back(mixed);
  std::string emoji;
  while (emoji.size() < mb) emoji += "😀";
  inputs.push_back(emoji);
  for (const char* name : {"smollm2_like", "llama3_like"}) {
    Tokenizer tok = v.load(name);
    for (const std::string& s : inputs) {
      std::vector<int32_t> ids = tok.encode(s, false);
      EXPECT_FALSE(ids.empty());
      EXPECT_EQ(tok.decode(ids), s) << name << ", a run starting " << escaped(s.substr(0, 8));
    }
  }
}

TEST(TokenizerBehavior, ConcurrentEncodesAgree) {
  const TokenizerVectors& v = TokenizerVectors::get();
  SKIP_WITHOUT_TOKENIZER_FIXTURES(v);
  Tokenizer tok = v.load("llama3_like");
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& s : v.strings) expected.push_back(tok.encode(s));
  Tokenizer fresh = v.load("llama3_like");  // an empty cache, filled by both threads at once
  auto run = [&](size_t offset, int& wrong) {
    for (size_t k = 0; k < v.strings.size(); ++k) {
      size_t i = (k + offset) % v.strings.size();
      wrong += fresh.encode(v.strings[i]) != expected[i];
    }
  };
  int wrong_a = 0, wrong_b = 0;
  std::thread a(run, 0, std::ref(wrong_a)), b(run, v.strings.size() / 2, std::ref(wrong_b));
  a.join();
  b.join();
  EXPECT_EQ(wrong_a + wrong_b, 0);
}

// A character cut short at the end of the text (F8 of issue 16: a \C split inside "€") is read
// only as far as the text goes. The bytes sit in a buffer of exactly their size, so that
// AddressSanitizer reports any read past it.
TEST(TokenizerBehavior, Utf8DecodingStopsAtTheEndOfACutCharacter) {
  for (size_t len : {1, 2}) {
    std::unique_ptr<char[]> cut(new char[len]);
    std::memcpy(cut.get(), "\xE2\x82", len);
    std::string_view s(cut.get(), len);
    size_t i = 0;
    meganeura::tokenizer::next_code_point(s, i);
    EXPECT_EQ(i, len);
    size_t end = len;
    meganeura::tokenizer::previous_code_point(s, end);
    EXPECT_EQ(end, size_t{0});
  }
  // The BPE on such a piece: one unknown (and dropped) symbol, nothing read past the piece.
  std::unique_ptr<char[]> piece(new char[21]);
  std::memset(piece.get(), 'a', 20);
  piece[20] = '\xE2';
  meganeura::tokenizer::Bpe bpe({{"a", 0}, {"\xE2\x82\xAC", 1}}, {}, {});
  std::vector<int32_t> ids;
  bpe.encode(std::string_view(piece.get(), 21), ids);
  EXPECT_EQ(ids, std::vector<int32_t>(20, 0));
}

}  // namespace
}  // namespace mntest
