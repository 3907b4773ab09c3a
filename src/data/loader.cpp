#include <algorithm>
#include <cstring>
#include <random>

#include "meganeura/data.hpp"
#include "meganeura/error.hpp"

namespace meganeura::data {

namespace {

// A uniform draw in [0, n) by rejection: std::uniform_int_distribution is implementation-defined,
// and the order of an epoch must not change with the standard library.
uint64_t below(std::mt19937_64& gen, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // largest multiple of n, exclusive
  uint64_t x;
  do x = gen();
  while (x >= limit);
  return x % n;
}

size_t row_bytes(const HostTensor& t) { return static_cast<size_t>(t.shape[1]) * dtype_size(t.dtype); }

}  // namespace

DataLoader::DataLoader(const Dataset& data, LoaderOptions options) : data_(&data), opts_(options) {
  const HostTensor &x = data.features, &y = data.labels;
  if (x.shape.size() != 2) throw ShapeError("DataLoader: features must be [N, F], got " + shape_str(x.shape));
  if (y.shape.size() != 1 || y.dtype != i32)
    throw ShapeError("DataLoader: labels must be i32 [N], got " + std::string(dtype_name(y.dtype)) + " " +
                     shape_str(y.shape));
  if (x.shape[0] != y.shape[0])
    throw ShapeError("DataLoader: " + std::to_string(x.shape[0]) + " feature rows but " + std::to_string(y.shape[0]) +
                     " labels");
  if (opts_.batch_size <= 0)
    throw ShapeError("DataLoader: batch_size must be positive, got " + std::to_string(opts_.batch_size));
  start_epoch(0);
}

int64_t DataLoader::batches() const {
  const int64_t n = data_->size(), b = opts_.batch_size;
  return opts_.last_batch == LastBatch::Drop ? n / b : (n + b - 1) / b;
}

void DataLoader::start_epoch(int64_t epoch) {
  order_.resize(static_cast<size_t>(data_->size()));
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  if (opts_.shuffle) {
    // seed_seq and mt19937_64 are specified exactly by the standard: same (seed, epoch), same order.
    const auto e = static_cast<uint64_t>(epoch);
    std::seed_seq seq{uint32_t(opts_.seed), uint32_t(opts_.seed >> 32), uint32_t(e), uint32_t(e >> 32)};
    std::mt19937_64 gen(seq);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[below(gen, i)]);
  }
  at_ = 0;
}

bool DataLoader::next(Batch& batch) {
  const int64_t n = data_->size(), b = opts_.batch_size;
  const int64_t real = std::min(b, n - at_);
  if (real <= 0 || (real < b && opts_.last_batch == LastBatch::Drop)) return false;

  const HostTensor &x = data_->features, &y = data_->labels;
  const size_t xrow = row_bytes(x);
  // Reuses the batch's buffers: a training loop calls this every step.
  batch.features.shape = {b, x.shape[1]};
  batch.features.dtype = x.dtype;
  batch.features.bytes.resize(static_cast<size_t>(b) * xrow);
  batch.labels.shape = {b};
  batch.labels.dtype = i32;
  batch.labels.bytes.resize(static_cast<size_t>(b) * 4);
  auto* labels = reinterpret_cast<int32_t*>(batch.labels.bytes.data());
  const int32_t* src_labels = y.data<int32_t>().data();
  for (int64_t i = 0; i < real; ++i) {
    const auto row = static_cast<size_t>(order_[static_cast<size_t>(at_ + i)]);
    std::memcpy(batch.features.bytes.data() + static_cast<size_t>(i) * xrow, x.bytes.data() + row * xrow, xrow);
    labels[i] = src_labels[row];
  }
  // Padding rows: zero features and the ignored label -100.
  std::memset(batch.features.bytes.data() + static_cast<size_t>(real) * xrow, 0, static_cast<size_t>(b - real) * xrow);
  for (int64_t i = real; i < b; ++i) labels[i] = -100;
  batch.real = real;
  at_ += real;
  return true;
}

}  // namespace meganeura::data
