#include "hub/fetch_file.hpp"

#include <optional>

#include "hub/blob_download.hpp"
#include "hub/cache_layout.hpp"

namespace meganeura::hub {

namespace fs = std::filesystem;

namespace {

// The copy of `file` the cache holds for its revision (through refs/<revision>), if any. Throws
// HubFileNotFoundError when the cache remembers that the commit has no such file.
std::optional<CachedFile> from_cache(const RepoCache& cache, const FileRef& file) {
  const std::string commit = cache.cached_commit(file.revision);
  if (commit.empty()) return std::nullopt;
  const fs::path pointer = cache.pointer(commit, file.filename);
  if (fs::exists(pointer)) return CachedFile{pointer, commit};
  if (fs::exists(cache.no_exist(commit, file.filename)))
    throw HubFileNotFoundError("hub: no file " + file.filename + " in " + file.repo_id + " at revision " +
                               file.revision + " (commit " + commit + "; remembered in " +
                               cache.no_exist(commit, file.filename).string() + ")");
  return std::nullopt;
}

// What the cache lacks for `file`: its ref, or the snapshot entry.
std::string cache_miss(const RepoCache& cache, const FileRef& file) {
  const std::string commit = cache.cached_commit(file.revision);
  if (commit.empty())
    return "the cache has no revision " + file.revision + " of " + file.repo_id + " (no " +
           cache.ref(file.revision).string() + ")";
  return "the cache has no " + file.filename + " at commit " + commit + " (no " +
         cache.pointer(commit, file.filename).string() + ")";
}

}  // namespace

CachedFile fetch_file(const Settings& settings, const FileRef& file) {
  check_repo_id(file.repo_id);
  check_filename(file.filename);
  const RepoCache cache(settings.cache, file.repo_id);
  // A commit hash names content that never changes: what the cache knows of it (the file, or
  // that there is none) needs no request at all.
  if (is_commit_hash(file.revision)) {
    if (auto cached = from_cache(cache, file)) return *cached;
  }
  if (settings.offline) {
    if (auto cached = from_cache(cache, file)) return *cached;
    throw NotCached("hub: offline (HF_HUB_OFFLINE) and " + cache_miss(cache, file));
  }

  FileMetadata meta;
  try {
    meta = fetch_metadata(settings, file);
  } catch (const MissingEntry& e) {
    if (!e.commit.empty()) {  // remember it, as huggingface_hub does, so offline runs know too
      cache.mark_missing(e.commit, file.filename);
      try {
        cache.write_ref(file.revision, e.commit);
      } catch (const Error&) {  // a read-only cache: the 404 is what matters
      }
    }
    throw;
  } catch (const HubNotFoundError&) {
    throw;  // the Hub's definite answer: no such repository or revision
  } catch (const HubError& e) {
    // Unreachable, refused (a token problem) or confused: a cached copy still serves.
    if (auto cached = from_cache(cache, file)) return *cached;
    if (auto* network = dynamic_cast<const NetworkError*>(&e))
      throw NotCached("hub: cannot reach the Hub for " + file.describe() + " (" + network->detail + ") and " +
                      cache_miss(cache, file));
    throw;
  }

  cache.write_ref(file.revision, meta.commit);
  const fs::path pointer = cache.pointer(meta.commit, file.filename);
  if (fs::exists(pointer)) return {pointer, meta.commit};  // follows the link: a dangling one is repaired below
  if (!fs::exists(cache.blob(meta.etag))) fetch_blob(settings, cache, file, meta);
  cache.link(meta.commit, file.filename, meta.etag);
  return {pointer, meta.commit};
}

}  // namespace meganeura::hub
