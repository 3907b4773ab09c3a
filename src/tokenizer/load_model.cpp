// tokenizer.json's "model" (BPE: vocab, merges, options) and "added_tokens" sections. Files come
// from the network: ids, merges and added tokens are checked against each other, and anything
// the merge loop does not implement (dropout, byte fallback, subword affixes) is refused.
#include <limits>

#include "tokenizer/model.hpp"

namespace meganeura::tokenizer {

namespace {

// Ids are unique, so a vocabulary of n entries with m added tokens (which may fill its gaps) uses
// ids below n + m: a larger id would size the id table (read by decode) from a number in the
// file rather than from what the file holds.
Vocab load_vocab(const JsonNode& node, size_t added_tokens, std::vector<IdEntry>& ids) {
  Vocab vocab;
  vocab.reserve(node.object().size());
  const int64_t limit = static_cast<int64_t>(node.object().size() + added_tokens);
  for (const auto& [token, value] : node.object().items()) {
    JsonNode entry(value, path_key(node.path(), token), node.file());
    int64_t id = entry.integer();
    if (id < 0 || id >= limit || id >= std::numeric_limits<int32_t>::max())
      entry.fail("is " + std::to_string(id) + ", not an id in [0, " + std::to_string(limit) +
                 ") (ids are unique, so they fit the " + std::to_string(limit) + " entries of " + node.path() +
                 " and added_tokens)");
    if (static_cast<size_t>(id) >= ids.size()) ids.resize(static_cast<size_t>(id) + 1);
    IdEntry& e = ids[static_cast<size_t>(id)];
    if (e.known) entry.fail("is " + std::to_string(id) + ", the id of " + path_key(node.path(), e.token) + " too");
    e.known = true;
    e.token = token;
    vocab.emplace(token, static_cast<int32_t>(id));
  }
  return vocab;
}

// A merge as its two token strings: the legacy "a b" form or the ["a", "b"] pair.
std::pair<std::string, std::string> merge_parts(const JsonNode& m) {
  if (m.value().is_string()) {
    std::string s = m.string();
    size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
      m.fail("is \"" + s + "\", not two tokens separated by one space");
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (!m.value().is_array() || m.size() != 2) m.fail("should be a pair of tokens: [\"a\", \"b\"] or \"a b\"");
  return {m.at(size_t{0}).string(), m.at(size_t{1}).string()};
}

std::vector<Bpe::Merge> load_merges(const JsonNode& node, const Vocab& vocab, const std::string& vocab_path) {
  std::vector<Bpe::Merge> merges;
  merges.reserve(node.size());
  auto id_of = [&](const JsonNode& m, const std::string& token, const char* verb) {
    auto it = vocab.find(token);
    if (it == vocab.end()) m.fail(std::string(verb) + " \"" + token + "\", which is not in " + vocab_path);
    return it->second;
  };
  for (size_t i = 0; i < node.size(); ++i) {
    JsonNode m = node.at(i);
    auto [left, right] = merge_parts(m);
    merges.push_back({id_of(m, left, "names"), id_of(m, right, "names"), id_of(m, left + right, "makes")});
  }
  return merges;
}

// Options with no effect when null, false or empty; anything else is beyond this implementation.
void refuse_option(const JsonNode& model, const char* key, const std::string& why) {
  JsonNode v = model.get(key);
  bool off = v.is_null() || (v.value().is_boolean() && !v.boolean()) || (v.value().is_string() && v.string().empty()) ||
             (v.value().is_number() && v.value().get<double>() == 0.0);
  if (!off) v.fail("is " + shown(v.value()) + ": " + why + " is not supported");
}

}  // namespace

std::unique_ptr<Bpe> load_bpe(const JsonNode& model, size_t added_tokens, std::vector<IdEntry>& ids) {
  model.object();
  if (model.has("type") && model.type() != "BPE") model.at("type").unsupported(model.type(), "BPE");
  refuse_option(model, "dropout", "BPE dropout (random merges)");
  refuse_option(model, "byte_fallback", "byte fallback (<0x..> tokens)");
  refuse_option(model, "continuing_subword_prefix", "a continuing-subword prefix");
  refuse_option(model, "end_of_word_suffix", "an end-of-word suffix");

  JsonNode vocab_node = model.at("vocab");
  Vocab vocab = load_vocab(vocab_node, added_tokens, ids);
  std::vector<Bpe::Merge> merges = load_merges(model.at("merges"), vocab, vocab_node.path());

  BpeOptions options;
  options.ignore_merges = model.boolean_or("ignore_merges", false);
  options.fuse_unk = model.boolean_or("fuse_unk", false);
  JsonNode unk = model.get("unk_token");
  if (!unk.is_null()) {
    auto it = vocab.find(unk.string());
    if (it == vocab.end()) unk.fail("is \"" + unk.string() + "\", which is not in " + vocab_node.path());
    options.unk_id = it->second;
  }
  return std::make_unique<Bpe>(std::move(vocab), merges, options);
}

std::vector<AddedToken> load_added_tokens(const JsonNode& list, const Vocab& vocab) {
  std::vector<AddedToken> tokens;
  if (list.is_null()) return tokens;
  Vocab seen;
  // The id `tokenizers` gives each one when it loads the file: the vocabulary's id for a token
  // it has, else the next one after the vocabulary (counted) and the added tokens before it.
  int64_t next_id = static_cast<int64_t>(vocab.size());
  for (size_t i = 0; i < list.size(); ++i) {
    JsonNode t = list.at(i);
    AddedToken token;
    token.content = t.at("content").string();
    if (token.content.empty()) t.at("content").fail("is empty");
    if (seen.count(token.content)) t.at("content").fail("\"" + token.content + "\" is listed twice");
    int64_t id = t.at("id").integer();
    auto in_vocab = vocab.find(token.content);
    int64_t expected = in_vocab != vocab.end() ? in_vocab->second : next_id++;
    if (id != expected)
      t.at("id").fail("is " + std::to_string(id) + ", but \"" + token.content + "\" gets id " +
                      std::to_string(expected) +
                      (in_vocab != vocab.end() ? " from the vocabulary"
                                               : " (the next id after the vocabulary and the added tokens before it)"));
    token.id = static_cast<int32_t>(id);
    token.special = t.boolean_or("special", false);
    token.single_word = t.boolean_or("single_word", false);
    token.lstrip = t.boolean_or("lstrip", false);
    token.rstrip = t.boolean_or("rstrip", false);
    token.normalized = t.boolean_or("normalized", true);
    seen.emplace(token.content, token.id);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace meganeura::tokenizer
