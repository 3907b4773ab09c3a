// The quickstart: train a two-layer MLP on Fashion-MNIST (Debian's dataset-fashion-mnist) and
// report test accuracy after every epoch. Writes out/fashion.{csv,svg} and a checkpoint.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <meganeura/meganeura.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
namespace mn = meganeura;

namespace {

constexpr int kMaxEpochs = 1000;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: fashion_mnist [epochs]\n"
               "  epochs  a whole number from 1 to %d (default 3; the 85%% pass mark holds from 3)\n"
               "  MEGANEURA_FASHION_MNIST=<dir>: the data set's directory (default Debian's)\n",
               kMaxEpochs);
}

// The epoch count, all of the argument a whole number from 1 to kMaxEpochs ("3"; not "3x",
// " 3", "+3" or "1e3"); nothing otherwise.
std::optional<int> parse_epochs(std::string_view arg) {
  int value = 0;
  const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), value);
  if (arg.empty() || ec != std::errc{} || end != arg.data() + arg.size() || value < 1 || value > kMaxEpochs)
    return std::nullopt;
  return value;
}

int train(int epochs) {
  const int64_t batch = 128;
  auto start = std::chrono::steady_clock::now();
  auto data = mn::data::FashionMnist::load();  // or MEGANEURA_FASHION_MNIST=<dir>
  std::printf("%s\n", mn::default_device_info().banner().c_str());

  mn::Graph g;
  auto x = g.input("x", {batch, 784});
  auto y = g.input("y", {batch}, mn::i32);
  auto h = mn::relu(mn::matmul(x, g.parameter("fc1.weight", {784, 256})) + g.parameter("fc1.bias", {256}));
  auto logits = mn::matmul(h, g.parameter("fc2.weight", {256, 10})) + g.parameter("fc2.bias", {10});
  g.output("logits", logits);
  auto loss = mn::cross_entropy(logits, y);

  auto session = mn::build_session(
      g, loss,
      {.optimizer = mn::AdamW{.lr = 2e-3f, .weight_decay = 1e-4f}, .schedule = mn::Cosine{.warmup_steps = 100}});
  mn::init::linear(session, "fc1.weight", "fc1.bias", 1);
  mn::init::linear(session, "fc2.weight", "fc2.bias", 2);

  mn::Trainer trainer(session, {.epochs = epochs, .batch_size = batch, .curves = "out/fashion"});
  auto history = trainer.fit(data.train, data.test);
  session.save("out/fashion.safetensors");
  if (history.empty()) throw std::runtime_error("training ran no epoch");

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("test accuracy %.2f%% after %d epochs, %.1f s in all; curves in out/fashion.svg and out/fashion.csv\n",
              100.0 * history.back().test_accuracy, epochs, seconds);
  // The pass mark, 85%, holds for the full run (3 epochs, the default) or longer; shorter runs only report.
  const bool full = epochs >= 3, pass = history.back().test_accuracy >= 0.85;
  std::puts(!full  ? "no pass mark: it holds for runs of 3 epochs or more (85%)"
            : pass ? "PASS: at least 85% after 3 epochs or more"
                   : "FAIL: below 85% after 3 epochs or more");
  return full && !pass ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return 0;
  }
  std::optional<int> epochs = 3;
  if (argc > 2) {
    std::fprintf(stderr, "fashion_mnist: one argument at most (the epoch count), got %d\n", argc - 1);
    usage(stderr);
    return 2;
  }
  if (argc == 2 && !(epochs = parse_epochs(argv[1]))) {
    std::fprintf(stderr, "fashion_mnist: epochs: '%s' is not a whole number from 1 to %d\n", argv[1], kMaxEpochs);
    usage(stderr);
    return 2;
  }
  try {
    return train(*epochs);
  } catch (const mn::Error& e) {  // a missing data set, an unwritable out/, no Vulkan device
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    return 1;
  }
}
