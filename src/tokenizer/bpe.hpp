// The BPE model: a vocabulary, ranked merges, and the merge loop that turns one pre-tokenized
// piece into ids (models/bpe in `tokenizers`), with a cache of pieces already seen.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace meganeura::tokenizer {

// std::string keys looked up by string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  bool ignore_merges = false;     // a piece that is itself in the vocabulary is one token (Llama 3)
  std::optional<int32_t> unk_id;  // for characters not in the vocabulary; none: they are dropped
  bool fuse_unk = false;          // consecutive unknown characters give one unk
};

class Bpe {
 public:
  // merges: pairs of token ids in rank order, each with the id of the token they make; a pair
  // listed twice keeps its last rank, as `tokenizers` does.
  struct Merge {
    int32_t left, right, result;
  };
  Bpe(Vocab vocab, const std::vector<Merge>& merges, BpeOptions options);

  // Appends the ids of one piece (valid UTF-8, already in the byte-level alphabet if the
  // pre-tokenizer maps bytes). Thread-safe.
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  const Vocab& vocab() const { return vocab_; }

 private:
  std::vector<int32_t> merge_piece(std::string_view piece) const;

  Vocab vocab_;
  struct Rank {
    uint32_t rank;
    int32_t result;
  };
  std::unordered_map<uint64_t, Rank> merges_;  // (left << 32 | right) -> rank and result
  BpeOptions options_;

  // Pieces recur (" the", " of"): their ids are kept, up to a bound, as `tokenizers` does.
  static constexpr size_t kCacheEntries = 10000;
  static constexpr size_t kCacheMaxPiece = 256;  // bytes; longer pieces are rare and costly to key
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace meganeura::tokenizer
