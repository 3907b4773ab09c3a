// The BPE merge loop of `tokenizers` (models/bpe/word.rs, merge_all): symbols in a linked list,
// candidate merges in a min-heap ordered by (rank, position), stale candidates skipped when
// popped. O(n log n) in the piece's length, so a megabyte-long piece is fine.
#include "tokenizer/bpe.hpp"

#include <functional>
#include <optional>
#include <queue>

#include "tokenizer/utf8.hpp"

namespace meganeura::tokenizer {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct Symbol {
  int32_t id;
  int64_t prev, next;  // neighbours in the list, -1 at the ends
  size_t len;          // bytes covered; 0 once merged into its left neighbour
};

struct Candidate {
  uint32_t rank;
  int64_t pos;  // the left symbol
  int32_t result;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

Bpe::Bpe(Vocab vocab, const std::vector<Merge>& merges, BpeOptions options)
    : vocab_(std::move(vocab)), options_(options) {
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank)
    merges_[pair_key(merges[rank].left, merges[rank].right)] = {static_cast<uint32_t>(rank), merges[rank].result};
}

std::vector<int32_t> Bpe::merge_piece(std::string_view piece) const {
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  auto add = [&](int32_t id, size_t len) {
    int64_t n = static_cast<int64_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, len});
  };
  // One symbol per character; characters outside the vocabulary become unk (fused or not) or vanish.
  size_t unk_len = 0;  // bytes of the unk symbol not added yet (0: none)
  auto add_unk = [&] {
    if (unk_len) add(*options_.unk_id, unk_len);
    unk_len = 0;
  };
  for (size_t i = 0; i < piece.size();) {
    size_t start = i;
    next_code_point(piece, i);
    auto it = vocab_.find(piece.substr(start, i - start));
    if (it != vocab_.end()) {
      add_unk();
      add(it->second, i - start);
    } else if (options_.unk_id) {
      if (!options_.fuse_unk) add_unk();
      unk_len += i - start;
    }
  }
  add_unk();

  auto find_merge = [&](int32_t left, int32_t right) -> const Rank* {
    auto it = merges_.find(pair_key(left, right));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const Rank* m = find_merge(symbols[i].id, symbols[i + 1].id))
      queue.push({m->rank, static_cast<int64_t>(i), m->result});

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next == -1) continue;
    const Symbol right = symbols[left.next];
    const Rank* m = find_merge(left.id, right.id);
    if (!m || m->result != top.result) continue;  // the pair changed since this was queued

    symbols[left.next].len = 0;
    left.id = top.result;
    left.len += right.len;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0)
      if (const Rank* p = find_merge(symbols[left.prev].id, left.id)) queue.push({p->rank, left.prev, p->result});
    if (left.next >= 0)
      if (const Rank* n = find_merge(left.id, symbols[left.next].id)) queue.push({n->rank, top.pos, n->result});
  }

  std::vector<int32_t> ids;
  for (const Symbol& s : symbols)
    if (s.len != 0) ids.push_back(s.id);
  return ids;
}

void Bpe::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  bool cacheable = piece.size() < kCacheMaxPiece;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids = merge_piece(piece);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheEntries) cache_.emplace(piece, std::move(ids));
  }
}

}  // namespace meganeura::tokenizer
