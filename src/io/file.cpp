#include "io/file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "meganeura/error.hpp"

namespace meganeura::io {

std::string errno_text(int err) { return std::generic_category().message(err); }

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(what + " " + path + ": " + errno_text(err));
}

}  // namespace

Fd::~Fd() {
  if (fd >= 0) ::close(fd);
}

void write_all(int fd, const void* bytes, size_t n, const std::string& path) {
  auto* p = static_cast<const char*>(bytes);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("cannot write", path, errno);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

MappedFile::MappedFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO (a shard name in a sharded index can point anywhere) would
  // otherwise wait for a writer forever; only regular files are mapped.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) fail("cannot open", path, errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) fail("cannot read", path, EISDIR);
  if (!S_ISREG(st.st_mode)) throw Error("cannot read " + path + ": not a regular file (a pipe or a device)");
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;  // mmap rejects length 0
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) fail("cannot map", path, errno);
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

namespace {
std::atomic<uint64_t> write_budget{UINT64_MAX};  // fail_writes_after
}

void fail_writes_after(uint64_t bytes) { write_budget = bytes; }

void AtomicWriter::write(const void* bytes, size_t n) {
  uint64_t budget = write_budget;
  while (budget != UINT64_MAX && !write_budget.compare_exchange_weak(budget, budget >= n ? budget - n : UINT64_MAX)) {}
  if (budget != UINT64_MAX && budget < n) {  // the injected full disk
    write_all(fd_, bytes, budget, path_);
    fail("cannot write", path_, ENOSPC);
  }
  write_all(fd_, bytes, n, path_);
}

void write_atomic(const std::string& path, const std::function<void(AtomicWriter&)>& fill) {
  // The thread id, not the process id: two threads saving the same path must not share (and
  // truncate) one temp file. A process's main thread has its pid as id.
  const std::string tmp = path + ".tmp-" + std::to_string(::gettid());
  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)};
  if (f.fd < 0) fail("cannot write", path, errno);
  try {
    AtomicWriter w(f.fd, path);
    fill(w);
    // The data must be on disk before the rename makes it visible under `path`.
    if (::fsync(f.fd) != 0) fail("cannot write (fsync)", path, errno);
    if (::close(f.release()) != 0) fail("cannot write (close)", path, errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot replace", path, errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename itself is only durable once the directory entry is: fsync the directory.
  std::string dir = std::filesystem::path(path).parent_path().string();
  Fd d{::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0) fail("cannot sync the directory of", path, errno);
  if (::fsync(d.fd) != 0 && errno != EINVAL)
    fail("cannot sync the directory of", path, errno);  // EINVAL: fs without dir fsync
}

}  // namespace meganeura::io
