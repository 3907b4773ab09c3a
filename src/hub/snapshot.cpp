// hub::download and hub::snapshot: the public calls. A snapshot resolves its revision once, with
// the first file, and fetches every other file at that commit, so the files belong together even
// if the branch moves meanwhile (and, once cached, cost no request at all).
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "hub/cache_layout.hpp"
#include "hub/fetch_file.hpp"

namespace meganeura::hub {

namespace fs = std::filesystem;

namespace {

// What a model for meganeura needs besides its weights; the optional ones may be absent.
const char* const kRequired[] = {"config.json", "tokenizer.json"};
const char* const kOptional[] = {"tokenizer_config.json", "generation_config.json"};

// The shard files a model.safetensors.index.json lists in its weight_map, each once.
std::set<std::string> shards_of(const fs::path& index) {
  std::ifstream in(index);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw HubError("hub: " + index.string() + " is not a safetensors index: no \"weight_map\" object");
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      throw HubError("hub: " + index.string() + ": the shard of tensor \"" + tensor + "\" is not a file name");
    shards.insert(shard.get<std::string>());
  }
  if (shards.empty()) throw HubError("hub: " + index.string() + " lists no shards in its weight_map");
  return shards;
}

}  // namespace

fs::path download(const std::string& repo_id, const std::string& filename, const HubOptions& options) {
  return fetch_file(resolve_settings(options), {repo_id, options.revision, filename}).path;
}

fs::path snapshot(const std::string& repo_id, const std::vector<std::string>& filenames, const HubOptions& options) {
  const Settings settings = resolve_settings(options);
  const std::string first = filenames.empty() ? kRequired[0] : filenames.front();
  const std::string commit = fetch_file(settings, {repo_id, options.revision, first}).commit;
  auto fetch = [&](const std::string& name) { return fetch_file(settings, {repo_id, commit, name}).path; };
  auto fetch_if_there = [&](const std::string& name) -> std::optional<fs::path> {
    try {
      return fetch(name);
    } catch (const HubFileNotFoundError&) {  // the repository has none
    } catch (const NotCached&) {
      if (!settings.offline) throw;  // the Hub is unreachable: say so, not "missing"
    }
    return std::nullopt;  // offline: never fetched, so nothing to use
  };

  if (!filenames.empty()) {
    for (size_t i = 1; i < filenames.size(); ++i) fetch(filenames[i]);
  } else {
    for (const char* name : kRequired) fetch(name);
    for (const char* name : kOptional) fetch_if_there(name);
    // One file of weights, or an index and the shards it names.
    if (!fetch_if_there("model.safetensors")) {
      const auto index = fetch_if_there("model.safetensors.index.json");
      const std::string neither = repo_id +
                                  " has neither model.safetensors nor model.safetensors.index.json at revision " +
                                  options.revision + " (commit " + commit + ")";
      if (!index && settings.offline) throw NotCached("hub: offline (HF_HUB_OFFLINE) and the cache of " + neither);
      if (!index) throw HubFileNotFoundError("hub: " + neither);
      for (const auto& shard : shards_of(*index)) fetch(shard);
    }
  }
  return RepoCache(settings.cache, repo_id).snapshot(commit);
}

}  // namespace meganeura::hub
