// safetensors (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length N,
// N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {..}},
// then the data buffer the offsets index into. Files come from the network, so every field is
// checked before it is trusted, and each error names the file and the tensor.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "io/file.hpp"
#include "io/json_read.hpp"
#include "io/safetensors_layout.hpp"
#include "meganeura/error.hpp"
#include "meganeura/io.hpp"

namespace meganeura {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using nlohmann::json;
using Entry = io::SafetensorsEntry;

// A header needs 3 levels ({name: {shape: [..]}}); deeper nesting is refused before it is built.
constexpr int kMaxHeaderDepth = 64;

using io::describe_json;

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "F32") return f32;
  if (s == "F16") return f16;
  if (s == "BF16") return bf16;
  if (s == "I32") return i32;
  if (s == "U32") return u32;
  return std::nullopt;
}

// The other dtypes of the safetensors format, with their element sizes: checked like the rest,
// never read (a Checkpoint keeps them so that the tensors beside them load).
std::optional<uint64_t> foreign_size(const std::string& s) {
  for (const auto& [tag, bytes] :
       {std::pair{"F64", 8}, std::pair{"I64", 8}, std::pair{"U64", 8}, std::pair{"I16", 2}, std::pair{"U16", 2},
        std::pair{"I8", 1}, std::pair{"U8", 1}, std::pair{"BOOL", 1}, std::pair{"F8_E4M3", 1}, std::pair{"F8_E5M2", 1}})
    if (s == tag) return static_cast<uint64_t>(bytes);
  return std::nullopt;
}

const char* dtype_tag(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    case DType::u32: return "U32";
  }
  return "?";
}

// A string from the file for a message: at most 40 bytes of it.
std::string clip(const std::string& s) {
  return s.size() <= 40 ? s : s.substr(0, 40) + "... (" + std::to_string(s.size()) + " bytes)";
}

uint64_t read_le64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Errors all start with the path, as a reader of a log wants to see which file broke.
struct FileErrors {
  const std::string& path;
  [[noreturn]] void fail(const std::string& msg) const { throw Error(path + ": " + msg); }
  [[noreturn]] void fail(const std::string& name, const std::string& msg) const {
    fail("tensor \"" + name + "\" " + msg);
  }
};

uint64_t as_u64(const json& v, const FileErrors& e, const std::string& name, const char* field) {
  if (!v.is_number_unsigned())
    e.fail(name, std::string("has a ") + field + " entry that is not a non-negative integer: " + describe_json(v));
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, const FileErrors& e, bool keep_foreign) {
  if (!v.is_object()) e.fail(name, "is not a JSON object in the header");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) e.fail(name, std::string("has no \"") + key + "\" in the header");
  const json& dt = v["dtype"];
  if (!dt.is_string()) e.fail(name, "has a dtype that is not a string: " + describe_json(dt));
  const std::string& tag = dt.get_ref<const std::string&>();
  auto dtype = parse_dtype(tag);
  const bool foreign = !dtype && keep_foreign && foreign_size(tag);
  if (!dtype && !foreign)
    e.fail(name, "has dtype " + clip(tag) + ", which meganeura does not read (supported: " + io::kReadableDtypes + ")");
  const json& sh = v["shape"];
  if (!sh.is_array()) e.fail(name, "has a shape that is not an array: " + describe_json(sh));
  Shape shape;
  for (const json& d : sh) {
    uint64_t n = as_u64(d, e, name, "shape");
    if (n > (uint64_t{1} << 62)) e.fail(name, "has an absurd dimension " + std::to_string(n));
    shape.push_back(static_cast<int64_t>(n));
  }
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    e.fail(name, "has data_offsets that are not [begin, end]: " + describe_json(off));
  uint64_t begin = as_u64(off[0], e, name, "data_offsets"), end = as_u64(off[1], e, name, "data_offsets");
  if (end < begin)
    e.fail(name,
           "has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") that end before they begin");
  return {name, dtype.value_or(f32), std::move(shape), begin, end, foreign ? tag : ""};
}

std::string tag_of(const Entry& t) { return t.foreign.empty() ? dtype_tag(t.dtype) : t.foreign; }

// Bytes the shape and dtype need, or nullopt on overflow.
std::optional<uint64_t> expected_bytes(const Entry& t) {
  uint64_t n = t.foreign.empty() ? dtype_size(t.dtype) : *foreign_size(t.foreign);
  for (int64_t d : t.shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  return n;
}

std::vector<Entry> parse_header(const json& header, TensorFile& out, const FileErrors& e, bool keep_foreign) {
  if (!header.is_object()) e.fail("the safetensors header is not a JSON object");
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) e.fail("__metadata__ is not a JSON object");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) e.fail("__metadata__ entry \"" + k + "\" is not a string: " + describe_json(s));
        out.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(name, v, e, keep_foreign));
  }
  return entries;
}

// Checks offsets against the file and each other; `data_start` is the data buffer's file offset.
void check_layout(std::vector<Entry>& entries, uint64_t data_start, uint64_t file_size, const FileErrors& e) {
  const uint64_t data_size = file_size - data_start;
  for (const Entry& t : entries) {
    if (t.end > data_size)
      e.fail(t.name, "claims bytes [" + std::to_string(data_start + t.begin) + ", " +
                         std::to_string(data_start + t.end) + ") but the file is " + std::to_string(file_size) +
                         " bytes long (truncated download?)");
    auto need = expected_bytes(t);
    if (!need || *need != t.end - t.begin)
      e.fail(t.name, "has shape " + shape_str(t.shape) + " and dtype " + tag_of(t) + ", which take " +
                         (need ? std::to_string(*need) : std::string("more than 2^64")) +
                         " bytes, but its data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                         ") hold " + std::to_string(t.end - t.begin));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  const Entry* prev = nullptr;  // the last non-empty tensor; empty ones cannot overlap anything
  for (const Entry& t : entries) {
    if (t.begin == t.end) continue;
    if (prev && t.begin < prev->end)
      e.fail(t.name, "has data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                         ") that overlap those of tensor \"" + prev->name + "\" [" + std::to_string(prev->begin) +
                         ", " + std::to_string(prev->end) + ")");
    prev = &t;
  }
}

}  // namespace

namespace io {

std::vector<SafetensorsEntry> read_layout(const std::string& path, const MappedFile& file, uint64_t& data_start,
                                          std::map<std::string, std::string>* metadata, bool keep_foreign) {
  const FileErrors e{path};
  const uint64_t size = file.size();
  if (size < 8)
    e.fail("is " + std::to_string(size) + " bytes long, too short for a safetensors file (8-byte header length first)");
  const uint64_t n = read_le64(file.data());
  if (n > size - 8)
    e.fail("the header length is " + std::to_string(n) + " bytes but only " + std::to_string(size - 8) +
           " bytes follow it (not a safetensors file, or truncated)");
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  const json header = io::parse_json(path, "the safetensors header", std::string_view(text, n), kMaxHeaderDepth);
  TensorFile meta;
  std::vector<Entry> entries;
  try {
    entries = parse_header(header, meta, e, keep_foreign);
  } catch (const json::exception& err) {  // none expected: every access is checked first
    e.fail(std::string("the safetensors header cannot be read: ") + err.what());
  }
  check_layout(entries, 8 + n, size, e);
  data_start = 8 + n;
  if (metadata) *metadata = std::move(meta.metadata);
  return entries;
}

}  // namespace io

TensorFile read_safetensors(const std::string& path) {
  io::MappedFile file(path);
  uint64_t data_start = 0;
  TensorFile out;
  std::vector<io::SafetensorsEntry> entries = io::read_layout(path, file, data_start, &out.metadata);
  const std::byte* data = file.data() + data_start;
  for (io::SafetensorsEntry& t : entries) {
    HostTensor h{std::move(t.shape), t.dtype, std::vector<std::byte>(data + t.begin, data + t.end)};
    out.tensors.emplace(t.name, std::move(h));
  }
  return out;
}

void write_safetensors(const std::string& path, const TensorFile& file) {
  // Data order: 4-byte dtypes before 2-byte ones, then by name (as the reference writer does), so
  // every tensor is aligned to its element size with no holes between tensors, which the
  // reference reader rejects.
  std::vector<const std::pair<const std::string, HostTensor>*> order;
  for (const auto& kv : file.tensors) {
    const HostTensor& t = kv.second;
    if (kv.first == "__metadata__") throw Error(path + ": \"__metadata__\" is reserved and cannot name a tensor");
    if (t.bytes.size() != static_cast<size_t>(t.numel()) * dtype_size(t.dtype))
      throw SizeError(path + ": tensor \"" + kv.first + "\" of shape " + shape_str(t.shape) + " and dtype " +
                      std::string(dtype_name(t.dtype)) + " holds " + std::to_string(t.bytes.size()) + " bytes");
    order.push_back(&kv);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return dtype_size(a->second.dtype) > dtype_size(b->second.dtype); });

  json header = json::object();  // keys come out sorted by name
  uint64_t at = 0;
  for (auto* kv : order) {
    const HostTensor& t = kv->second;
    header[kv->first] = {
        {"dtype", dtype_tag(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes.size()}}};
    at += t.bytes.size();
  }
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format allows trailing spaces: aligns the data to 8
  uint64_t n = text.size();

  // Test hook (docs/environment.md): die halfway through the data, as a kill mid-save would.
  const char* interrupt = std::getenv("MEGANEURA_TEST_INTERRUPT_SAVE");
  const bool die_midway = interrupt && std::string(interrupt) == "1";

  io::write_atomic(path, [&](io::AtomicWriter& w) {
    w.write(&n, 8);
    w.write(text);
    uint64_t written = 0;
    for (auto* kv : order) {
      const auto& bytes = kv->second.bytes;
      if (die_midway && written + bytes.size() >= at / 2) {
        w.write(bytes.data(), at / 2 - written);
        std::_Exit(86);
      }
      w.write(bytes.data(), bytes.size());
      written += bytes.size();
    }
    if (die_midway) std::_Exit(86);  // no data at all
  });
}

}  // namespace meganeura
