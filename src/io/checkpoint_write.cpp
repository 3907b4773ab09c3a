// write_checkpoint: a directory as Hugging Face writes it, replaced as one unit. Each file is
// written atomically, but a sharded checkpoint is several files, so a new save never writes
// over a file the current checkpoint uses: its shards take names the current index does not
// name, and the checkpoint switches over at one atomic step — the rename of the file
// Checkpoint::open reads first. Only then are the old files removed. A save killed or failed
// at any point leaves the previous checkpoint whole (plus, at worst, unreferenced files).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "io/file.hpp"
#include "meganeura/error.hpp"
#include "meganeura/io.hpp"

namespace meganeura {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

// The shard files the index in `dir` names (none when there is no index or it cannot be read:
// Checkpoint::open would refuse such a checkpoint anyway).
std::set<std::string> indexed_shards(const fs::path& dir) {
  std::set<std::string> names;
  std::ifstream in(dir / kIndex, std::ios::binary);
  if (!in) return names;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const nlohmann::json index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) return names;
  for (const auto& [tensor, shard] : index["weight_map"].items())
    if (shard.is_string()) names.insert(shard.get<std::string>());
  return names;
}

// Hugging Face's shard names, or — where the current index uses them — the same with ".1",
// ".2", ... before the extension (loaders read names from the index, so any name works).
std::vector<std::string> fresh_shard_names(size_t count, const std::set<std::string>& in_use) {
  for (int variant = 0;; ++variant) {
    std::vector<std::string> names;
    std::string suffix;  // appended, not "." + ...: GCC 12's -O3 -Wrestrict misfires on that
    if (variant) suffix.append(".").append(std::to_string(variant));
    bool clash = false;
    for (size_t i = 0; i < count && !clash; ++i) {
      char name[96];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu%s.safetensors", i + 1, count, suffix.c_str());
      clash = in_use.count(name) > 0;
      names.push_back(name);
    }
    if (!clash) return names;
  }
}

std::vector<TensorFile> split_into_shards(const TensorFile& file, uint64_t max_shard_bytes, uint64_t& total) {
  std::vector<TensorFile> shards(1);
  uint64_t in_shard = 0;
  total = 0;
  for (const auto& [name, t] : file.tensors) {  // std::map: name order
    if (in_shard > 0 && in_shard + t.bytes.size() > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().tensors.emplace(name, t);
    in_shard += t.bytes.size();
    total += t.bytes.size();
  }
  for (TensorFile& shard : shards) shard.metadata = file.metadata;
  return shards;
}

// After the switch-over: the previous checkpoint's files that the new one does not use.
void remove_stale(const fs::path& dir, const std::set<std::string>& stale) {
  std::error_code ec;  // best effort: the new checkpoint is complete already
  for (const std::string& name : stale) fs::remove(dir / name, ec);
}

}  // namespace

void write_checkpoint(const std::string& dir_name, const TensorFile& file, uint64_t max_shard_bytes) {
  const fs::path dir(dir_name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir_name + ": cannot create the checkpoint folder: " + ec.message());
  const std::set<std::string> old_shards = indexed_shards(dir);
  uint64_t total = 0;
  std::vector<TensorFile> shards = split_into_shards(file, max_shard_bytes, total);

  if (shards.size() == 1) {
    write_safetensors((dir / kSingle).string(), shards[0]);  // the switch: open() reads it first
    std::set<std::string> stale = old_shards;
    stale.insert(kIndex);
    remove_stale(dir, stale);
    return;
  }
  const std::vector<std::string> names = fresh_shard_names(shards.size(), old_shards);
  nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", nlohmann::json::object()}};
  size_t written = 0;
  try {
    for (; written < shards.size(); ++written) {
      write_safetensors((dir / names[written]).string(), shards[written]);
      for (const auto& [tensor, t] : shards[written].tensors) index["weight_map"][tensor] = names[written];
    }
    const std::string text = index.dump(2);
    io::write_atomic((dir / kIndex).string(), [&](io::AtomicWriter& w) { w.write(text); });
  } catch (...) {
    // Nothing refers to the shards of this save yet: remove them, keep the previous checkpoint.
    remove_stale(dir, std::set<std::string>(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(written)));
    throw;
  }
  // The index is in place; a single-file checkpoint still wins in Checkpoint::open until it is
  // gone, so removing it is the switch in that case.
  std::set<std::string> stale = old_shards;
  stale.insert(kSingle);
  for (const std::string& n : names) stale.erase(n);
  remove_stale(dir, stale);
}

}  // namespace meganeura
