// Executable::write_streamed: weights converted by several threads straight into a staging
// buffer while the GPU copies the previous one, instead of a staging buffer and a wait per
// tensor (docs/performance.md, "Loading weights").
#include <algorithm>
#include <future>

#include "util/parallel.hpp"
#include "vulkan/executable_impl.hpp"

namespace meganeura::vk {

namespace {

constexpr uint64_t kGrain = 256;  // piece offsets: whole elements of every dtype

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// A contiguous part of one write, placed at `staged` in a chunk.
struct Piece {
  size_t write;
  uint64_t offset, size, staged;
};

// Cuts the writes into chunks of at most `chunk` bytes (a multiple of kGrain).
std::vector<std::vector<Piece>> cut(std::span<const StreamedWrite> writes, uint64_t chunk) {
  std::vector<std::vector<Piece>> chunks(1);
  uint64_t fill = 0;
  for (size_t w = 0; w < writes.size(); ++w)
    for (uint64_t done = 0; done < writes[w].dst.size;) {
      if (fill == chunk) chunks.emplace_back(), fill = 0;
      const uint64_t size = std::min(writes[w].dst.size - done, chunk - fill);
      chunks.back().push_back({w, done, size, fill});
      done += size;
      fill = std::min(chunk, align_up(fill + size, kGrain));
    }
  return chunks;
}

// Fills one chunk's staging memory: its bytes split evenly over the workers at kGrain bounds.
void fill(std::span<const StreamedWrite> writes, const std::vector<Piece>& pieces, std::byte* staging) {
  if (pieces.empty()) return;
  const uint64_t end = pieces.back().staged + pieces.back().size;
  const size_t workers = std::min<size_t>(util::worker_count(), std::max<uint64_t>(1, end >> 20));
  const uint64_t share = align_up((end + workers - 1) / workers, kGrain);
  util::parallel_for(workers, [&](size_t k) {
    const uint64_t lo = k * share, hi = std::min(end, lo + share);
    for (const Piece& p : pieces) {
      const uint64_t a = std::max(lo, p.staged), b = std::min(hi, p.staged + p.size);
      if (a < b) writes[p.write].fill(p.offset + (a - p.staged), {staging + a, b - a});
    }
  });
}

}  // namespace

void Executable::write_streamed(std::span<const StreamedWrite> writes, uint64_t chunk) {
  Impl& m = *impl_;
  uint64_t total = 0;
  for (const StreamedWrite& w : writes) {
    m.check_slice(w.dst, "write_streamed()");
    if (m.buffers[w.dst.buffer].mapped()) throw Error("write_streamed() is for device-local buffers");
    total += w.dst.size;
  }
  if (total == 0) return;
  chunk = std::max(kGrain, std::min(align_up(chunk, kGrain), align_up(total, kGrain)));
  const std::vector<std::vector<Piece>> chunks = cut(writes, chunk);
  Buffer staging[2] = {{*m.ctx, "staging buffer for weights", chunk, plan::Memory::Upload},
                       {*m.ctx, "staging buffer for weights", chunks.size() > 1 ? chunk : 4, plan::Memory::Upload}};
  auto bytes_of = [&](size_t c) { return static_cast<std::byte*>(staging[c % 2].mapped()); };
  fill(writes, chunks[0], bytes_of(0));
  for (size_t c = 0; c < chunks.size(); ++c) {
    std::future<void> next;
    if (c + 1 < chunks.size())
      next = std::async(std::launch::async, [&, c] { fill(writes, chunks[c + 1], bytes_of(c + 1)); });
    Buffer& from = staging[c % 2];
    from.flush();
    try {
      m.transfer(from, [&](VkCommandBuffer cb) {
        for (const Piece& p : chunks[c]) {
          const plan::Slice& dst = writes[p.write].dst;
          const VkBufferCopy region{p.staged, dst.offset + p.offset, p.size};
          vkCmdCopyBuffer(cb, from.handle(), m.buffers[dst.buffer].handle(), 1, &region);
        }
      });
    } catch (...) {
      if (next.valid()) next.wait();
      throw;
    }
    if (next.valid()) next.get();
  }
}

}  // namespace meganeura::vk
