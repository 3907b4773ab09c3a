// Model: everything a tokenizer.json describes, loaded and checked, behind the public Tokenizer
// (which shares one immutable Model between its copies and its DecodeStreams).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe.hpp"
#include "tokenizer/json_node.hpp"
#include "tokenizer/pre_tokenizer.hpp"

namespace meganeura::tokenizer {

// What the post-processor adds around one sequence when special tokens are requested.
struct PostProcessor {
  std::vector<int32_t> prefix, suffix;
};

// One id: its token text (added token content, or the vocabulary's byte-level form), the bytes
// the decoder turns it into, and whether decoding may skip it.
struct IdEntry {
  bool known = false;
  bool special = false;
  std::string token;
  std::string bytes;
};

struct Model {
  std::string source;  // the file name, for errors
  std::unique_ptr<Bpe> bpe;
  PreTokenizer pre_tokenizer{{}};
  std::unique_ptr<AddedTokens> added;
  Vocab added_ids;  // added token content -> id (looked up before the vocabulary)
  PostProcessor post;
  bool has_decoder = false;
  std::vector<IdEntry> ids;  // indexed by id
  int64_t vocab_size = 0;
  std::optional<int32_t> bos, eos;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // The bytes of one id for decoding ("" when skipped); an unknown id throws.
  const std::string& bytes_of(int32_t id, bool skip_special) const;
};

// Builds a Model from tokenizer.json's parsed text; every error names `source`.
std::shared_ptr<Model> load_model(const nlohmann::json& root, const std::string& source);

// The loaders of each section (load_model.cpp, load_pipeline.cpp).
std::unique_ptr<Bpe> load_bpe(const JsonNode& model, size_t added_tokens, std::vector<IdEntry>& ids);
std::vector<AddedToken> load_added_tokens(const JsonNode& list, const Vocab& vocab);
void check_normalizer(const JsonNode& normalizer);
PreTokenizer load_pre_tokenizer(const JsonNode& pre_tokenizer);
PostProcessor load_post_processor(const JsonNode& post_processor);
bool load_decoder(const JsonNode& decoder);  // false for null (decode() then throws)

}  // namespace meganeura::tokenizer
