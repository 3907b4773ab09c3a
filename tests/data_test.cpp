// IDX files (the real Fashion-MNIST from Debian's dataset-fashion-mnist, and broken copies of it)
// and the DataLoader's batching and shuffling.
#include "meganeura/data.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "file_fixtures.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using namespace meganeura::data;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The real files the fixtures are made from: found as FashionMnist::load finds them.
std::string dataset_dir() {
  const char* env = std::getenv("MEGANEURA_FASHION_MNIST");
  return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}
const std::string kDir = dataset_dir();

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("test fixture: cannot open " + path + " (install dataset-fashion-mnist)");
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// Loaded once: 60000 images take a moment to inflate.
const FashionMnist& fashion() {
  static const FashionMnist data = FashionMnist::load();
  return data;
}

double mean(const HostTensor& t) {
  auto v = t.data<float>();
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

TEST(FashionMnist, LoadsDebiansFiles) {
  const FashionMnist& d = fashion();
  EXPECT_EQ(d.train.features.shape, (Shape{60000, 784}));
  EXPECT_EQ(d.test.features.shape, (Shape{10000, 784}));
  EXPECT_EQ(d.train.size(), 60000);
  EXPECT_EQ(d.test.size(), 10000);
  EXPECT_EQ(d.train.labels.dtype, i32);
  // Known statistics of the data set: mean pixel (the 0.2860 of common normalisation code), first
  // labels (ankle boot, T-shirt, T-shirt, dress), balanced classes, bytes / 255.
  EXPECT_NEAR(mean(d.train.features), 0.2860406, 1e-6);
  EXPECT_NEAR(mean(d.test.features), 0.2868493, 1e-6);
  auto y = d.train.labels.data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(y.begin(), y.begin() + 4), (std::vector<int32_t>{9, 0, 0, 3}));
  EXPECT_EQ(d.test.labels.data<int32_t>()[0], 9);
  for (const Dataset* s : {&d.train, &d.test}) {
    std::vector<int64_t> count(10);
    for (int32_t v : s->labels.data<int32_t>()) {
      ASSERT_TRUE(v >= 0 && v < 10) << v;
      ++count[static_cast<size_t>(v)];
    }
    for (int64_t c : count) EXPECT_EQ(c, s->size() / 10);
  }
  auto x = d.train.features.data<float>();
  double first = std::accumulate(x.begin(), x.begin() + 784, 0.0);
  EXPECT_NEAR(first, 76247 / 255.0, 1e-3);
  EXPECT_EQ(*std::max_element(x.begin(), x.end()), 1.0f);
  EXPECT_EQ(*std::min_element(x.begin(), x.end()), 0.0f);
}

TEST(Idx, ReadsGzipAndRawAlike) {
  TempDir dir;
  const std::string raw = gunzip(kDir + "/t10k-labels-idx1-ubyte.gz");
  write_bytes(dir / "labels", raw);
  IdxArray a = read_idx(dir / "labels"), b = read_idx(kDir + "/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{10000}));
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.values, b.values);
}

TEST(Idx, TruncatedCopyNamesTheFileAndTheSizes) {
  TempDir dir;
  const std::string raw = gunzip(kDir + "/t10k-images-idx3-ubyte.gz");
  write_bytes(dir / "images", raw.substr(0, 16 + 1234));
  EXPECT_EQ(error_of([&] { read_idx(dir / "images"); }),
            "meganeura: " + dir / "images" + ": truncated: expected 7840000 bytes of data after the header, got 1234" +
                " (the header's dimensions: 10000 x 28 x 28)");
  // A gzip stream cut short reads as the same kind of truncation.
  const std::string gz = read_bytes(kDir + "/t10k-images-idx3-ubyte.gz");
  write_bytes(dir / "images.gz", gz.substr(0, gz.size() / 2));
  EXPECT_THAT(error_of([&] { read_idx(dir / "images.gz"); }),
              AllOf(HasSubstr(dir / "images.gz"), HasSubstr("expected 7840000 bytes of data after the header, got")));
}

TEST(Idx, BadMagicTypeTrailingAndMissing) {
  TempDir dir;
  std::string raw = gunzip(kDir + "/t10k-labels-idx1-ubyte.gz");
  std::string bad = raw;
  bad[0] = '\x1f';
  write_bytes(dir / "magic", bad);
  EXPECT_THAT(error_of([&] { read_idx(dir / "magic"); }),
              AllOf(HasSubstr(dir / "magic"), HasSubstr("not an IDX file (bad magic: first bytes 0x1f 0x00")));
  bad = raw;
  bad[2] = '\x0d';
  write_bytes(dir / "type", bad);
  EXPECT_THAT(error_of([&] { read_idx(dir / "type"); }),
              AllOf(HasSubstr(dir / "type"), HasSubstr("IDX element type 0x0d is not supported")));
  write_bytes(dir / "trailing", raw + "junk");
  EXPECT_THAT(error_of([&] { read_idx(dir / "trailing"); }),
              AllOf(HasSubstr(dir / "trailing"), HasSubstr("trailing garbage")));
  EXPECT_THAT(error_of([&] { read_idx(dir / "none.gz"); }),
              AllOf(HasSubstr("cannot open " + dir / "none.gz"), HasSubstr("No such file or directory")));
}

// ---- issue 16: inputs found by fuzzing (../shared/reliability-findings) -------------------------

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// F1: a 12-byte header claiming 16 x 4294967295 bytes (64 GiB) made read_idx allocate and
// zero-fill all of it before noticing the file is short. The claim is now compared with what
// the file can hold before anything is allocated, raw or gzip.
TEST(Idx, HugeHeaderClaimIsRefusedBeforeAllocating) {
  TempDir dir;
  const std::string header("\x00\x00\x08\x02\x00\x00\x00\x10\xff\xff\xff\xff", 12);  // F1-idx-huge-alloc.idx
  write_bytes(dir / "huge.idx", header);
  EXPECT_EQ(error_of([&] { read_idx(dir / "huge.idx"); }),
            "meganeura: " + dir / "huge.idx" +
                ": truncated: expected 68719476720 bytes of data after the header, got 0" +
                " (the header's dimensions: 16 x 4294967295)");
  // F1-idx-huge-alloc.idx.gz, byte for byte: the same header, gzip'd (49 bytes).
  const unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x08, 0x7a, 0xa9, 0x07, 0x6b, 0x00, 0x03, 0x69, 0x64, 0x78,
                              0x2d, 0x68, 0x75, 0x67, 0x65, 0x2d, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x2e, 0x69,
                              0x64, 0x78, 0x00, 0x63, 0x60, 0xe0, 0x60, 0x62, 0x60, 0x60, 0x10, 0xf8, 0x0f,
                              0x04, 0x00, 0x7c, 0x19, 0xaf, 0xf8, 0x0c, 0x00, 0x00, 0x00};
  write_bytes(dir / "huge.idx.gz", std::string(reinterpret_cast<const char*>(gz), sizeof gz));
  EXPECT_EQ(error_of([&] { read_idx(dir / "huge.idx.gz"); }),
            "meganeura: " + dir / "huge.idx.gz" +
                ": truncated or not an IDX file: the header's dimensions 16 x 4294967295" +
                " claim 68719476720 bytes of data, but the gzip file is 49 bytes long and inflates to at most 50568");
  // A gzip file whose claim (100 MB) is within what its size could inflate to, but whose data
  // stops after 100 kB: the buffer grows as data arrives, and the error gives both sizes.
  std::string data(100'000, '\0');
  uint32_t x = 1;
  for (char& c : data) c = static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);  // incompressible
  write_gzip(dir / "short.gz", std::string("\x00\x00\x08\x01\x05\xf5\xe1\x00", 8) + data);
  EXPECT_EQ(
      error_of([&] { read_idx(dir / "short.gz"); }),
      "meganeura: " + dir / "short.gz" + ": truncated: expected 100000000 bytes of data after the header, got 100000");
  // The same data and a truthful header still read.
  write_gzip(dir / "ok.gz", std::string("\x00\x00\x08\x01\x00\x01\x86\xa0", 8) + data);
  IdxArray ok = read_idx(dir / "ok.gz");
  EXPECT_EQ(ok.dims, (std::vector<int64_t>{100'000}));
  EXPECT_TRUE(std::equal(ok.values.begin(), ok.values.end(), data.begin(),
                         [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); }));
}

// No images but 4294967295 x 4294967295 pixels each: the header holds no data to bound the
// pixel count, whose product overflowed int64.
TEST(FashionMnist, ImageSizeFromTheHeaderMustNotOverflow) {
  TempDir dir;
  write_bytes(dir / "train-images-idx3-ubyte",
              std::string("\x00\x00\x08\x03\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff", 16));
  write_bytes(dir / "train-labels-idx1-ubyte", std::string("\x00\x00\x08\x01\x00\x00\x00\x00", 8));
  EXPECT_EQ(error_of([&] { FashionMnist::load(dir.path().string()); }),
            "meganeura: " + dir / "train-images-idx3-ubyte" +
                ": images of 4294967295 x 4294967295 pixels (the IDX header's dimensions) are too large");
}

TEST(FashionMnist, MissingFilesSayWhereToGetThem) {
  TempDir dir;
  EXPECT_THAT(
      error_of([&] { FashionMnist::load(dir.path().string()); }),
      AllOf(HasSubstr("cannot open " + dir / "train-images-idx3-ubyte.gz"), HasSubstr("MEGANEURA_FASHION_MNIST")));
  // Uncompressed files work too; a label file of the wrong length is caught.
  write_bytes(dir / "train-images-idx3-ubyte", gunzip(kDir + "/t10k-images-idx3-ubyte.gz"));
  write_bytes(dir / "train-labels-idx1-ubyte", gunzip(kDir + "/train-labels-idx1-ubyte.gz"));
  EXPECT_THAT(error_of([&] { FashionMnist::load(dir.path().string()); }),
              HasSubstr("60000 labels for the 10000 images"));
}

// N examples whose single feature and label are the example's index.
Dataset indexed(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  std::vector<int32_t> y(static_cast<size_t>(n));
  std::iota(x.begin(), x.end(), 0.0f);
  std::iota(y.begin(), y.end(), 0);
  return {HostTensor::f32s({n, 1}, x), HostTensor::i32s({n}, y)};
}

// The label of every real row of an epoch's batches, checking features match labels.
std::vector<int32_t> epoch_order(DataLoader& loader, int64_t epoch, int64_t* batches = nullptr) {
  loader.start_epoch(epoch);
  std::vector<int32_t> seen;
  Batch b;
  int64_t count = 0;
  while (loader.next(b)) {
    ++count;
    auto x = b.features.data<float>();
    auto y = b.labels.data<int32_t>();
    for (int64_t i = 0; i < b.real; ++i) {
      EXPECT_EQ(x[static_cast<size_t>(i)], static_cast<float>(y[static_cast<size_t>(i)]));
      seen.push_back(y[static_cast<size_t>(i)]);
    }
  }
  if (batches) *batches = count;
  return seen;
}

TEST(DataLoader, DropAndPadBatchCounts) {
  Dataset d = indexed(10);
  DataLoader drop(d, {.batch_size = 4, .shuffle = false, .last_batch = LastBatch::Drop});
  DataLoader pad(d, {.batch_size = 4, .shuffle = false, .last_batch = LastBatch::Pad});
  EXPECT_EQ(drop.batches(), 2);
  EXPECT_EQ(pad.batches(), 3);
  int64_t n = 0;
  EXPECT_EQ(epoch_order(drop, 0, &n), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(epoch_order(pad, 0, &n), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(n, 3);

  pad.start_epoch(0);
  Batch b;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pad.next(b));
  EXPECT_EQ(b.real, 2);
  EXPECT_EQ(b.features.shape, (Shape{4, 1}));
  EXPECT_EQ(b.features.to_f32(), (std::vector<float>{8, 9, 0, 0}));
  EXPECT_EQ(b.labels.to_f32(), (std::vector<float>{8, 9, -100, -100}));
  EXPECT_FALSE(pad.next(b));
  EXPECT_FALSE(pad.next(b));
}

TEST(DataLoader, ShuffleIsReproduciblePerSeedAndEpoch) {
  Dataset d = indexed(1000);
  LoaderOptions o{.batch_size = 64, .shuffle = true, .seed = 7, .last_batch = LastBatch::Pad};
  DataLoader a(d, o), b(d, o);
  const auto e0 = epoch_order(a, 0), e1 = epoch_order(a, 1);
  EXPECT_EQ(epoch_order(b, 1), e1) << "same seed and epoch, same order, whatever came before";
  EXPECT_EQ(epoch_order(b, 0), e0);
  EXPECT_EQ(epoch_order(a, 0), e0) << "an epoch can be replayed";
  EXPECT_NE(e0, e1);
  o.seed = 8;
  DataLoader c(d, o);
  EXPECT_NE(epoch_order(c, 0), e0);
  std::vector<int32_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(e0, identity);
  for (auto e : {e0, e1}) {  // every example exactly once
    std::sort(e.begin(), e.end());
    EXPECT_EQ(e, identity);
  }
}

TEST(DataLoader, RejectsMismatchedData) {
  Dataset d = indexed(4);
  d.labels = HostTensor::i32s({3}, std::vector<int32_t>{0, 1, 2});
  EXPECT_THROW(DataLoader(d, {}), ShapeError);
  Dataset e = indexed(4);
  EXPECT_THROW(DataLoader(e, {.batch_size = 0}), ShapeError);
}

}  // namespace
}  // namespace mntest
