// model.safetensors.index.json — the weight_map of a sharded checkpoint — opened by
// Checkpoint::open on its folder, beside two small valid shards written once at start-up, so that
// inputs naming them (and missing ones, paths out of the folder, tensors a shard lacks) reach
// every check; every tensor of an accepted checkpoint is then read.
#include "input_file.hpp"
#include "meganeura/io.hpp"

namespace mn = meganeura;

namespace {

void write_shards() {
  const std::string dir = mn::fuzz::scratch_dir();
  mn::TensorFile first, second;
  first.tensors["model.embed_tokens.weight"] = mn::HostTensor::f32s({2, 2}, std::vector<float>{1, 2, 3, 4});
  first.tensors["model.norm.weight"] = mn::HostTensor::f32s({2}, std::vector<float>{1, 1});
  second.tensors["lm_head.weight"] = mn::HostTensor::f32s({2, 2}, std::vector<float>{5, 6, 7, 8});
  second.tensors["step"] = mn::HostTensor::i32s({1}, std::vector<int32_t>{3});
  mn::write_safetensors(dir + "/model-00001-of-00002.safetensors", first);
  mn::write_safetensors(dir + "/model-00002-of-00002.safetensors", second);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_shards();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mn::fuzz::write_input("model.safetensors.index.json", data, size);
  mn::fuzz::reads([&] {
    const mn::Checkpoint checkpoint = mn::Checkpoint::open(mn::fuzz::scratch_dir());
    for (const std::string& name : checkpoint.names()) (void)checkpoint.read(name, checkpoint.info(name).dtype);
  });
  return 0;
}
