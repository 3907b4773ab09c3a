// Checkpoint: safetensors files mapped once, tensors copied (and converted) only when read.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "io/file.hpp"
#include "io/json_read.hpp"
#include "io/safetensors_layout.hpp"
#include "meganeura/error.hpp"
#include "meganeura/io.hpp"
#include "util/half.hpp"

namespace meganeura {

namespace fs = std::filesystem;

namespace {

// fs::exists without its exception: a path the system will not look up (a name longer than the
// file system allows, a folder without permission) is an Error naming `who`, not a filesystem_error.
bool exists(const fs::path& p, const std::string& who) {
  std::error_code ec;
  const bool found = fs::exists(p, ec);
  if (ec) throw Error(who + ": cannot look for " + p.string() + ": " + ec.message());
  return found;
}

}  // namespace

struct Checkpoint::Impl {
  struct File {
    std::string path;
    std::unique_ptr<io::MappedFile> map;
    uint64_t data_start = 0;
  };
  struct Where {
    size_t file;
    io::SafetensorsEntry entry;
  };
  std::string path;  // what the user opened, for errors
  std::vector<File> files;
  std::map<std::string, Where, std::less<>> tensors;

  void add_file(const std::string& file_path) {
    File f{file_path, std::make_unique<io::MappedFile>(file_path), 0};
    std::vector<io::SafetensorsEntry> entries = io::read_layout(file_path, *f.map, f.data_start, nullptr, true);
    files.push_back(std::move(f));
    for (auto& e : entries) {
      auto [it, fresh] = tensors.emplace(e.name, Where{files.size() - 1, e});
      if (!fresh)
        throw Error(path + ": tensor \"" + e.name + "\" is in both " + files[it->second.file].path + " and " +
                    file_path);
    }
  }

  // model.safetensors.index.json: {"weight_map": {"tensor": "shard file", ...}}
  void add_index(const std::string& index_path) {
    std::string text;
    {
      std::ifstream in(index_path, std::ios::binary);
      if (!in) throw Error(index_path + ": cannot be opened");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (in.bad()) throw Error(index_path + ": cannot be read");
    }
    // {"metadata": {..}, "weight_map": {..}}: 2 levels; 64 is plenty and keeps the stack safe.
    const nlohmann::json index = io::parse_json(index_path, "the safetensors index", text, 64);
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error(index_path + ": has no \"weight_map\" object (not a safetensors index)");
    std::map<std::string, std::vector<std::string>> by_shard;
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string())
        throw Error(index_path + ": weight_map entry \"" + name + "\" is not a file name but " +
                    io::describe_json(shard));
      // Shards sit beside the index: no absolute paths, no way out through "..".
      const fs::path shard_path(shard.get_ref<const std::string&>());
      bool inside = !shard_path.empty() && shard_path.is_relative();
      for (const fs::path& part : shard_path) inside = inside && part != "..";
      if (!inside)
        throw Error(index_path + ": weight_map entry \"" + name + "\" names shard \"" + shard.get<std::string>() +
                    "\", which is not a file beside the index");
      by_shard[shard.get<std::string>()].push_back(name);
    }
    const fs::path dir = fs::path(index_path).parent_path();
    for (const auto& [shard, names] : by_shard) {
      const std::string shard_path = (dir / shard).string();
      if (!exists(shard_path, index_path))
        throw Error(index_path + ": shard \"" + shard + "\" (holding \"" + names.front() + "\" and " +
                    std::to_string(names.size() - 1) + " more) is missing: " + shard_path);
      add_file(shard_path);
      for (const std::string& name : names)
        if (!tensors.count(name))
          throw Error(index_path + ": tensor \"" + name + "\" is mapped to " + shard + ", which does not hold it");
    }
  }

  // A tensor to read: present, of a dtype meganeura reads.
  const Where& find(std::string_view name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw NameError(path + ": has no tensor \"" + std::string(name) + "\"");
    if (!it->second.entry.foreign.empty())
      throw DTypeError(files[it->second.file].path + ": tensor \"" + std::string(name) + "\" is " +
                       it->second.entry.foreign + ", which meganeura does not read (" + io::kReadableDtypes + ")");
    return it->second;
  }
};

Checkpoint::Checkpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

Checkpoint Checkpoint::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  fs::path p(path);
  std::error_code not_a_directory;  // then it is read as a file, whose error names the path
  if (fs::is_directory(p, not_a_directory)) {
    if (exists(p / "model.safetensors", path))
      impl->add_file((p / "model.safetensors").string());
    else if (exists(p / "model.safetensors.index.json", path))
      impl->add_index((p / "model.safetensors.index.json").string());
    else
      throw Error(path + ": holds neither model.safetensors nor model.safetensors.index.json");
  } else if (p.extension() == ".json") {
    impl->add_index(path);
  } else {
    impl->add_file(path);
  }
  return Checkpoint(std::move(impl));
}

bool Checkpoint::contains(std::string_view name) const { return impl_->tensors.find(name) != impl_->tensors.end(); }

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, w] : impl_->tensors) out.push_back(name);
  return out;
}

Checkpoint::Info Checkpoint::info(std::string_view name) const {
  const Impl::Where& w = impl_->find(name);
  return {w.entry.dtype, w.entry.shape, impl_->files[w.file].path};
}

const std::string& Checkpoint::path() const { return impl_->path; }

// Element i of a float tensor stored as `from`, as f32.
static float load_float(const std::byte* src, DType from, uint64_t i) {
  if (from == f32) {
    float v;
    std::memcpy(&v, src + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, src + 2 * i, 2);
  return from == f16 ? half::f16_to_f32(h) : half::bf16_to_f32(h);
}

void Checkpoint::read_into(std::string_view name, DType as, uint64_t first, std::span<std::byte> out) const {
  const Impl::Where& w = impl_->find(name);
  const Impl::File& f = impl_->files[w.file];
  const uint64_t n = static_cast<uint64_t>(numel(w.entry.shape)), size = dtype_size(as);
  if (out.size() % size || first + out.size() / size > n)
    throw SizeError(f.path + ": tensor \"" + std::string(name) + "\" has " + std::to_string(n) +
                    " values; cannot read " + std::to_string(out.size() / size) + " from value " +
                    std::to_string(first));
  if (w.entry.dtype != as && (!is_float(w.entry.dtype) || !is_float(as)))
    throw DTypeError(f.path + ": tensor \"" + std::string(name) + "\" is " + std::string(dtype_name(w.entry.dtype)) +
                     " and cannot be read as " + std::string(dtype_name(as)));
  if (out.empty()) return;  // an empty tensor: its file may have no data mapped at all
  const std::byte* src = f.map->data() + f.data_start + w.entry.begin;
  if (w.entry.dtype == as) {
    std::memcpy(out.data(), src + first * size, out.size());
    return;
  }
  const uint64_t count = out.size() / size;
  for (uint64_t i = 0; i < count; ++i) {
    const float v = load_float(src, w.entry.dtype, first + i);
    if (as == f32) {
      std::memcpy(out.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h = as == f16 ? half::f32_to_f16(v) : half::f32_to_bf16(v);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
}

HostTensor Checkpoint::read(std::string_view name, DType as) const {
  const Info i = info(name);
  HostTensor out{i.shape, as, std::vector<std::byte>(static_cast<uint64_t>(numel(i.shape)) * dtype_size(as))};
  read_into(name, as, 0, out.bytes);
  return out;
}

}  // namespace meganeura
