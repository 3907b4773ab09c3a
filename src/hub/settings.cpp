#include "hub/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace meganeura::hub {

namespace fs = std::filesystem;

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// huggingface_hub's truth values: 1, ON, YES, TRUE in any case.
bool is_true(const char* v) {
  if (!v) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s == "1" || s == "ON" || s == "YES" || s == "TRUE";
}

// "~/x" → "$HOME/x", as Python's expanduser does for these variables.
fs::path expand_home(const std::string& p) {
  const char* home = env("HOME");
  if (home && (p == "~" || p.rfind("~/", 0) == 0)) return fs::path(home) / p.substr(p.size() > 1 ? 2 : 1);
  return p;
}

fs::path hf_home() {
  if (const char* h = env("HF_HOME")) return expand_home(h);
  if (const char* x = env("XDG_CACHE_HOME")) return expand_home(x) / "huggingface";
  const char* home = env("HOME");
  return fs::path(home ? home : ".") / ".cache" / "huggingface";
}

fs::path default_cache() {
  if (const char* c = env("HF_HUB_CACHE")) return expand_home(c);
  if (const char* c = env("HUGGINGFACE_HUB_CACHE")) return expand_home(c);  // the older name
  return hf_home() / "hub";
}

// Tokens are pasted by hand: surrounding whitespace and line breaks are not part of them.
std::string clean_token(std::string t) {
  t.erase(std::remove(t.begin(), t.end(), '\r'), t.end());
  t.erase(std::remove(t.begin(), t.end(), '\n'), t.end());
  const auto first = t.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return t.substr(first, t.find_last_not_of(" \t") - first + 1);
}

std::string default_token() {
  if (const char* t = env("HF_TOKEN")) return clean_token(t);
  if (const char* t = env("HUGGING_FACE_HUB_TOKEN")) return clean_token(t);  // the older name
  const char* path = env("HF_TOKEN_PATH");
  std::ifstream in(path ? expand_home(path) : hf_home() / "token");  // written by `hf auth login`
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return clean_token(text.str());
}

}  // namespace

Settings resolve_settings(const HubOptions& options) {
  Settings s;
  s.endpoint = !options.endpoint.empty() ? options.endpoint
               : env("HF_ENDPOINT")      ? env("HF_ENDPOINT")
                                         : "https://huggingface.co";
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  s.cache = !options.cache_dir.empty() ? options.cache_dir : default_cache();
  s.token = !options.token.empty() ? clean_token(options.token) : default_token();
  // As huggingface_hub: HF_HUB_OFFLINE, or where it is unset the older TRANSFORMERS_OFFLINE.
  s.offline = options.offline || is_true(env("HF_HUB_OFFLINE") ? env("HF_HUB_OFFLINE") : env("TRANSFORMERS_OFFLINE"));
  s.connect_timeout_s = std::max(1, options.connect_timeout_s);
  s.stall_timeout_s = std::max(1, options.stall_timeout_s);
  s.retries = std::max(0, options.retries);
  s.progress = options.progress;
  return s;
}

fs::path cache_dir(const HubOptions& options) { return resolve_settings(options).cache; }

}  // namespace meganeura::hub
