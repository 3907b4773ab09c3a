// Session::load's checkpoint — names, shapes and dtypes of the parameters and the optimizer
// state, the step counters in the metadata — into a small training session (a linear layer,
// Adam, one step taken) built once on the Vulkan device (lavapipe where there is no GPU). Besides
// "success or an Error", the promise session.hpp makes: a rejected file leaves the session as it
// was, every tensor and counter (compared through save()).
#include <cstdlib>
#include <memory>
#include <vector>

#include "input_file.hpp"
#include "meganeura/io.hpp"
#include "meganeura/ops.hpp"
#include "meganeura/train.hpp"

namespace mn = meganeura;

namespace {

struct Fixture {
  std::unique_ptr<mn::Session> session;
  mn::TensorFile state;  // what save() wrote after the last successful load
};

mn::TensorFile saved(const mn::Session& session) {
  const std::string path = mn::fuzz::scratch_dir() + "/state.safetensors";
  session.save(path);
  return mn::read_safetensors(path);
}

Fixture make_fixture() {
  mn::Graph g;
  const mn::Tensor x = g.input("x", {2, 3}), y = g.input("y", {2, 2});
  const mn::Tensor loss = mn::mse_loss(mn::matmul(x, g.parameter("w", {3, 2})) + g.parameter("b", {2}), y);
  mn::TrainConfig config;
  config.optimizer = mn::Adam{.lr = 0.01f};
  Fixture f{std::make_unique<mn::Session>(mn::build_session(g, loss, config)), {}};
  f.session->set_parameter("w", std::vector<float>{0.5f, -1, 2, 0.25f, -0.5f, 1});
  f.session->set_parameter("b", std::vector<float>{0.1f, -0.1f});
  f.session->set_input("x", std::vector<float>{1, 2, 3, 4, 5, 6});
  f.session->set_input("y", std::vector<float>{1, 0, 0, 1});
  f.session->step();  // optimizer state and step counters that are not zero
  f.state = saved(*f.session);
  return f;
}

Fixture& fixture() {
  static Fixture f = make_fixture();
  return f;
}

bool same(const mn::TensorFile& a, const mn::TensorFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [name, t] : a.tensors) {
    const auto it = b.tensors.find(name);
    if (it == b.tensors.end() || it->second.bytes != t.bytes || it->second.shape != t.shape) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Kernels compiled at session build are cached in the scratch folder, not the user's cache.
  setenv("MEGANEURA_CACHE_DIR", (mn::fuzz::scratch_dir() + "/kernel-cache").c_str(), 0);
  (void)fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = fixture();
  const std::string path = mn::fuzz::write_input("input.safetensors", data, size);
  const bool loaded = mn::fuzz::reads([&] { f.session->load(path); });
  mn::TensorFile now = saved(*f.session);
  if (!loaded && !same(now, f.state)) mn::fuzz::fail("a rejected load changed the session");
  f.state = std::move(now);
  return 0;
}
