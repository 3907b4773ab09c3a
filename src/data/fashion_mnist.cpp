// Fashion-MNIST (Xiao et al. 2017) from its four IDX files, as Debian's dataset-fashion-mnist
// installs them.
#include <sys/stat.h>

#include <cstdlib>

#include "meganeura/data.hpp"
#include "meganeura/error.hpp"

namespace meganeura::data {

namespace {

constexpr const char* kDebianDir = "/usr/share/datasets/fashion-mnist";

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// "<dir>/<stem>.gz", or the uncompressed file as it is distributed elsewhere.
std::string locate(const std::string& dir, const std::string& stem, bool is_default) {
  for (const std::string& p : {dir + "/" + stem + ".gz", dir + "/" + stem})
    if (exists(p)) return p;
  std::string hint = is_default
                         ? "install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or set "
                           "MEGANEURA_FASHION_MNIST to a directory holding the four IDX files"
                         : "point MEGANEURA_FASHION_MNIST (or FashionMnist::load's argument) at a directory "
                           "holding the four Fashion-MNIST IDX files";
  throw Error("cannot open " + dir + "/" + stem + ".gz: no such file; " + hint);
}

Dataset load_split(const std::string& dir, const std::string& split, bool is_default) {
  const std::string images_path = locate(dir, split + "-images-idx3-ubyte", is_default);
  const std::string labels_path = locate(dir, split + "-labels-idx1-ubyte", is_default);
  IdxArray images = read_idx(images_path), labels = read_idx(labels_path);
  if (images.dims.size() != 3)
    throw Error(images_path + ": expected images of rank 3 [N, rows, cols], got rank " +
                std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    throw Error(labels_path + ": expected labels of rank 1 [N], got rank " + std::to_string(labels.dims.size()));
  // The header's dimensions: with no images, rows x cols is bounded by nothing the file holds.
  int64_t features = 0;
  if (__builtin_mul_overflow(images.dims[1], images.dims[2], &features))
    throw Error(images_path + ": images of " + std::to_string(images.dims[1]) + " x " + std::to_string(images.dims[2]) +
                " pixels (the IDX header's dimensions) are too large");
  const int64_t n = images.dims[0];
  if (labels.dims[0] != n)
    throw Error(labels_path + ": " + std::to_string(labels.dims[0]) + " labels for the " + std::to_string(n) +
                " images of " + images_path);

  Dataset d;
  d.features = HostTensor{{n, features}, f32, std::vector<std::byte>(static_cast<size_t>(n * features) * 4)};
  auto* f = reinterpret_cast<float*>(d.features.bytes.data());
  for (size_t i = 0; i < images.values.size(); ++i) f[i] = static_cast<float>(images.values[i]) / 255.0f;

  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint8_t v = labels.values[static_cast<size_t>(i)];
    if (v >= 10)
      throw Error(labels_path + ": label " + std::to_string(v) + " of example " + std::to_string(i) +
                  " is not a class in 0..9");
    y[static_cast<size_t>(i)] = v;
  }
  d.labels = HostTensor::i32s({n}, y);
  return d;
}

}  // namespace

FashionMnist FashionMnist::load(std::string dir) {
  bool is_default = false;
  if (dir.empty()) {
    const char* env = std::getenv("MEGANEURA_FASHION_MNIST");
    is_default = !env || !*env;
    dir = is_default ? kDebianDir : env;
  }
  return FashionMnist{load_split(dir, "train", is_default), load_split(dir, "t10k", is_default)};
}

}  // namespace meganeura::data
