// File plumbing shared by the readers and writers: a read-only memory map, and an atomic write
// (temp file, fsync, rename, fsync of the directory) so a crash never leaves a half-written file
// where a good one was.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace meganeura::io {

// "No such file or directory" for an errno value.
std::string errno_text(int err);

// Closes a descriptor on every path out of a scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

// Writes all `n` bytes to `fd` (through short writes and EINTR); throws Error naming `path`.
void write_all(int fd, const void* bytes, size_t n, const std::string& path);

// A whole file mapped read-only. Empty files are allowed (data() is null, size() is 0).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path and errno text
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Sink handed to write_atomic's callback; every failure throws Error naming the target path.
class AtomicWriter {
 public:
  void write(const void* bytes, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }

 private:
  friend void write_atomic(const std::string&, const std::function<void(AtomicWriter&)>&);
  AtomicWriter(int fd, const std::string& path) : fd_(fd), path_(path) {}
  int fd_;
  const std::string& path_;
};

// Writes `path` atomically: `fill` writes "<path>.tmp-<tid>" (the calling thread's id; the pid
// on a main thread), which is fsynced, renamed over `path`, and the directory fsynced. On any failure (an exception
// from `fill` included) the temp file is removed and the previous file at `path`, if any, is untouched.
void write_atomic(const std::string& path, const std::function<void(AtomicWriter&)>& fill);

// Test hook (docs/reliability.md): after `bytes` more bytes through AtomicWriter, the write that
// would go past them writes what fits and fails with ENOSPC, as a full disk does — once.
// UINT64_MAX (the default) turns it off.
void fail_writes_after(uint64_t bytes);

}  // namespace meganeura::io
