// safetensors read/write (round trip, a file written by hand to the spec, every malformed-file
// class, atomic save under a kill), and the training-curve and progress-line writers.
#include "meganeura/io.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "file_fixtures.hpp"
#include "train/curves.hpp"
#include "util/progress.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

template <class T>
HostTensor tensor(Shape shape, DType dtype, std::vector<T> values) {
  HostTensor t{std::move(shape), dtype, std::vector<std::byte>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file from a header text and a data buffer, exactly as given.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

void expect_same(const TensorFile& a, const TensorFile& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    ASSERT_TRUE(b.tensors.count(name)) << name;
    const HostTensor& u = b.tensors.at(name);
    EXPECT_EQ(t.shape, u.shape) << name;
    EXPECT_EQ(t.dtype, u.dtype) << name;
    EXPECT_EQ(t.bytes, u.bytes) << name;
  }
}

TensorFile sample_file() {
  TensorFile f;
  f.tensors["w.f32"] = tensor<float>({2, 3}, f32, {1, -2, 3.5f, 0, 1e-30f, -7});
  f.tensors["w.f16"] = tensor<uint16_t>({3}, f16, {0x3c00, 0xc000, 0x7bff});          // 1, -2, 65504
  f.tensors["w.bf16"] = tensor<uint16_t>({1, 1, 3}, bf16, {0x3f80, 0x4049, 0xff80});  // 1, 3.14, -inf
  f.tensors["idx.i32"] = tensor<int32_t>({4}, i32, {0, -1, 2147483647, -100});
  f.tensors["mask.u32"] = tensor<uint32_t>({2}, u32, {0xffffffffu, 7});
  f.tensors["empty"] = tensor<float>({0, 5}, f32, {});
  f.tensors["scalar"] = tensor<float>({}, f32, {42.0f});
  f.metadata = {{"format", "pt"}, {"step", "1200"}};
  return f;
}

TEST(Safetensors, RoundTripsEveryDtypeMetadataEmptyAndScalar) {
  TempDir dir;
  TensorFile f = sample_file();
  write_safetensors(dir / "m.safetensors", f);
  expect_same(f, read_safetensors(dir / "m.safetensors"));
  // Overwriting an existing file works, and leaves no temp file behind.
  f.tensors.erase("w.f32");
  write_safetensors(dir / "m.safetensors", f);
  expect_same(f, read_safetensors(dir / "m.safetensors"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

// write_checkpoint shards past the limit; Checkpoint reads every tensor back from the index,
// converting bf16 to f32 on request; one small file when it fits.
TEST(Checkpoint, ShardedWriteAndMappedRead) {
  const std::string dir = ::testing::TempDir() + "meganeura_ckpt_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  TensorFile f;
  for (int i = 0; i < 7; ++i)
    f.tensors["layer." + std::to_string(i)] = HostTensor::f32s({3, 100}, std::vector<float>(300, 0.5f * i));
  f.tensors["half"] =
      HostTensor{{2}, bf16, {std::byte{0x80}, std::byte{0x3f}, std::byte{0x00}, std::byte{0xc0}}};  // 1, -2
  write_checkpoint(dir, f, 2500);  // 1200 bytes a tensor: two per shard
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model-00004-of-00004.safetensors"));
  const Checkpoint c = Checkpoint::open(dir);
  EXPECT_EQ(c.names().size(), 8u);
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ(c.read("layer." + std::to_string(i), f32).bytes, f.tensors["layer." + std::to_string(i)].bytes);
  EXPECT_EQ(c.read("half", f32).to_f32(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(c.info("half").dtype, bf16);
  EXPECT_THAT(c.info("layer.6").file, HasSubstr("model-00004-of-00004"));
  EXPECT_THROW(c.read("missing", f32), NameError);
  std::filesystem::remove_all(dir);
  write_checkpoint(dir, f);  // fits: one file
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  EXPECT_EQ(Checkpoint::open(dir).names().size(), 8u);
  std::filesystem::remove_all(dir);
}

// Empty tensors read through a mapped checkpoint, as themselves and converted, in a file whose
// data section is empty and in one beside other data: no bytes, no copy from an unmapped file
// (the fuzzer found memcpy(nullptr, ..., 0) there), and an integer tensor still refuses f32.
TEST(Checkpoint, EmptyTensorsReadAsEmpty) {
  TempDir dir;
  for (bool with_data : {false, true}) {
    TensorFile f;
    f.tensors["none"] = HostTensor{{0, 3}, f16, {}};
    f.tensors["ints"] = HostTensor{{0}, i32, {}};
    if (with_data) f.tensors["x"] = HostTensor::f32s({2}, std::vector<float>{1.0f, 2.0f});
    const std::string path = dir / (with_data ? "with.safetensors" : "empty.safetensors");
    write_safetensors(path, f);
    const Checkpoint c = Checkpoint::open(path);
    EXPECT_TRUE(c.read("none", f16).bytes.empty());
    EXPECT_TRUE(c.read("none", f32).bytes.empty());
    EXPECT_EQ(c.read("none", f32).shape, (Shape{0, 3}));
    EXPECT_TRUE(c.read("ints", i32).bytes.empty());
    EXPECT_THROW(c.read("ints", f32), DTypeError);
  }
}

TEST(Safetensors, WrittenLayoutFollowsTheSpec) {
  TempDir dir;
  TensorFile f;
  f.tensors["b"] = tensor<uint16_t>({1}, f16, {0x3c00});
  f.tensors["a"] = tensor<float>({2}, f32, {1.0f, 2.0f});
  write_safetensors(dir / "x.safetensors", f);
  const std::string bytes = read_bytes(dir / "x.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "the data buffer starts 8-byte aligned";
  const std::string header = bytes.substr(8, n);
  // Sorted keys, f32 data before f16 (natural alignment, no holes), padded with spaces.
  EXPECT_EQ(
      header.substr(0, header.find_last_not_of(' ') + 1),
      R"({"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},"b":{"data_offsets":[8,10],"dtype":"F16","shape":[1]}})");
  EXPECT_EQ(bytes.substr(8 + n), std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x3c", 10));
}

TEST(Safetensors, ReadsAFileWrittenByHandToTheSpec) {
  // Unpadded header, keys in no particular order, data in a different order than the header.
  const std::string header =
      R"({"weight":{"dtype":"F32","shape":[2,2],"data_offsets":[4,20]},)"
      R"("__metadata__":{"format":"pt"},"bias":{"shape":[2],"dtype":"BF16","data_offsets":[0,4]},)"
      R"("labels":{"dtype":"I32","shape":[1],"data_offsets":[20,24]}})";
  const std::string data = std::string("\x80\x3f\x00\xc0", 4) +                  // bias bf16: 1, -2
                           std::string("\x00\x00\xc0\x3f\x00\x00\x80\xbf", 8) +  // 1.5, -1
                           std::string("\x00\x00\x00\x00\x00\x00\x20\x41", 8) +  // 0, 10
                           std::string("\xfd\xff\xff\xff", 4);                   // -3
  TempDir dir;
  write_bytes(dir / "hand.safetensors", safetensors_bytes(header, data));
  TensorFile f = read_safetensors(dir / "hand.safetensors");
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors["weight"].shape, (Shape{2, 2}));
  EXPECT_EQ(f.tensors["weight"].to_f32(), (std::vector<float>{1.5f, -1.0f, 0.0f, 10.0f}));
  EXPECT_EQ(f.tensors["bias"].dtype, bf16);
  EXPECT_EQ(f.tensors["bias"].to_f32(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.tensors["labels"].dtype, i32);
  EXPECT_EQ(f.tensors["labels"].data<int32_t>()[0], -3);
}

// Writes a file from header text and data and returns read_safetensors' error message.
std::string read_error(const TempDir& dir, const std::string& header, const std::string& data = std::string(64, '\0')) {
  const std::string path = dir / "bad.safetensors";
  write_bytes(path, safetensors_bytes(header, data));
  std::string msg = error_of([&] { read_safetensors(path); });
  EXPECT_THAT(msg, StartsWith("meganeura: " + path + ": "));
  return msg;
}

TEST(SafetensorsErrors, TruncatedData) {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  TensorFile f;
  f.tensors["model.layers.0.mlp.up_proj.weight"] = tensor<float>({256}, f32, std::vector<float>(256, 1.0f));
  write_safetensors(path, f);
  std::string bytes = read_bytes(path);
  const uint64_t start = bytes.size() - 1024;
  write_bytes(path, bytes.substr(0, start + 512));
  EXPECT_EQ(error_of([&] { read_safetensors(path); }),
            "meganeura: " + path + ": tensor \"model.layers.0.mlp.up_proj.weight\" claims bytes [" +
                std::to_string(start) + ", " + std::to_string(start + 1024) + ") but the file is " +
                std::to_string(start + 512) + " bytes long (truncated download?)");
}

TEST(SafetensorsErrors, BadHeaderLength) {
  TempDir dir;
  const std::string path = dir / "x.safetensors";
  write_bytes(path, le64(1'000'000'000'000) + "{}");
  EXPECT_THAT(error_of([&] { read_safetensors(path); }),
              AllOf(HasSubstr(path), HasSubstr("header length is 1000000000000 bytes but only 2 bytes follow")));
  write_bytes(path, "abc");
  EXPECT_THAT(error_of([&] { read_safetensors(path); }), AllOf(HasSubstr(path), HasSubstr("too short")));
  EXPECT_THAT(error_of([&] { read_safetensors(dir / "missing.safetensors"); }),
              AllOf(HasSubstr("cannot open " + dir / "missing.safetensors"), HasSubstr("No such file or directory")));
}

TEST(SafetensorsErrors, BadJson) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, R"({"a": {"dtype": )"), HasSubstr("not valid JSON"));
  EXPECT_THAT(read_error(dir, R"([1, 2])"), HasSubstr("header is not a JSON object"));
  EXPECT_THAT(read_error(dir, R"({"a": 3})"), HasSubstr("tensor \"a\" is not a JSON object"));
}

TEST(SafetensorsErrors, MissingFields) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, R"({"t":{"shape":[1],"data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has no \"dtype\""));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has no \"shape\""));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[1]}})"),
              HasSubstr("tensor \"t\" has no \"data_offsets\""));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has a shape entry that is not a non-negative integer: -1"));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})"),
              HasSubstr("tensor \"t\" has data_offsets [8, 4) that end before they begin"));
  EXPECT_THAT(read_error(dir, R"({"__metadata__":{"n":3}})"), HasSubstr("__metadata__ entry \"n\" is not a string"));
}

TEST(SafetensorsErrors, UnknownDtype) {
  TempDir dir;
  for (const char* dt : {"F64", "I64", "U8", "BOOL", "F8_E4M3"})
    EXPECT_THAT(read_error(dir, std::string(R"({"emb":{"dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,8]}})"),
                HasSubstr(std::string("tensor \"emb\" has dtype ") + dt +
                          ", which meganeura does not read (supported: F32, F16, BF16, I32, U32)"));
}

// A torchvision state dict holds num_batches_tracked as I64: a Checkpoint lists it, checks its
// size like any tensor's, reads the F32 tensors beside it and refuses to read it, naming it.
TEST(Checkpoint, TensorsOfOtherDtypesAreListedNotRead) {
  TempDir dir;
  const std::string path = dir / "state.safetensors";
  const std::string weight("\0\0\xc0\x3f", 4);  // 1.5f
  write_bytes(path, safetensors_bytes(R"({"bn.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
                                      R"("bn.weight":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                      std::string("\x07\0\0\0\0\0\0\0", 8) + weight));
  const Checkpoint c = Checkpoint::open(path);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"bn.num_batches_tracked", "bn.weight"}));
  EXPECT_TRUE(c.contains("bn.num_batches_tracked"));
  EXPECT_EQ(c.read("bn.weight", f32).to_f32(), std::vector<float>{1.5f});
  EXPECT_THAT(error_of([&] { (void)c.read("bn.num_batches_tracked", i32); }),
              HasSubstr("tensor \"bn.num_batches_tracked\" is I64, which meganeura does not read"));
  EXPECT_THAT(error_of([&] { (void)c.info("bn.num_batches_tracked"); }), HasSubstr("is I64"));
  // Its size is checked all the same.
  write_bytes(path,
              safetensors_bytes(R"({"n":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  EXPECT_THAT(error_of([&] { Checkpoint::open(path); }), HasSubstr("has shape [2] and dtype I64, which take 16 bytes"));
}

TEST(SafetensorsErrors, ShapeSizeMismatch) {
  TempDir dir;
  EXPECT_THAT(
      read_error(dir, R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})"),
      HasSubstr("tensor \"w\" has shape [3] and dtype F32, which take 12 bytes, but its data_offsets [0, 8) hold 8"));
  EXPECT_THAT(read_error(dir, R"({"w":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,8]}})"),
              HasSubstr("more than 2^64"));
}

TEST(SafetensorsErrors, OverlappingOffsets) {
  TempDir dir;
  EXPECT_THAT(read_error(dir, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}})"),
              HasSubstr("tensor \"b\" has data_offsets [4, 12) that overlap those of tensor \"a\" [0, 8)"));
  // Empty tensors take no bytes, so they overlap nothing.
  TensorFile f = read_safetensors(
      (write_bytes(dir / "ok.safetensors", safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                             R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                                                             std::string(8, '\0'))),
       dir / "ok.safetensors"));
  EXPECT_EQ(f.tensors.size(), 2u);
}

// ---- issue 16: inputs found by fuzzing (../shared/reliability-findings) -------------------------

// F6: a header value nested 200,000 levels deep overflowed the stack while the error message
// dump()ed it. Nesting is now refused past 64 levels, before anything is built, naming the key.
TEST(SafetensorsErrors, DeepNestingIsRefusedNamingTheKey) {
  TempDir dir;
  const std::string deep = std::string(200'000, '[') + std::string(200'000, ']');
  const std::string header = R"({"t":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]}})";
  EXPECT_THAT(read_error(dir, header),
              AllOf(HasSubstr("the safetensors header nests arrays and objects more than 64 levels deep"),
                    HasSubstr("(at \"t\".\"shape\")")));
  const std::string path = dir / "deep.safetensors";
  write_bytes(path, safetensors_bytes(header, std::string(8, '\0')));
  EXPECT_THAT(error_of([&] { Checkpoint::open(path); }),
              AllOf(StartsWith("meganeura: " + path + ": "), HasSubstr("64 levels deep")));
  // Objects too, and in __metadata__.
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += R"({"a":)";
  objects += "1" + std::string(100'000, '}');
  EXPECT_THAT(read_error(dir, R"({"__metadata__":{"m":)" + objects + "}}"),
              AllOf(HasSubstr("64 levels deep"), HasSubstr("\"__metadata__\".\"m\"")));
  // Within the limit, a wrongly nested value is described, never dump()ed.
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[[[[[1]]]]],"data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has a shape entry that is not a non-negative integer: an array of 1 elements"));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":{"a":[1,2]},"shape":[1],"data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has a dtype that is not a string: an object of 1 keys"));
  EXPECT_THAT(read_error(dir, R"({"__metadata__":{"m":[[1],[2]]}})"),
              HasSubstr("__metadata__ entry \"m\" is not a string: an array of 2 elements"));
  EXPECT_THAT(
      read_error(dir, R"({"t":{"dtype":")" + std::string(100'000, 'x') + R"(","shape":[1],"data_offsets":[0,4]}})"),
      AllOf(HasSubstr("tensor \"t\" has dtype xxxxxxxxxx"), HasSubstr("... (100000 bytes)")));
}

// F10a: 1e400 in a header made nlohmann::json::out_of_range escape from read_safetensors and
// Checkpoint::open; it is now an Error naming the file and the key.
TEST(SafetensorsErrors, NumberOutOfRangeIsAnErrorNamingTheKey) {
  TempDir dir;
  const std::string path = dir / "F10a.safetensors";
  // The fuzzer's input, byte for byte (a 58-byte header, 4 bytes of data).
  write_bytes(path, le64(58) + R"({"t":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})" + std::string(4, '\0'));
  for (auto open :
       {std::function<void()>([&] { read_safetensors(path); }), std::function<void()>([&] { Checkpoint::open(path); })})
    EXPECT_THAT(error_of(open), AllOf(StartsWith("meganeura: " + path +
                                                 ": the safetensors header is not valid JSON (at \"t\".\"shape\")"),
                                      HasSubstr("1e400")));
  // Other numbers nlohmann cannot hold, and numbers of the wrong kind, anywhere in the header.
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,-1e999]}})"),
              HasSubstr("(at \"t\".\"data_offsets\")"));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has a shape entry that is not a non-negative integer: 1.5"));
  EXPECT_THAT(read_error(dir, R"({"t":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})"),
              HasSubstr("tensor \"t\" has a shape entry that is not a non-negative integer: 1.8446744073709552e+19"));
}

// The sharded index (model.safetensors.index.json) is read the same way: deep nesting, numbers
// out of range and non-string shard names are Errors naming the index and the key.
TEST(CheckpointErrors, MalformedIndexIsAnErrorNamingTheKey) {
  TempDir dir;
  const std::string index = dir / "model.safetensors.index.json";
  auto open_error = [&](const std::string& text) {
    write_bytes(index, text);
    std::string msg = error_of([&] { Checkpoint::open(dir.path().string()); });
    EXPECT_THAT(msg, StartsWith("meganeura: " + index + ": "));
    return msg;
  };
  EXPECT_THAT(open_error(R"({"weight_map":{"w":)" + std::string(200'000, '[') + std::string(200'000, ']') + "}}"),
              AllOf(HasSubstr("the safetensors index nests arrays and objects more than 64 levels deep"),
                    HasSubstr("\"weight_map\".\"w\"")));
  EXPECT_THAT(open_error(R"({"metadata":{"total_size":1e400},"weight_map":{}})"),
              AllOf(HasSubstr("not valid JSON (at \"metadata\".\"total_size\")"), HasSubstr("1e400")));
  EXPECT_THAT(open_error(R"({"weight_map":{"w":[["a"]]}})"),
              HasSubstr("weight_map entry \"w\" is not a file name but an array of 1 elements"));
  EXPECT_THAT(open_error(R"({"weight_map":[1]})"), HasSubstr("has no \"weight_map\" object"));
  // Shards must sit beside the index: a name can neither climb out nor be absolute.
  for (const char* shard : {"../outside.safetensors", "sub/../../x.safetensors", "/etc/passwd", ""})
    EXPECT_THAT(open_error(std::string(R"({"weight_map":{"w":")") + shard + "\"}}"),
                HasSubstr(std::string("weight_map entry \"w\" names shard \"") + shard +
                          "\", which is not a file beside the index"));
  // A shard that is a FIFO: refused at once instead of waiting for a writer forever.
  ASSERT_EQ(::mkfifo((dir / "fifo.safetensors").c_str(), 0600), 0);
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir / "fifo.safetensors"); }),
              HasSubstr("cannot read " + dir / "fifo.safetensors" + ": not a regular file"));
}

// fuzz_safetensors_index (fuzz/corpus/safetensors_index/crash-shard-name-too-long): a shard name
// longer than a file name may be made std::filesystem::exists throw filesystem_error ("File name
// too long") out of Checkpoint::open; it is an Error naming the index and the shard.
TEST(CheckpointErrors, ShardNameTooLongIsAnErrorNamingTheIndex) {
  TempDir dir;
  const std::string index = dir / "model.safetensors.index.json";
  const std::string shard = "model-" + std::string(300, 'x') + ".safetensors";
  write_bytes(index, R"({"weight_map":{"model.norm.weight":")" + shard + R"("}})");
  for (const std::string& open : {index, dir.path().string()})
    EXPECT_THAT(error_of([&] { Checkpoint::open(open); }),
                AllOf(StartsWith("meganeura: " + index + ": cannot look for "), HasSubstr(shard),
                      HasSubstr("File name too long")));
  // The same name as the checkpoint's own path: the error of reading it as a file.
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir / shard); }),
              AllOf(HasSubstr(shard), HasSubstr("File name too long")));
}

// write_checkpoint's folder cannot be made (a file stands in its way): an Error naming it, not a
// std::filesystem exception.
TEST(CheckpointWrite, UncreatableFolderIsAnErrorNamingIt) {
  TempDir dir;
  write_bytes(dir / "file", "x");
  TensorFile f;
  f.tensors["w"] = HostTensor::f32s({1}, std::vector<float>{1});
  EXPECT_THAT(error_of([&] { write_checkpoint(dir / "file/sub", f); }),
              StartsWith("meganeura: " + dir / "file/sub" + ": cannot create the checkpoint folder: "));
}

TEST(SafetensorsWrite, RejectsInconsistentTensorsAndUnwritablePaths) {
  TempDir dir;
  TensorFile f;
  f.tensors["w"] = HostTensor{{3}, f32, std::vector<std::byte>(8)};
  EXPECT_THROW(write_safetensors(dir / "a.safetensors", f), SizeError);

  f.tensors["w"] = tensor<float>({2}, f32, {1, 2});
  const std::string missing = dir / "no/such/dir/a.safetensors";
  EXPECT_THAT(error_of([&] { write_safetensors(missing, f); }),
              AllOf(HasSubstr("cannot write " + missing), HasSubstr("No such file or directory")));
  // The rename fails (a directory is in the way): the temp file must not stay behind.
  std::filesystem::create_directories(dir / "taken/x");
  EXPECT_THAT(error_of([&] { write_safetensors(dir / "taken", f); }), HasSubstr("cannot replace " + dir / "taken"));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(SafetensorsWrite, KillMidSaveLeavesThePreviousFileIntact) {
  TempDir dir;
  const std::string path = dir / "ckpt.safetensors";
  TensorFile old = sample_file();
  write_safetensors(path, old);
  const std::string old_bytes = read_bytes(path);

  TensorFile big;
  big.tensors["w"] = tensor<float>({1 << 18}, f32, std::vector<float>(1 << 18, 3.0f));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("MEGANEURA_TEST_INTERRUPT_SAVE", "1", 1);
    try {
      write_safetensors(path, big);
    } catch (...) {}
    std::_Exit(1);  // not reached when the hook fires
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 86) << "the interrupt hook did not fire";

  EXPECT_EQ(read_bytes(path), old_bytes);
  expect_same(old, read_safetensors(path));
  // The half-written temp file is the killed process's leftover, never the target.
  const std::string tmp = path + ".tmp-" + std::to_string(child);
  ASSERT_TRUE(std::filesystem::exists(tmp));
  EXPECT_LT(std::filesystem::file_size(tmp), 1u << 20) << "half the data, not all of it";
  EXPECT_GT(std::filesystem::file_size(tmp), 1u << 18);
  EXPECT_THROW(read_safetensors(tmp), Error);  // truncated: the reader says so
}

TEST(Curves, WritesCsvAndSvgCreatingTheDirectory) {
  TempDir dir;
  std::vector<double> losses;
  for (int i = 0; i < 2345; ++i) losses.push_back(2.3 * std::exp(-i / 300.0) + 0.3 + 0.1 * std::sin(i * 1.7));
  std::vector<CurvePoint> epochs = {{1, 0.61, 0.48, 0.8312}, {2, 0.42, 0.41, 0.8534}, {3, 0.37, 0.39, 0.8617}};
  const std::string prefix = dir / "out/run1/fashion";
  write_curves(prefix, losses, epochs);

  EXPECT_EQ(read_bytes(prefix + ".csv"),
            "epoch,train_loss,test_loss,test_accuracy\n1,0.61,0.48,0.8312\n2,0.42,0.41,0.8534\n3,0.37,0.39,0.8617\n");
  const std::string steps = read_bytes(prefix + "-steps.csv");
  EXPECT_EQ(steps.substr(0, 16), "step,loss\n1,2.6\n");
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), 2346);
  const std::string svg = read_bytes(prefix + ".svg");
  EXPECT_THAT(svg, StartsWith("<svg xmlns='http://www.w3.org/2000/svg' width='800' height='400'"));
  EXPECT_THAT(svg, AllOf(HasSubstr("Training loss per step"), HasSubstr("Test accuracy per epoch"), HasSubstr("86.2"),
                         HasSubstr("</svg>\n")));
  EXPECT_LT(svg.size(), 100'000u) << "thousands of steps are thinned to the plot's pixel columns";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "out/run1"), {}), 3) << "no temp files left";
}

TEST(Curves, EmptyAndNonFiniteDataStillRender) {
  const std::string svg = curves_svg({}, {});
  EXPECT_THAT(svg, HasSubstr("no data"));
  const std::string svg2 = curves_svg({1.0, NAN, 0.5, INFINITY}, {{1, NAN, NAN, 0.5}});
  EXPECT_THAT(svg2, AllOf(Not(HasSubstr("nan")), Not(HasSubstr("inf"))));
}

// Reads everything a Progress wrote to a temp FILE.
std::string drain(std::FILE* f) {
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

TEST(Progress, PlainLinesAtQuartersAndTheEnd) {
  std::FILE* f = std::tmpfile();
  {
    Progress p("epoch 1/2", 8, f, /*terminal=*/false);
    for (int i = 1; i <= 8; ++i) p.update(i, "loss 0.5");
    p.finish("loss 0.4213");
  }
  const std::string out = drain(f);
  std::fclose(f);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(out.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 5u) << out;
  EXPECT_THAT(lines[0], StartsWith("epoch 1/2 0% 0/8 | "));
  EXPECT_THAT(lines[1], StartsWith("epoch 1/2 25% 2/8 loss 0.5 | "));
  EXPECT_THAT(lines[1], AllOf(HasSubstr(" steps/s | ETA ")));
  EXPECT_THAT(lines[2], StartsWith("epoch 1/2 50% 4/8 "));
  EXPECT_THAT(lines[3], StartsWith("epoch 1/2 75% 6/8 "));
  EXPECT_THAT(lines[4], StartsWith("epoch 1/2 100% 8/8 loss 0.4213 | "));
  EXPECT_THAT(lines[4], Not(HasSubstr("ETA")));
}

TEST(Progress, TerminalRedrawsOneLineAtMostTenTimesASecond) {
  std::FILE* f = std::tmpfile();
  {
    Progress p("epoch 2/5", 468, f, /*terminal=*/true);
    for (int i = 1; i <= 234; ++i) p.update(i, "loss 0.4213");
    p.finish("done");
  }
  const std::string out = drain(f);
  std::fclose(f);
  EXPECT_LE(std::count(out.begin(), out.end(), '\r'), 3) << "updates within 100 ms are not drawn";
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  EXPECT_THAT(out, HasSubstr("\repoch 2/5 [.........."));
  EXPECT_THAT(out, HasSubstr("\repoch 2/5 [##########..........] 234/468 done | "));
}

TEST(Progress, BytesShowSizesAndRatesInDecimalUnits) {
  std::FILE* f = std::tmpfile();
  {
    Progress p("model.safetensors", 269060552, f, /*terminal=*/false, ProgressUnit::bytes, 100000000);
    p.update(200000000);
    p.finish();
  }
  const std::string out = drain(f);
  std::fclose(f);
  EXPECT_THAT(out, StartsWith("model.safetensors 37% 100.0/269.1 MB | 0.0 B/s\n"));  // resumed at 100 MB: no rate yet
  EXPECT_THAT(out, HasSubstr("model.safetensors 74% 200.0/269.1 MB | "));
  EXPECT_THAT(out, HasSubstr("B/s | ETA "));
}

}  // namespace
}  // namespace mntest
