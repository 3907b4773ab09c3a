// Data: IDX files (MNIST, Fashion-MNIST), in-memory datasets and a batching loader.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "meganeura/host_tensor.hpp"

namespace meganeura::data {

// An IDX array (unsigned-byte element type, as MNIST-family files use), gzip or raw.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;
};
// Throws Error naming the file and what was expected (magic, element type, dimensions, size).
IdxArray read_idx(const std::string& path);

// Examples as rows: features f32 [N, F], labels i32 [N].
struct Dataset {
  HostTensor features;
  HostTensor labels;
  int64_t size() const { return labels.numel(); }
};

struct FashionMnist {
  Dataset train, test;  // 60000 and 10000 images of 28x28 as 784 floats in [0, 1]
  // dir: MEGANEURA_FASHION_MNIST if set, else Debian's dataset-fashion-mnist
  // (/usr/share/datasets/fashion-mnist). A missing file says which package to install.
  static FashionMnist load(std::string dir = "");
};

enum class LastBatch { Drop, Pad };  // Pad: fill with zero features and label -100 (ignored)

struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = true;
  uint64_t seed = 0;  // the order of epoch e is a function of (seed, e): reproducible
  LastBatch last_batch = LastBatch::Drop;
};

struct Batch {
  HostTensor features;  // [batch_size, F]
  HostTensor labels;    // [batch_size]
  int64_t real = 0;     // examples that are not padding
};

class DataLoader {
 public:
  DataLoader(const Dataset& data, LoaderOptions options);
  int64_t batches() const;          // per epoch
  void start_epoch(int64_t epoch);  // reshuffles (if shuffle) and rewinds
  bool next(Batch& batch);          // false at the end of the epoch
 private:
  const Dataset* data_;
  LoaderOptions opts_;
  std::vector<int64_t> order_;
  int64_t at_ = 0;
};

}  // namespace meganeura::data
