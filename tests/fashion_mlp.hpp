// Fashion-MNIST's shapes in a small MLP (784 -> hidden -> 10, ReLU, cross-entropy) and its
// training session, initialised as torch.nn.Linear is: for tests that need a real training run
// without the data set (the fault tests).
#pragma once
#include <cstdint>

#include "meganeura/meganeura.hpp"

namespace mntest {

struct FashionMlp {
  meganeura::Graph g;
  meganeura::Tensor loss;

  FashionMlp(int64_t batch, int64_t hidden) {
    using namespace meganeura;
    auto x = g.input("x", {batch, 784});
    auto y = g.input("y", {batch}, i32);
    auto h = relu(matmul(x, g.parameter("fc1.weight", {784, hidden})) + g.parameter("fc1.bias", {hidden}));
    auto logits = matmul(h, g.parameter("fc2.weight", {hidden, 10})) + g.parameter("fc2.bias", {10});
    g.output("logits", logits);
    loss = cross_entropy(logits, y);
  }

  // Built with `optimizer` (AdamW, SGD, ...), its layers initialised (seeds 1 and 2).
  template <class Optimizer>
  meganeura::Session session(Optimizer optimizer) const {
    meganeura::TrainConfig config;
    config.optimizer = optimizer;
    meganeura::Session s = meganeura::build_session(g, loss, config);
    meganeura::init::linear(s, "fc1.weight", "fc1.bias", 1);
    meganeura::init::linear(s, "fc2.weight", "fc2.bias", 2);
    return s;
  }
};

}  // namespace mntest
