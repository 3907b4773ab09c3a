// Assembling a Model from tokenizer.json, and the encode pipeline: added tokens out first, then
// each text piece pre-tokenized and merged by BPE, then the post-processor's special tokens.
#include "tokenizer/model.hpp"

#include <array>
#include <cstdio>

#include "meganeura/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/utf8.hpp"

namespace meganeura::tokenizer {

namespace {

void check_top_level(const JsonNode& root) {
  JsonNode version = root.get("version");
  if (!version.is_null() && version.string() != "1.0") version.fail("is \"" + version.string() + "\", not \"1.0\"");
  for (const char* key : {"truncation", "padding"}) {
    JsonNode v = root.get(key);
    if (!v.is_null()) v.fail("is set; truncation and padding are not supported (they must be null)");
  }
}

// Conventional names, for files whose post-processor does not say (tokenizer_config.json would).
std::optional<int32_t> first_special(const Model& m, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = m.added_ids.find(std::string_view(name));
    if (it != m.added_ids.end() && m.ids[static_cast<size_t>(it->second)].special) return it->second;
  }
  return std::nullopt;
}

void check_ids(const JsonNode& node, const std::vector<int32_t>& ids, const Model& m) {
  for (int32_t id : ids)
    if (static_cast<size_t>(id) >= m.ids.size() || !m.ids[static_cast<size_t>(id)].known)
      node.fail("adds id " + std::to_string(id) + ", which is neither in the vocabulary nor an added token");
}

}  // namespace

std::shared_ptr<Model> load_model(const nlohmann::json& json, const std::string& source) {
  auto m = std::make_shared<Model>();
  m->source = source;
  JsonNode root(json, "", m->source);
  root.object();
  check_top_level(root);
  check_normalizer(root.get("normalizer"));

  const JsonNode added_list = root.get("added_tokens");
  m->bpe = load_bpe(root.at("model"), added_list.is_null() ? 0 : added_list.size(), m->ids);
  std::vector<AddedToken> added = load_added_tokens(added_list, m->bpe->vocab());
  int64_t added_outside_vocab = 0;
  for (const AddedToken& t : added) {
    if (static_cast<size_t>(t.id) >= m->ids.size()) m->ids.resize(static_cast<size_t>(t.id) + 1);
    IdEntry& e = m->ids[static_cast<size_t>(t.id)];
    added_outside_vocab += e.known ? 0 : 1;
    e = {true, t.special, t.content, ""};
    m->added_ids.emplace(t.content, t.id);
  }
  m->vocab_size = static_cast<int64_t>(m->bpe->vocab().size()) + added_outside_vocab;
  m->added = std::make_unique<AddedTokens>(std::move(added));

  m->pre_tokenizer = load_pre_tokenizer(root.get("pre_tokenizer"));
  JsonNode post = root.get("post_processor");
  m->post = load_post_processor(post);
  check_ids(post, m->post.prefix, *m);
  check_ids(post, m->post.suffix, *m);
  m->has_decoder = load_decoder(root.get("decoder"));
  for (IdEntry& e : m->ids)
    if (e.known) e.bytes = byte_level_to_bytes(e.token);

  m->bos = !m->post.prefix.empty()
               ? std::optional(m->post.prefix.front())
               : first_special(*m, {"<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>", "<|endoftext|>"});
  m->eos = !m->post.suffix.empty() ? std::optional(m->post.suffix.back())
                                   : first_special(*m, {"<|end_of_text|>", "</s>", "<eos>", "<|endoftext|>"});
  return m;
}

std::vector<int32_t> Model::encode(std::string_view text, bool add_special_tokens) const {
  size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[bad]));
    throw Error("Tokenizer::encode: the text is not valid UTF-8 (byte " + std::string(byte) + " at offset " +
                std::to_string(bad) + ")");
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + post.prefix.size() + post.suffix.size() + 1);
  if (add_special_tokens) out.insert(out.end(), post.prefix.begin(), post.prefix.end());
  for (const Segment& s : added->split(text)) {
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    for (const std::string& piece : pre_tokenizer.split(text.substr(s.span.first, s.span.second - s.span.first)))
      bpe->encode(piece, out);
  }
  if (add_special_tokens) out.insert(out.end(), post.suffix.begin(), post.suffix.end());
  return out;
}

const std::string& Model::bytes_of(int32_t id, bool skip_special) const {
  static const std::string none;
  if (!has_decoder) throw Error(source + ": decoder is null, so ids cannot be turned back into text");
  if (id < 0 || static_cast<size_t>(id) >= ids.size() || !ids[static_cast<size_t>(id)].known)
    throw Error("Tokenizer::decode: id " + std::to_string(id) + " is not in the vocabulary of " + source + " (" +
                std::to_string(vocab_size) + " tokens)");
  const IdEntry& e = ids[static_cast<size_t>(id)];
  return skip_special && e.special ? none : e.bytes;
}

}  // namespace meganeura::tokenizer
