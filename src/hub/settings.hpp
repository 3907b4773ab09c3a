// HubOptions with its empty fields filled from the environment, as huggingface_hub reads it
// (constants.py): HF_ENDPOINT, HF_HUB_CACHE / HF_HOME / XDG_CACHE_HOME, HF_TOKEN and the token
// file, HF_HUB_OFFLINE. Read at each call, so a test (or a long-lived program) can change them.
#pragma once
#include <filesystem>
#include <string>

#include "meganeura/hub.hpp"

namespace meganeura::hub {

struct Settings {
  std::string endpoint;         // no trailing '/'
  std::filesystem::path cache;  // the hub cache: models--org--name folders live here
  std::string token;            // empty: none
  bool offline = false;
  int connect_timeout_s = 10, stall_timeout_s = 30, retries = 3;
  bool progress = true;
};

Settings resolve_settings(const HubOptions& options);

}  // namespace meganeura::hub
