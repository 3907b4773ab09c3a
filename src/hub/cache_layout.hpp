// Where files live in the hub cache. The layout is huggingface_hub's (file_download.py), so the
// Python tools and meganeura share one cache:
//   <cache>/models--<org>--<name>/blobs/<etag>                 the bytes, named by git sha1 or LFS sha256
//                                 blobs/<etag>.incomplete      a download in progress, resumed from its size
//                                 snapshots/<commit>/<file>    symlink to ../../blobs/<etag> (relative)
//                                 refs/<revision>              the commit a branch or tag last resolved to
//                                 .no_exist/<commit>/<file>    empty: that commit has no such file
//   <cache>/.locks/models--<org>--<name>/<etag>.lock          held while that blob downloads
#pragma once
#include <filesystem>
#include <string>

namespace meganeura::hub {

// A full 40-digit lowercase commit hash (what X-Repo-Commit holds), as opposed to a branch or tag.
bool is_commit_hash(const std::string& revision);

// Throw HubError for repo ids and filenames that cannot be a repository or a file in one (and
// could escape the cache directory): "org/name" or "name"; relative paths without "." or "..".
void check_repo_id(const std::string& repo_id);
void check_filename(const std::string& filename);

class RepoCache {
 public:
  RepoCache(const std::filesystem::path& cache, const std::string& repo_id);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const { return root_ / "blobs" / etag; }
  std::filesystem::path incomplete(const std::string& etag) const { return root_ / "blobs" / (etag + ".incomplete"); }
  std::filesystem::path lock(const std::string& etag) const { return lock_dir_ / (etag + ".lock"); }
  std::filesystem::path snapshot(const std::string& commit) const { return root_ / "snapshots" / commit; }
  std::filesystem::path pointer(const std::string& commit, const std::string& filename) const {
    return snapshot(commit) / filename;
  }
  std::filesystem::path ref(const std::string& revision) const { return root_ / "refs" / revision; }
  std::filesystem::path no_exist(const std::string& commit, const std::string& filename) const {
    return root_ / ".no_exist" / commit / filename;
  }

  // The commit `revision` stands for in the cache: itself when it is a commit hash, else the
  // content of refs/<revision>; empty when the cache has no such ref.
  std::string cached_commit(const std::string& revision) const;
  // Records revision -> commit (atomically, only when it changed; nothing for a commit hash).
  void write_ref(const std::string& revision, const std::string& commit) const;
  // Points snapshots/<commit>/<filename> at blobs/<etag>, replacing an older link atomically.
  void link(const std::string& commit, const std::string& filename, const std::string& etag) const;
  // Remembers that `commit` has no `filename` (best effort: a read-only cache just skips it).
  void mark_missing(const std::string& commit, const std::string& filename) const;

 private:
  std::filesystem::path root_, lock_dir_;
};

// create_directories that throws HubError naming the directory.
void make_directories(const std::filesystem::path& dir);

}  // namespace meganeura::hub
