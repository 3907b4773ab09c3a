// Files that outlive the process: the SPIR-V of generated kernels and the driver's pipeline cache.
// Each file is a small header (magic, payload size and checksum, its own name) and the payload,
// written atomically (temp file + rename), so a crash never leaves half a file under a real
// name; a file that fails any check is ignored, and rewritten by the next write.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meganeura::kernels {

// MEGANEURA_CACHE_DIR, else $XDG_CACHE_HOME/meganeura/kernels, else $HOME/.cache/meganeura/kernels
// (read at each call); empty when none is set: nothing is cached on disk then.
std::filesystem::path cache_dir();

// 128 bits of hash (two FNV-1a lanes) of `material` as 32 hex digits: names of cache files.
std::string cache_key(std::string_view material);

// Counts since the process started (tests and MEGANEURA_LOG=kernels read them).
struct DiskCacheStats {
  uint64_t hits = 0, misses = 0, rejected = 0, writes = 0, write_failures = 0;
};
DiskCacheStats disk_cache_stats();

enum class CacheRead { Hit, Missing, Rejected };

class DiskCache {
 public:
  explicit DiskCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  // The payload of file `name`, if it is there and intact (Rejected: there, but corrupt or short).
  CacheRead read(const std::string& name, std::vector<std::byte>& payload) const;
  // Stores `payload` as file `name`, atomically. When the directory cannot be written: false,
  // and one warning per process on stderr (the caller keeps what it made in memory).
  bool write(const std::string& name, std::span<const std::byte> payload) const;
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
};

}  // namespace meganeura::kernels
