#include "hub/blob_download.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "hub/sha256.hpp"
#include "io/file.hpp"
#include "util/progress.hpp"

namespace meganeura::hub {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kProgressFrom = 1 << 20;  // smaller files arrive before a bar would say anything

using io::Fd;

[[noreturn]] void fail(const std::string& what, const fs::path& path, int err) {
  throw HubError("hub: cannot " + what + " " + path.string() + ": " + io::errno_text(err));
}

// Holds an exclusive flock on `path` (huggingface_hub locks the same file) while it lives.
class BlobLock {
 public:
  BlobLock(const fs::path& path, const FileRef& file) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_.fd < 0) fail("create the lock file", path, errno);
    if (::flock(fd_.fd, LOCK_EX | LOCK_NB) == 0) return;
    std::fprintf(stderr, "meganeura: waiting for another process downloading %s (lock %s)\n", file.describe().c_str(),
                 path.c_str());
    while (::flock(fd_.fd, LOCK_EX) != 0)
      if (errno != EINTR) fail("lock", path, errno);
  }

 private:
  Fd fd_;
};

void truncate_to_zero(int fd, const fs::path& path) {
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) fail("truncate", path, errno);
}

// The first byte position of "Content-Range: bytes <first>-<last>/<size>", or -1.
int64_t range_start(const HttpResponse& r) {
  const std::string v = r.header("content-range");
  if (v.rfind("bytes ", 0) != 0) return -1;
  return std::strtoll(v.c_str() + 6, nullptr, 10);
}

// One GET of what `part` still lacks. Returns false when the part had to be dropped (the server
// refused its Range) and the caller should ask again from the start.
bool transfer(const Settings& settings, const FileRef& file, const FileMetadata& meta, const fs::path& part,
              std::optional<Progress>& bar) {
  Fd out(::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (out.fd < 0) fail("create", part, errno);
  int64_t have = ::lseek(out.fd, 0, SEEK_END);
  if (have < 0) fail("seek in", part, errno);
  if (have > meta.size) {  // longer than the file: not a prefix of it
    truncate_to_zero(out.fd, part);
    have = 0;
  }
  if (have == meta.size) return true;  // complete already; only the checks remain

  // The token goes to the Hub, not to the CDN an LFS file's bytes come from.
  const bool to_hub = url_origin(meta.location) == url_origin(settings.endpoint);
  HttpRequest request{.url = meta.location,
                      .headers = to_hub ? hub_headers(settings) : std::vector<std::string>{},
                      .connect_timeout_s = settings.connect_timeout_s,
                      .stall_timeout_s = settings.stall_timeout_s,
                      .range_from = have};
  int64_t written = have;
  bool range_refused = false;
  BodySink sink{.start =
                    [&](const HttpResponse& r) {
                      if (r.status == 206 && range_start(r) == have) return true;
                      if (r.status == 200) {  // the whole file: the server ignored the Range, or none was asked
                        truncate_to_zero(out.fd, part);
                        written = 0;
                        return true;
                      }
                      range_refused = r.status == 206 || r.status == 416;
                      return false;
                    },
                .write =
                    [&](const char* data, size_t n) {
                      // Never more than announced: a server that sends on would fill the disk.
                      if (static_cast<uint64_t>(n) > static_cast<uint64_t>(meta.size - written)) {
                        truncate_to_zero(out.fd, part);
                        throw HubError("hub: " + file.describe() + " from " + meta.location + " runs past the " +
                                       std::to_string(meta.size) +
                                       " bytes the Hub announced; the download was deleted");
                      }
                      io::write_all(out.fd, data, n, part.string());
                      written += static_cast<int64_t>(n);
                      if (bar) bar->update(written);
                    }};
  const HttpResponse r = http_get(request, sink);
  if (range_refused) {
    truncate_to_zero(out.fd, part);
    return false;
  }
  if (r.status >= 400 && to_hub) throw_http_error(r, meta.location, file, !settings.token.empty());
  if (r.status != 200 && r.status != 206)  // a CDN's refusal: its signed link may have expired
    throw HubError("hub: HTTP " + std::to_string(r.status) + " downloading " + file.describe() + " from " +
                   meta.location + "; run again for a fresh link");
  if (::fsync(out.fd) != 0) fail("write (fsync)", part, errno);
  return true;
}

// Size, then sha256 for LFS files. A part that cannot be the file is deleted; a short one is
// kept to be resumed.
void check(const fs::path& part, const FileRef& file, const FileMetadata& meta) {
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(part, ec));
  if (ec) throw HubError("hub: cannot read " + part.string() + ": " + ec.message());
  if (size < meta.size)
    throw HubError("hub: " + file.describe() + " ended after " + std::to_string(size) + " of " +
                   std::to_string(meta.size) + " bytes (" + meta.location + "); run again to resume from " +
                   part.string());
  if (size > meta.size) {
    fs::remove(part, ec);
    throw HubError("hub: " + file.describe() + " is " + std::to_string(size) + " bytes, but the Hub announced " +
                   std::to_string(meta.size) + " (" + meta.location + "); the download was deleted");
  }
  if (!looks_like_sha256(meta.etag)) return;  // a git blob: its ETag is a sha1 of "blob <size>\0<content>", not checked
  std::string expected = meta.etag;
  std::transform(expected.begin(), expected.end(), expected.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string actual = sha256_file(part);
  if (actual != expected) {
    fs::remove(part, ec);
    throw HubError("hub: " + file.describe() + " is corrupt: its sha256 is " + actual + ", the Hub's is " + expected +
                   " (downloaded from " + meta.location + "); the bad copy was deleted, run again to download it anew");
  }
}

// blobs/<etag>.incomplete -> blobs/<etag>, and the rename made durable.
void publish(const fs::path& part, const fs::path& blob) {
  {
    Fd f(::open(part.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.fd < 0 || ::fsync(f.fd) != 0) fail("sync", part, errno);
  }
  if (::rename(part.c_str(), blob.c_str()) != 0) fail("move the download to", blob, errno);
  Fd dir(::open(blob.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd >= 0) ::fsync(dir.fd);
}

std::string bar_title(const std::string& filename) {
  return filename.size() <= 40 ? filename : "..." + filename.substr(filename.size() - 37);
}

}  // namespace

void fetch_blob(const Settings& settings, const RepoCache& cache, const FileRef& file, const FileMetadata& meta) {
  const fs::path blob = cache.blob(meta.etag), part = cache.incomplete(meta.etag);
  make_directories(blob.parent_path());
  make_directories(cache.lock(meta.etag).parent_path());
  BlobLock lock(cache.lock(meta.etag), file);
  if (fs::exists(blob)) return;  // another process finished it while we waited

  std::optional<Progress> bar;
  if (settings.progress && meta.size >= kProgressFrom) {
    std::error_code ec;
    const auto resumed = fs::exists(part, ec) ? static_cast<int64_t>(fs::file_size(part, ec)) : 0;
    bar.emplace(bar_title(file.filename), meta.size, ProgressUnit::bytes, ec ? 0 : resumed);
  }
  for (int attempt = 0, restarts = 0;;) {
    try {
      if (transfer(settings, file, meta, part, bar)) break;
      if (++restarts > 1)
        throw HubError("hub: the server keeps refusing the download of " + file.describe() + " from " + meta.location);
    } catch (const NetworkError& e) {
      // The bytes that arrived stay in the .incomplete file: the next attempt resumes there.
      if (attempt++ >= settings.retries)
        throw HubError("hub: the download of " + file.describe() + " broke off: " + e.detail +
                       "; what arrived is kept in " + part.string() + ", run again to resume");
      std::this_thread::sleep_for(std::chrono::milliseconds(250 * attempt));
    }
  }
  if (bar) bar->finish();
  check(part, file, meta);
  publish(part, blob);
}

}  // namespace meganeura::hub
