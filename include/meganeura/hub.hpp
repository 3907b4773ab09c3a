// Files of Hugging Face Hub repositories, downloaded into the cache that huggingface_hub (and so
// transformers) uses — ~/.cache/huggingface/hub — in the same layout, so a model fetched by
// either is found by the other. Downloads resume where an interrupted one stopped, and are
// checked (size, and sha256 for files stored in Git LFS) before they enter the cache.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "meganeura/error.hpp"

namespace meganeura::hub {

// Empty fields fall back to the environment (docs/environment.md), read at each call.
struct HubOptions {
  std::string revision = "main";    // a branch, a tag or a full commit hash
  std::string endpoint;             // empty: $HF_ENDPOINT, else https://huggingface.co
  std::filesystem::path cache_dir;  // empty: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
  std::string token;                // empty: $HF_TOKEN, else the token file ($HF_HOME/token)
  bool offline = false;             // never use the network (also HF_HUB_OFFLINE=1): the cache only
  bool progress = true;             // a progress line on stderr for each file of 1 MiB or more
  int retries = 3;                  // times a transfer that broke off is resumed within one call
  int connect_timeout_s = 10;       // to open a connection
  int stall_timeout_s = 30;         // a request slower than 1 byte/s over this long is abandoned
};

// The cache directory these options resolve to (it may not exist yet).
std::filesystem::path cache_dir(const HubOptions& options = {});

// One file of a repository ("org/name" or "name"), like huggingface_hub.hf_hub_download: its path
// in the cache, snapshots/<commit>/<filename>, a symlink to the blob. A file already in the cache
// costs one HEAD request (none offline, or when the revision is a commit hash). When the Hub
// cannot be reached, a copy cached for that revision is returned. Throws HubFileNotFoundError,
// HubNotFoundError, HubAuthError or HubError, naming the repository, the file and the URL.
std::filesystem::path download(const std::string& repo_id, const std::string& filename, const HubOptions& options = {});

// The files a model needs, all at one commit; returns the snapshot directory
// (<cache>/models--org--name/snapshots/<commit>). With no `filenames`: config.json and
// tokenizer.json; tokenizer_config.json and generation_config.json where the repository has
// them; and model.safetensors, or else model.safetensors.index.json and every shard its
// weight_map names. Otherwise exactly `filenames`, each required.
std::filesystem::path snapshot(const std::string& repo_id, const std::vector<std::string>& filenames = {},
                               const HubOptions& options = {});

}  // namespace meganeura::hub
