#include "kernels/disk_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "util/log_topic.hpp"

namespace meganeura::kernels {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'M', 'N', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr uint64_t kMaxPayload = uint64_t{1} << 30;  // anything larger is not ours

struct Counters {
  std::atomic<uint64_t> hits{0}, misses{0}, rejected{0}, writes{0}, write_failures{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

uint64_t fnv1a(std::string_view bytes, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}
uint64_t checksum(std::span<const std::byte> p) {
  return fnv1a({reinterpret_cast<const char*>(p.data()), p.size()}, 0xcbf29ce484222325ull);
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void log(const std::string& msg) {
  if (util::log_topic("kernels")) std::fprintf(stderr, "meganeura: kernel cache: %s\n", msg.c_str());
}

// The header after the magic: payload size, payload checksum, length of the name, the name.
struct Header {
  uint64_t size = 0, sum = 0;
  uint32_t name_length = 0;
};

}  // namespace

fs::path cache_dir() {
  if (const char* d = env("MEGANEURA_CACHE_DIR")) return d;
  if (const char* x = env("XDG_CACHE_HOME")) return fs::path(x) / "meganeura" / "kernels";
  if (const char* h = env("HOME")) return fs::path(h) / ".cache" / "meganeura" / "kernels";
  return {};
}

std::string cache_key(std::string_view material) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(material, 0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(fnv1a(material, 0x84222325cbf29ce4ull)));
  return buf;
}

DiskCacheStats disk_cache_stats() {
  const Counters& c = counters();
  return {c.hits.load(), c.misses.load(), c.rejected.load(), c.writes.load(), c.write_failures.load()};
}

CacheRead DiskCache::read(const std::string& name, std::vector<std::byte>& payload) const {
  if (dir_.empty()) return CacheRead::Missing;
  const fs::path file = path(name);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    ++counters().misses;
    return CacheRead::Missing;
  }
  auto reject = [&](const char* why) {
    ++counters().rejected;
    log("ignoring " + file.string() + " (" + why + ")");
    return CacheRead::Rejected;
  };
  char magic[sizeof kMagic];
  Header h;
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    return reject("not a cache file");
  if (!in.read(reinterpret_cast<char*>(&h.size), 8) || !in.read(reinterpret_cast<char*>(&h.sum), 8) ||
      !in.read(reinterpret_cast<char*>(&h.name_length), 4) || h.name_length != name.size() || h.size > kMaxPayload)
    return reject("bad header");
  std::string stored(name.size(), '\0');
  if (!in.read(stored.data(), static_cast<std::streamsize>(stored.size())) || stored != name)
    return reject("written for another key");
  payload.resize(h.size);
  if (!in.read(reinterpret_cast<char*>(payload.data()), static_cast<std::streamsize>(h.size))) return reject("short");
  if (in.peek() != std::char_traits<char>::eof()) return reject("trailing bytes");
  if (checksum(payload) != h.sum) return reject("checksum mismatch");
  ++counters().hits;
  log("read " + file.string());
  return CacheRead::Hit;
}

bool DiskCache::write(const std::string& name, std::span<const std::byte> payload) const {
  if (dir_.empty()) return false;
  static std::atomic<uint64_t> serial{0};
  const fs::path file = path(name);
  const fs::path tmp = path(name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string why = ec ? ec.message() : "";
  if (why.empty()) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    Header h{payload.size(), checksum(payload), static_cast<uint32_t>(name.size())};
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(&h.size), 8);
    out.write(reinterpret_cast<const char*>(&h.sum), 8);
    out.write(reinterpret_cast<const char*>(&h.name_length), 4);
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    out.write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(payload.size()));
    out.close();
    if (!out)
      why = "cannot write " + tmp.string();
    else
      fs::rename(tmp, file, ec);  // atomic: readers see the old file or the whole new one
    if (why.empty() && ec) why = ec.message();
  }
  if (!why.empty()) {
    fs::remove(tmp, ec);
    ++counters().write_failures;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "meganeura: warning: cannot write the kernel cache in %s (%s); generated kernels are kept in "
                   "memory for this process only (set MEGANEURA_CACHE_DIR to a writable directory)\n",
                   dir_.c_str(), why.c_str());
    return false;
  }
  ++counters().writes;
  log("wrote " + file.string());
  return true;
}

}  // namespace meganeura::kernels
