// Small tokenizer.json files built in the test: model options the fixtures do not exercise
// (ignore_merges on a word its merges would not make, unk_token), then malformed and unsupported
// files, whose errors name the file and the JSON path of the culprit, and bad input to encode and decode.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "file_fixtures.hpp"
#include "meganeura/tokenizer.hpp"

namespace mntest {
namespace {

using meganeura::Tokenizer;
using nlohmann::json;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A complete, valid byte-level BPE tokenizer with five tokens, two merges and one special token.
json tiny() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": null,
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
              "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
              "merges": [["a", "b"], ["Ġ", "ab"]]}})");
}

std::string load_error(const json& spec) {
  return error_of([&] { Tokenizer::from_json(spec.dump()); });
}

TEST(TokenizerJson, TheTinyTokenizerWorks) {
  Tokenizer tok = Tokenizer::from_json(tiny().dump());
  EXPECT_EQ(tok.encode("ab ab<s>"), (std::vector<int32_t>{2, 4, 5}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{2, 4, 5}), "ab ab<s>");
  EXPECT_EQ(tok.vocab_size(), 6);
  EXPECT_EQ(tok.bos_id(), 5);
  // Characters outside the vocabulary and without unk_token vanish, as in `tokenizers`.
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{2}));
}

// A word in the vocabulary is one token under ignore_merges, even where the merges would not
// build it (`tokenizers`' BPE::tokenize_with_cache checks the vocabulary first).
TEST(TokenizerJson, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  json spec = tiny();
  spec["model"]["vocab"] = json::parse(R"({"a": 0, "b": 1, "c": 2, "bc": 3, "abc": 4})");
  spec["model"]["merges"] = json::parse(R"([["b", "c"]])");
  spec["added_tokens"][0]["id"] = 5;
  EXPECT_EQ(Tokenizer::from_json(spec.dump()).encode("abc"), (std::vector<int32_t>{0, 3}));
  spec["model"]["ignore_merges"] = true;
  EXPECT_EQ(Tokenizer::from_json(spec.dump()).encode("abc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(Tokenizer::from_json(spec.dump()).encode("abcabc"), (std::vector<int32_t>{0, 3, 0, 3}));
}

// Characters outside the vocabulary become unk_token, fused into one when fuse_unk is set.
TEST(TokenizerJson, UnknownCharactersBecomeUnk) {
  json spec = tiny();
  spec["pre_tokenizer"] = nullptr;  // BPE on the raw characters, so "€" stays one character
  spec["model"]["vocab"]["<unk>"] = 6;
  spec["model"]["unk_token"] = "<unk>";
  spec["added_tokens"][0]["id"] = 6;
  spec["added_tokens"][0]["content"] = "<unk>";
  EXPECT_EQ(Tokenizer::from_json(spec.dump()).encode("€€ab€"), (std::vector<int32_t>{6, 6, 2, 6}));
  spec["model"]["fuse_unk"] = true;
  EXPECT_EQ(Tokenizer::from_json(spec.dump()).encode("€€ab€"), (std::vector<int32_t>{6, 2, 6}));
  spec["model"]["unk_token"] = "<missing>";
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: model.unk_token is \"<missing>\", which is not in model.vocab");
}

TEST(TokenizerJson, FileAndJsonProblemsNameTheFile) {
  EXPECT_THAT(error_of([] { Tokenizer::from_file("/nonexistent/tokenizer.json"); }),
              HasSubstr("/nonexistent/tokenizer.json"));
  EXPECT_THAT(error_of([] { Tokenizer::from_json("{\"model\": ", "my.json"); }),
              StartsWith("meganeura: my.json: not valid JSON"));
  EXPECT_EQ(error_of([] { Tokenizer::from_json("[1, 2]"); }),
            "meganeura: tokenizer.json: the top level should be an object, not an array");
  TempDir dir;
  write_bytes(dir / "t.json", tiny().dump());
  EXPECT_EQ(Tokenizer::from_file(dir / "t.json").encode("ab"), (std::vector<int32_t>{2}));
  json spec = tiny();
  spec["model"].erase("vocab");
  write_bytes(dir / "bad.json", spec.dump());
  EXPECT_EQ(error_of([&] { Tokenizer::from_file(dir / "bad.json"); }),
            "meganeura: " + (dir / "bad.json") + ": model.vocab is missing");
}

TEST(TokenizerJson, UnsupportedPartsAreNamedByPath) {
  json spec = tiny();
  spec["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Digits", "individual_digits": true}, {"type": "Metaspace", "replacement": "▁"}]})");
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: pre_tokenizer.pretokenizers[1].type \"Metaspace\" is not supported "
            "(supported: ByteLevel, Digits, Split, Sequence)");

  spec = tiny();
  spec["normalizer"] = json::parse(R"({"type": "NFC"})");
  EXPECT_THAT(load_error(spec), StartsWith("meganeura: tokenizer.json: normalizer.type \"NFC\" is not supported"));
  spec["normalizer"] = json::parse(R"({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})");
  EXPECT_THAT(load_error(spec),
              StartsWith("meganeura: tokenizer.json: normalizer.normalizers[0].type \"Lowercase\" is not supported"));
  spec["normalizer"] = json::parse(R"({"type": "Sequence", "normalizers": []})");
  EXPECT_NO_THROW(Tokenizer::from_json(spec.dump()));

  spec = tiny();
  spec["model"]["type"] = "WordPiece";
  EXPECT_EQ(load_error(spec), "meganeura: tokenizer.json: model.type \"WordPiece\" is not supported (supported: BPE)");

  const std::pair<const char*, json> options[] = {
      {"byte_fallback", true}, {"dropout", 0.1}, {"continuing_subword_prefix", "##"}, {"end_of_word_suffix", "</w>"}};
  for (const auto& [key, value] : options) {
    spec = tiny();
    spec["model"][key] = value;
    EXPECT_THAT(load_error(spec), AllOf(StartsWith(std::string("meganeura: tokenizer.json: model.") + key + " is "),
                                        HasSubstr("is not supported")));
  }

  spec = tiny();
  spec["decoder"] = json::parse(R"({"type": "Sequence", "decoders": [{"type": "Replace"}, {"type": "ByteFallback"}]})");
  EXPECT_THAT(load_error(spec), StartsWith("meganeura: tokenizer.json: decoder.decoders has 2 decoders"));
  spec["decoder"] = json::parse(R"({"type": "Metaspace"})");
  EXPECT_THAT(load_error(spec), StartsWith("meganeura: tokenizer.json: decoder.type \"Metaspace\" is not supported"));

  spec = tiny();
  spec["post_processor"] = json::parse(R"({"type": "RobertaProcessing"})");
  EXPECT_THAT(load_error(spec),
              StartsWith("meganeura: tokenizer.json: post_processor.type \"RobertaProcessing\" is not supported"));
  spec["post_processor"] =
      json::parse(R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "B", "type_id": 0}}],
                                           "pair": [], "special_tokens": {}})");
  EXPECT_THAT(load_error(spec), StartsWith("meganeura: tokenizer.json: post_processor.single[0].Sequence.id is \"B\""));
  spec["post_processor"] =
      json::parse(R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                           {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {}})");
  EXPECT_EQ(load_error(spec), "meganeura: tokenizer.json: post_processor.special_tokens[\"<s>\"] is missing");
  spec["post_processor"]["special_tokens"] = json::parse(R"({"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}})");
  EXPECT_THAT(load_error(spec),
              HasSubstr("post_processor adds id 99, which is neither in the vocabulary nor an added token"));

  spec = tiny();
  spec["truncation"] = json::parse(R"({"max_length": 512})");
  EXPECT_THAT(load_error(spec), StartsWith("meganeura: tokenizer.json: truncation is set"));
}

TEST(TokenizerJson, ASecondByteLevelIsRefused) {
  // Each ByteLevel re-encodes the bytes of the one before, doubling every byte at or above 0x80:
  // a fuzzed file chaining a dozen of them took 14 s to encode 600 bytes
  // (fuzz/corpus/tokenizer/timeout-chained-byte-level).
  json spec = tiny();
  spec["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Digits", "individual_digits": true}, {"type": "ByteLevel", "add_prefix_space": false},
      {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": false}]}]})");
  EXPECT_THAT(load_error(spec), StartsWith("meganeura: tokenizer.json: pre_tokenizer.pretokenizers[2].pretokenizers[0] "
                                           "is a second ByteLevel step"));
  spec["pre_tokenizer"]["pretokenizers"].erase(2);
  EXPECT_NO_THROW(Tokenizer::from_json(spec.dump()));
}

TEST(TokenizerJson, InconsistentModelsAreRefused) {
  json spec = tiny();
  spec["model"]["merges"][1] = json::array({"Ġ", "c"});
  EXPECT_EQ(load_error(spec), "meganeura: tokenizer.json: model.merges[1] names \"c\", which is not in model.vocab");
  spec["model"]["merges"][1] = json::array({"b", "a"});
  EXPECT_EQ(load_error(spec), "meganeura: tokenizer.json: model.merges[1] makes \"ba\", which is not in model.vocab");
  spec["model"]["merges"][1] = "Ġab";
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: model.merges[1] is \"Ġab\", not two tokens separated by one space");
  spec["model"]["merges"][1] = "Ġ ab";  // the legacy form is fine
  EXPECT_NO_THROW(Tokenizer::from_json(spec.dump()));

  spec = tiny();
  spec["model"]["vocab"]["ab"] = 1;
  EXPECT_THAT(load_error(spec), AnyOf(HasSubstr("model.vocab.ab is 1, the id of model.vocab.b too"),
                                      HasSubstr("model.vocab.b is 1, the id of model.vocab.ab too")));
  spec["model"]["vocab"]["ab"] = -3;
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: model.vocab.ab is -3, not an id in [0, 6) (ids are unique, so they "
            "fit the 6 entries of model.vocab and added_tokens)");
  spec["model"]["vocab"]["ab"] = "2";
  EXPECT_EQ(load_error(spec), "meganeura: tokenizer.json: model.vocab.ab should be an integer, not a string");

  spec = tiny();
  spec["added_tokens"][0]["id"] = 9;
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: added_tokens[0].id is 9, but \"<s>\" gets id 5 (the next id after "
            "the vocabulary and the added tokens before it)");
  spec["added_tokens"][0]["id"] = 5;
  spec["added_tokens"][0]["content"] = "ab";
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: added_tokens[0].id is 5, but \"ab\" gets id 2 from the vocabulary");
  spec["added_tokens"][0]["content"] = "";
  EXPECT_EQ(load_error(spec), "meganeura: tokenizer.json: added_tokens[0].content is empty");

  spec = tiny();
  spec["pre_tokenizer"] =
      json::parse(R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": false})");
  EXPECT_THAT(load_error(spec),
              StartsWith("meganeura: tokenizer.json: pre_tokenizer.pattern.Regex \"(unclosed\" is not a regular "
                         "expression PCRE2 accepts"));
  spec["pre_tokenizer"]["pattern"] = json::parse(R"({"Regex": "\\s+"})");
  spec["pre_tokenizer"]["behavior"] = "Dropped";
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: pre_tokenizer.behavior \"Dropped\" is not supported (supported: "
            "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

TEST(TokenizerJson, BadInputToEncodeAndDecode) {
  Tokenizer tok = Tokenizer::from_json(tiny().dump());
  EXPECT_EQ(error_of([&] { tok.encode("ab\xff"); }),
            "meganeura: Tokenizer::encode: the text is not valid UTF-8 (byte 0xff at offset 2)");
  EXPECT_EQ(error_of([&] { tok.encode("\xed\xa0\x80"); }),  // a UTF-16 surrogate
            "meganeura: Tokenizer::encode: the text is not valid UTF-8 (byte 0xed at offset 0)");
  EXPECT_EQ(error_of([&] {
              tok.decode(std::vector<int32_t>{0, 6});
            }),
            "meganeura: Tokenizer::decode: id 6 is not in the vocabulary of tokenizer.json (6 tokens)");
  EXPECT_THAT(error_of([&] { tok.decode_stream().step(-1); }), HasSubstr("id -1 is not in the vocabulary"));

  json spec = tiny();
  spec["decoder"] = nullptr;  // encoding still works; decoding says why it cannot
  Tokenizer no_decoder = Tokenizer::from_json(spec.dump());
  EXPECT_EQ(no_decoder.encode("ab"), (std::vector<int32_t>{2}));
  EXPECT_EQ(error_of([&] { no_decoder.decode(std::vector<int32_t>{2}); }),
            "meganeura: tokenizer.json: decoder is null, so ids cannot be turned back into text");
}

// Files found by fuzzing (issue 16; tests/data/reliability), each an Error naming the file and the
// JSON path. F2: a vocabulary id of 2^31 - 2 sized the id table to ~154 GB; ids are unique, so a
// vocabulary of n entries must use ids [0, n).
TEST(TokenizerJson, FuzzedFilesAreErrorsNamingTheFileAndField) {
  const std::string dir = std::string(MEGANEURA_TOKENIZER_DATA) + "/../reliability/";
  const std::string f2 = dir + "F2-tokenizer-huge-vocab-id.json";
  EXPECT_EQ(error_of([&] { Tokenizer::from_file(f2); }),
            "meganeura: " + f2 +
                ": model.vocab.b is 2147483646, not an id in [0, 2) (ids are unique, so they fit the 2 "
                "entries of model.vocab and added_tokens)");
  json spec = tiny();
  spec["model"]["vocab"]["Ġab"] = 6;  // 5 entries and 1 added token: ids up to 5
  EXPECT_EQ(load_error(spec),
            "meganeura: tokenizer.json: model.vocab[\"Ġab\"] is 6, not an id in [0, 6) (ids are unique, so they fit "
            "the 6 entries of model.vocab and added_tokens)");

  // F8: \C matches one byte, so a Split piece could end inside a character, which the BPE read
  // past and PCRE2 was given with PCRE2_NO_UTF_CHECK. Refused when the file is read.
  const std::string f8 = dir + "F8-tokenizer-backslash-C.json";
  EXPECT_THAT(error_of([&] { Tokenizer::from_file(f8); }),
              AllOf(StartsWith("meganeura: " + f8 +
                               ": pre_tokenizer.pattern.Regex \"a{20}\\C\" is not a regular expression PCRE2 accepts"),
                    HasSubstr("(\\C matches one byte and can cut a UTF-8 character)")));
  // The same file with `.` (one character) encodes F8's text.
  std::string text;
  {
    std::ifstream in(f8);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  json dotted = json::parse(text);
  dotted["pre_tokenizer"]["pattern"]["Regex"] = "a{20}.";
  std::vector<int32_t> expected(20, 0);
  expected.push_back(1);
  EXPECT_EQ(Tokenizer::from_json(dotted.dump()).encode("aaaaaaaaaaaaaaaaaaaa\xE2\x82\xAC"), expected);

  // Values shown in errors are never dump()ed whole: a 100,000-level value names its kind.
  std::string deep = tiny().dump();
  const std::string null_dropout = "\"dropout\":null";
  ASSERT_NE(deep.find(null_dropout), std::string::npos);
  deep.replace(deep.find(null_dropout), null_dropout.size(),
               "\"dropout\":" + std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(error_of([&] { Tokenizer::from_json(deep); }),
            "meganeura: tokenizer.json: model.dropout is an array: BPE dropout (random merges) is not supported");
}

// Sequences nest, and each level is a recursive call (with its JSON path a level longer): a file
// nesting them 100,000 deep would overflow the stack. Bounded at 16 levels; real files use 1 or 2.
// (100 levels here: the test's own dump() recurses too.)
TEST(TokenizerJson, DeeplyNestedSequencesAreRefused) {
  const std::pair<const char*, const char*> sections[] = {{"normalizer", "normalizers"},
                                                          {"pre_tokenizer", "pretokenizers"},
                                                          {"post_processor", "processors"},
                                                          {"decoder", "decoders"}};
  for (const auto& [section, list] : sections) {
    SCOPED_TRACE(section);
    json spec = tiny();
    json nested = {{"type", "ByteLevel"}};
    for (int i = 0; i < 100; ++i) nested = json{{"type", "Sequence"}, {list, json::array({std::move(nested)})}};
    spec[section] = std::move(nested);
    const std::string text = spec.dump();
    EXPECT_THAT(error_of([&] { Tokenizer::from_json(text); }),
                AllOf(StartsWith(std::string("meganeura: tokenizer.json: ") + section + "." + list + "[0]."),
                      HasSubstr(" nests Sequences deeper than 16 levels")));
  }
}

}  // namespace
}  // namespace mntest
