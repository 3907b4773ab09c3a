// Tokenizers: the byte-level BPE of GPT-2, SmolLM2 and Llama 3, read from a Hugging Face
// tokenizer.json and matching the `tokenizers` library's ids and text exactly.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meganeura {

namespace tokenizer {
struct Model;  // the loaded tokenizer.json (src/tokenizer/model.hpp)
}

class DecodeStream;

// A loaded tokenizer. Immutable and cheap to copy (copies share the vocabulary and the BPE
// cache); encode and decode may run on several threads at once.
class Tokenizer {
 public:
  // Reads a tokenizer.json. Anything malformed or unsupported throws Error naming the file and
  // the JSON path at fault, e.g. `tokenizer.json: pre_tokenizer.pretokenizers[1].type
  // "Metaspace" is not supported (supported: ByteLevel, Digits, Split, Sequence)`.
  static Tokenizer from_file(const std::string& path);
  // The same from JSON text; `name` stands for the file in error messages.
  static Tokenizer from_json(std::string_view json, const std::string& name = "tokenizer.json");

  // Ids of `text` (UTF-8; invalid UTF-8 throws Error). Added tokens are split out first, then
  // the rest is pre-tokenized and merged. add_special_tokens applies the post-processor (Llama 3
  // prepends <|begin_of_text|>; SmolLM2's tokenizer adds nothing), as `tokenizers` does by default.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Text of `ids`; bytes that are not valid UTF-8 become U+FFFD, as in `tokenizers`. An id outside
  // the vocabulary throws Error (`tokenizers` drops it silently).
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  // For generation: text piece by piece, never splitting a UTF-8 character (see DecodeStream).
  DecodeStream decode_stream(bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;  // added tokens, then the vocabulary
  std::optional<std::string> id_to_token(int32_t id) const;          // byte-level form: "Ġhello"
  // Vocabulary plus added tokens that are not in it (`len(tokenizer)` in transformers).
  int64_t vocab_size() const;
  bool is_special(int32_t id) const;  // a special added token (skipped by skip_special_tokens)
  // Begin/end of text, where the file tells: the post-processor's leading/trailing special token,
  // else a special token with a conventional name (<|begin_of_text|>, <s>, <|endoftext|>;
  // <|end_of_text|>, </s>, <|endoftext|>). A chat model's end-of-turn token (<|im_end|>,
  // <|eot_id|>) is the model's choice: look it up with token_to_id.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  const std::string& source() const;  // the file name given to from_file/from_json

 private:
  explicit Tokenizer(std::shared_ptr<const tokenizer::Model> model) : model_(std::move(model)) {}
  std::shared_ptr<const tokenizer::Model> model_;
};

// Decodes generated ids one at a time. step(id) returns the text that id completes: the bytes of
// a multi-byte character split across tokens wait until the character is whole, so the output is
// always valid UTF-8, and the pieces concatenated equal decode() of all the ids.
class DecodeStream {
 public:
  std::string step(int32_t id);
  // What is still pending (an unfinished character, as U+FFFD); call once generation ends.
  std::string finish();
  bool has_pending() const { return !pending_.empty(); }

 private:
  friend class Tokenizer;
  DecodeStream(std::shared_ptr<const tokenizer::Model> model, bool skip_special)
      : model_(std::move(model)), skip_special_(skip_special) {}
  std::shared_ptr<const tokenizer::Model> model_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete character
};

}  // namespace meganeura
