// The public Tokenizer and DecodeStream (include/meganeura/tokenizer.hpp) over a shared Model.
#include "meganeura/tokenizer.hpp"

#include "io/file.hpp"
#include "meganeura/error.hpp"
#include "tokenizer/model.hpp"
#include "tokenizer/utf8.hpp"

namespace meganeura {

Tokenizer Tokenizer::from_file(const std::string& path) {
  io::MappedFile file(path);
  return from_json(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), path);
}

Tokenizer Tokenizer::from_json(std::string_view json, const std::string& name) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json.begin(), json.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(name + ": not valid JSON: " + e.what());
  }
  try {
    return Tokenizer(tokenizer::load_model(root, name));
  } catch (const nlohmann::json::exception& e) {  // a backstop: JsonNode checks each type before reading it
    throw Error(name + ": " + e.what());
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return model_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) bytes += model_->bytes_of(id, skip_special_tokens);
  std::string text;
  tokenizer::append_lossy_utf8(text, bytes, true);
  return text;
}

DecodeStream Tokenizer::decode_stream(bool skip_special_tokens) const {
  return DecodeStream(model_, skip_special_tokens);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = model_->added_ids.find(token); it != model_->added_ids.end()) return it->second;
  if (auto it = model_->bpe->vocab().find(token); it != model_->bpe->vocab().end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= model_->ids.size() || !model_->ids[static_cast<size_t>(id)].known)
    return std::nullopt;
  return model_->ids[static_cast<size_t>(id)].token;
}

int64_t Tokenizer::vocab_size() const { return model_->vocab_size; }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < model_->ids.size() && model_->ids[static_cast<size_t>(id)].special;
}

std::optional<int32_t> Tokenizer::bos_id() const { return model_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return model_->eos; }
const std::string& Tokenizer::source() const { return model_->source; }

std::string DecodeStream::step(int32_t id) {
  pending_ += model_->bytes_of(id, skip_special_);
  std::string text;
  pending_.erase(0, tokenizer::append_lossy_utf8(text, pending_, false));
  return text;
}

std::string DecodeStream::finish() {
  std::string text;
  tokenizer::append_lossy_utf8(text, pending_, true);
  pending_.clear();
  return text;
}

}  // namespace meganeura
