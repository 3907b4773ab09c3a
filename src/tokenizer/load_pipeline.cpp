// tokenizer.json's pipeline sections around the model: "normalizer", "pre_tokenizer",
// "post_processor" and "decoder". Each accepts what the byte-level BPE families use (GPT-2,
// SmolLM2, Llama 3, Qwen) and names anything else, with its JSON path, as unsupported.
#include <cstdint>

#include "tokenizer/model.hpp"

namespace meganeura::tokenizer {

namespace {

// Sequences nest (a Sequence of Sequences); the readers below recurse once a level, so the depth
// is bounded (files use 1 or 2) rather than left to the stack.
constexpr int kMaxSequenceDepth = 16;

void check_depth(const JsonNode& n, int depth) {
  if (depth > kMaxSequenceDepth) n.fail("nests Sequences deeper than " + std::to_string(kMaxSequenceDepth) + " levels");
}

void check_normalizer(const JsonNode& n, int depth) {
  if (n.is_null()) return;
  check_depth(n, depth);
  std::string type = n.type();
  if (type == "Sequence" && n.at("normalizers").size() == 0) return;
  if (type == "Sequence") {
    check_normalizer(n.at("normalizers").at(size_t{0}), depth + 1);
    return;
  }
  // NFC and friends need Unicode's composition tables, which meganeura does not carry; the
  // byte-level families it targets (GPT-2, SmolLM2, Llama 3) have no normalizer.
  n.at("type").unsupported(type, "null, or an empty Sequence: no normalizer");
}

SplitBehavior split_behavior(const JsonNode& n) {
  std::string b = n.string();
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  n.unsupported(b, "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

SplitStep load_split(const JsonNode& n) {
  JsonNode pattern = n.at("pattern");
  std::string where = n.file() + ": " + pattern.path();
  if (!pattern.has("Regex") && !pattern.has("String")) pattern.fail("should be {\"Regex\": ...} or {\"String\": ...}");
  Regex regex = pattern.has("Regex") ? Regex::compile(pattern.at("Regex").string(), where + ".Regex")
                                     : Regex::literal(pattern.at("String").string(), where + ".String");
  return {std::move(regex), split_behavior(n.at("behavior")), n.boolean_or("invert", false)};
}

void add_steps(const JsonNode& n, std::vector<PreTokenizerStep>& steps, int depth) {
  check_depth(n, depth);
  std::string type = n.type();
  if (type == "Sequence") {
    JsonNode list = n.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) add_steps(list.at(i), steps, depth + 1);
  } else if (type == "ByteLevel") {
    // Each ByteLevel re-encodes the bytes of the text before it, doubling every byte at or above
    // 0x80: a chain of them grows a text 2^n-fold (a fuzzed file hung encoding for minutes).
    for (const PreTokenizerStep& s : steps)
      if (std::holds_alternative<ByteLevelStep>(s))
        n.fail(
            "is a second ByteLevel step: each re-encodes the one before's bytes, doubling the text; at most one is "
            "supported");
    steps.push_back(ByteLevelStep{n.boolean_or("add_prefix_space", true), n.boolean_or("use_regex", true)});
  } else if (type == "Split") {
    steps.push_back(load_split(n));
  } else if (type == "Digits") {
    bool individual = n.boolean_or("individual_digits", false);
    // Digits splits on char::is_numeric, which is \p{N}: each one alone, or runs of them.
    static const Regex one = Regex::compile(R"(\p{N})", "Digits"), run = Regex::compile(R"(\p{N}+)", "Digits");
    steps.push_back(DigitsStep{individual ? one : run});
  } else {
    n.at("type").unsupported(type, "ByteLevel, Digits, Split, Sequence");
  }
}

// One TemplateProcessing's "single" template: special tokens before and after $A.
PostProcessor load_template(const JsonNode& n) {
  PostProcessor post;
  JsonNode single = n.at("single"), specials = n.at("special_tokens");
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    JsonNode piece = single.at(i);
    if (piece.has("Sequence")) {
      JsonNode id = piece.at("Sequence").at("id");
      if (id.string() != "A") id.fail("is \"" + id.string() + "\": a single-sequence template can only hold $A");
      if (seen_sequence) piece.fail("repeats $A");
      seen_sequence = true;
    } else if (piece.has("SpecialToken")) {
      std::string name = piece.at("SpecialToken").at("id").string();
      JsonNode token = specials.at(name.c_str()).at("ids");
      for (size_t k = 0; k < token.size(); ++k) {
        int64_t id = token.at(k).integer();
        if (id < 0 || id > INT32_MAX) token.at(k).fail("is not an id");
        (seen_sequence ? post.suffix : post.prefix).push_back(static_cast<int32_t>(id));
      }
    } else {
      piece.fail("should be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!seen_sequence) single.fail("has no $A");
  return post;
}

void add_post_processor(const JsonNode& n, PostProcessor& post, int depth) {
  check_depth(n, depth);
  std::string type = n.type();
  if (type == "Sequence") {
    JsonNode list = n.at("processors");
    for (size_t i = 0; i < list.size(); ++i) add_post_processor(list.at(i), post, depth + 1);
  } else if (type == "TemplateProcessing") {
    // A later processor wraps what the earlier ones made.
    PostProcessor t = load_template(n);
    t.prefix.insert(t.prefix.end(), post.prefix.begin(), post.prefix.end());
    post.suffix.insert(post.suffix.end(), t.suffix.begin(), t.suffix.end());
    post.prefix = std::move(t.prefix);
  } else if (type != "ByteLevel") {  // ByteLevel only trims offsets, which we do not report
    n.at("type").unsupported(type, "ByteLevel, TemplateProcessing, Sequence");
  }
}

bool load_decoder(const JsonNode& n, int depth) {
  if (n.is_null()) return false;
  check_depth(n, depth);
  std::string type = n.type();
  if (type == "ByteLevel") return true;
  if (type == "Sequence") {
    JsonNode list = n.at("decoders");
    if (list.size() == 1) return load_decoder(list.at(size_t{0}), depth + 1);
    list.fail("has " + std::to_string(list.size()) + " decoders; only a Sequence of one ByteLevel is supported");
  }
  n.at("type").unsupported(type, "ByteLevel, or a Sequence of one ByteLevel");
}

}  // namespace

void check_normalizer(const JsonNode& n) { check_normalizer(n, 0); }

PreTokenizer load_pre_tokenizer(const JsonNode& n) {
  std::vector<PreTokenizerStep> steps;
  if (!n.is_null()) add_steps(n, steps, 0);
  return PreTokenizer(std::move(steps));
}

PostProcessor load_post_processor(const JsonNode& n) {
  PostProcessor post;
  if (!n.is_null()) add_post_processor(n, post, 0);
  return post;
}

bool load_decoder(const JsonNode& n) { return load_decoder(n, 0); }

}  // namespace meganeura::tokenizer
