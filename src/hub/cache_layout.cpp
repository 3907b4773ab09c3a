#include "hub/cache_layout.hpp"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <system_error>

#include "io/file.hpp"
#include "meganeura/error.hpp"

namespace meganeura::hub {

namespace fs = std::filesystem;

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// huggingface_hub's repo_folder_name: "models--org--name" (the Hub forbids "--" in ids).
std::string folder_name(const std::string& repo_id) {
  std::string name = "models--" + repo_id;
  for (size_t at; (at = name.find('/')) != std::string::npos;) name.replace(at, 1, "--");
  return name;
}

}  // namespace

bool is_commit_hash(const std::string& revision) {
  if (revision.size() != 40) return false;
  for (char c : revision)
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  return true;
}

// The Hub's rule (huggingface_hub validate_repo_id): one or two parts of [A-Za-z0-9_.-] that
// start and end with a letter, digit or '_', no "--" or "..", at most 96 characters.
void check_repo_id(const std::string& repo_id) {
  bool ok = !repo_id.empty() && repo_id.size() <= 96 && repo_id.find("--") == std::string::npos &&
            repo_id.find("..") == std::string::npos;
  std::istringstream parts(repo_id);
  int count = 0;
  for (std::string part; ok && std::getline(parts, part, '/');) {
    ++count;
    ok = !part.empty() && word_char(part.front()) && word_char(part.back());
    for (char c : part) ok = ok && (word_char(c) || c == '-' || c == '.');
  }
  if (!ok || count < 1 || count > 2 || repo_id.back() == '/')
    throw HubError("hub: '" + repo_id +
                   "' is not a repository id: expected \"org/name\" or \"name\" (letters, digits, '_', '-', '.')");
}

void check_filename(const std::string& filename) {
  bool ok = !filename.empty() && filename.front() != '/' && filename.back() != '/';
  std::istringstream parts(filename);
  for (std::string part; ok && std::getline(parts, part, '/');) ok = !part.empty() && part != "." && part != "..";
  if (!ok)
    throw HubError("hub: '" + filename + "' is not a file name in a repository (a relative path without '.' or '..')");
}

void make_directories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw HubError("hub: cannot create directory " + dir.string() + ": " + ec.message());
}

RepoCache::RepoCache(const fs::path& cache, const std::string& repo_id)
    : root_(cache / folder_name(repo_id)), lock_dir_(cache / ".locks" / folder_name(repo_id)) {}

std::string RepoCache::cached_commit(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(ref(revision));
  std::string commit;
  in >> commit;
  return is_commit_hash(commit) ? commit : "";
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit || cached_commit(revision) == commit) return;  // a read-only cache stays usable
  make_directories(ref(revision).parent_path());
  io::write_atomic(ref(revision).string(),
                   [&](io::AtomicWriter& w) { w.write(commit); });  // no newline, as huggingface_hub
}

void RepoCache::link(const std::string& commit, const std::string& filename, const std::string& etag) const {
  const fs::path at = pointer(commit, filename);
  make_directories(at.parent_path());
  // Relative, so the cache keeps working when it is moved or mounted elsewhere.
  const fs::path target = blob(etag).lexically_relative(at.parent_path());
  // A new link under a temporary name, renamed over the old one: never a moment without a link.
  const fs::path tmp = at.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, at, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw HubError("hub: cannot link " + at.string() + " to " + target.string() + ": " + ec.message());
  }
}

void RepoCache::mark_missing(const std::string& commit, const std::string& filename) const {
  std::error_code ec;
  const fs::path at = no_exist(commit, filename);
  fs::create_directories(at.parent_path(), ec);
  if (!ec) std::ofstream{at};
}

}  // namespace meganeura::hub
