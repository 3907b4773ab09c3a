// meganeura-grad-dump: a training step of a Hugging Face Llama directory (config.json +
// safetensors) with SGD at lr 0, its loss, logits and every parameter's gradient written to a
// safetensors file, for bench/accuracy.py to compare with PyTorch on the same weights.
//   meganeura-grad-dump --model DIR --seq S --out FILE.safetensors [--steps N]
// With --steps N the step runs N times on the same inputs and the last one is written: from
// the second on, the tensor-core products stage at the exponents the step before left
// (kernels/stage_scale.glsl), the path every step of a training run but the first takes.
// The tokens are (7 i + 3) mod vocab, the labels the tokens shifted left (the last ignored), as
// accuracy.py makes them. MEGANEURA_MATMUL_PRECISION picks the matmul precision under test.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "meganeura/error.hpp"
#include "meganeura/io.hpp"
#include "meganeura/llama.hpp"
#include "meganeura/ops.hpp"
#include "meganeura/train.hpp"

namespace mn = meganeura;

namespace {

struct Options {
  std::string model, out;
  int64_t seq = 0;
  int steps = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      o.model = value;
    else if (flag == "--out")
      o.out = value;
    else if (flag == "--seq")
      o.seq = std::stoll(value);
    else if (flag == "--steps")
      o.steps = std::stoi(value);
    else
      throw mn::Error("meganeura-grad-dump: unknown option '" + flag + "'");
  }
  if (o.model.empty() || o.out.empty() || o.seq < 1 || o.steps < 1)
    throw mn::Error("usage: meganeura-grad-dump --model DIR --seq S --out FILE.safetensors [--steps N]");
  return o;
}

int run(const Options& o) {
  const auto config = mn::models::LlamaConfig::from_file(o.model + "/config.json");
  const auto weights = mn::Checkpoint::open(o.model);
  mn::Graph g;
  mn::Tensor ids = g.input("input_ids", {1, o.seq}, mn::i32);
  mn::Tensor positions = g.input("positions", {o.seq}, mn::i32);
  mn::Tensor labels = g.input("labels", {1, o.seq}, mn::i32);
  mn::Tensor logits = mn::models::Llama(g, config)(ids, positions);
  g.output("logits", logits);
  mn::Tensor loss = mn::cross_entropy(logits, labels);
  mn::Session s = mn::build_session(g, loss, {.optimizer = mn::SGD{.lr = 0.0f}});
  mn::models::load_weights(s, g, weights);
  std::vector<int32_t> tokens(static_cast<size_t>(o.seq)), next(static_cast<size_t>(o.seq), -100), pos(tokens.size());
  for (int64_t i = 0; i < o.seq; ++i) {
    tokens[static_cast<size_t>(i)] = static_cast<int32_t>((7 * i + 3) % config.vocab_size);
    pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  }
  for (int64_t i = 0; i + 1 < o.seq; ++i) next[static_cast<size_t>(i)] = tokens[static_cast<size_t>(i + 1)];
  s.set_input("input_ids", mn::HostTensor::i32s({1, o.seq}, tokens));
  s.set_input("positions", mn::HostTensor::i32s({o.seq}, pos));
  s.set_input("labels", mn::HostTensor::i32s({1, o.seq}, next));
  for (int i = 0; i < o.steps; ++i) s.step();
  mn::TensorFile out;
  out.tensors.emplace("logits", s.read_output("logits"));
  out.tensors.emplace("loss", mn::HostTensor::f32s({1}, std::vector<float>{s.read_loss()}));
  for (const std::string& name : s.parameter_names()) out.tensors.emplace("grad." + name, s.read_grad(name));
  mn::write_safetensors(o.out, out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
