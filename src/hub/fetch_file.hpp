// One file of a repository into the cache, as huggingface_hub's hf_hub_download decides it:
// a commit-hash revision already cached needs no request; offline, the cache alone answers;
// otherwise a HEAD says which commit and blob the revision means, the blob is downloaded unless
// the cache has it, and the snapshot link and the ref are written. When the Hub cannot be
// reached (or refuses: 401, 5xx), a copy cached for the revision is used.
#pragma once
#include <filesystem>
#include <string>

#include "hub/metadata.hpp"
#include "hub/settings.hpp"

namespace meganeura::hub {

struct CachedFile {
  std::filesystem::path path;  // snapshots/<commit>/<filename>
  std::string commit;
};

// Offline, or the Hub unreachable, and the cache has no copy; the message says what is missing.
struct NotCached : HubError {
  using HubError::HubError;
};

CachedFile fetch_file(const Settings& settings, const FileRef& file);

}  // namespace meganeura::hub
