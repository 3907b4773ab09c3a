// Session behaviour: liveness-based arena reuse (and that it changes no result), record-once
// replay, inputs changing between steps, parameter round trips, names and stats.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "file_fixtures.hpp"
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using ::testing::UnorderedElementsAre;

// A long chain on [257,129]: pointwise ops interleaved with row ops (so that even a fusing
// lowering keeps many separate intermediates), and branches that keep some tensors alive.
void build_long_chain(CaseBuilder& b) {
  // 30 ops deep the chain is ill-conditioned: the reference itself, rounded to f32 after every
  // node, drifts up to ~1e-3 (relative to the mean) from the double result.
  b.rtol = 5e-3;
  Tensor x = b.input("x", {257, 129});
  Tensor w = b.param("w", {129}, 0.5, 1.5);
  Tensor keep5, keep12;
  Tensor h = x;
  for (int i = 0; i < 30; ++i) {
    switch (i % 5) {
      case 0: h = h * 0.75f + 0.125f; break;
      case 1: h = softmax(h, -1) * 129.0f; break;
      case 2: h = tanh(h) + h * w; break;
      case 3: h = rms_norm(h, w); break;  // (layer_norm of near-constant rows would amplify rounding)
      case 4: h = h - mean(h, {0}, true); break;
    }
    if (i == 5) keep5 = h;
    if (i == 12) keep12 = sigmoid(h);
    if (i == 20) h = h + keep5;
    if (i == 25) h = h * keep12;
  }
  b.output("y", h);
  b.output("side", sum(keep12, {1}));
}

TEST(Session, PlannerReusesMemoryWithoutChangingResults) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  build_long_chain(b);  // the reuse-on/off comparison below is exact

  Session reuse = build_inference_session(b.g);
  Session plain = build_inference_session(b.g, SessionOptions{.reuse_memory = false});
  const MemoryStats m = reuse.memory();
  const MemoryStats p = plain.memory();
  RecordProperty("arena", std::to_string(m.arena));
  RecordProperty("arena_unshared", std::to_string(m.arena_unshared));
  const uint64_t tensor_bytes = 257 * 129 * 4;
  EXPECT_GE(m.arena_unshared, 30 * tensor_bytes / 2) << "the chain has dozens of [257,129] intermediates";
  EXPECT_GT(m.arena, 0u);
  EXPECT_LT(m.arena * 4, m.arena_unshared) << "arena " << m.arena << " bytes, unshared " << m.arena_unshared;
  EXPECT_GE(p.arena, p.arena_unshared) << "reuse_memory=false must give every tensor its own bytes";
  EXPECT_GT(m.total_device, 0u);
  EXPECT_LT(m.total_device, p.total_device);

  feed(reuse, b);
  feed(plain, b);
  reuse.step();
  plain.step();
  check_outputs(reuse, b);
  for (const char* name : {"y", "side"}) {
    const HostTensor a = reuse.read_output(name), c = plain.read_output(name);
    EXPECT_EQ(a.shape, c.shape);
    EXPECT_TRUE(a.bytes == c.bytes) << "output '" << name << "' differs between reuse on and off";
  }
}

// Intermediates past the largest buffer go into further arenas (a device's
// maxMemoryAllocationSize, 4 GiB on many): with a 3-tensor limit the long chain's arena spans
// several buffers, with and without reuse, and gives the same results bit for bit.
TEST(Session, ArenaSpansBuffersPastTheLargest) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  build_long_chain(b);
  const uint64_t tensor_bytes = 257 * 129 * 4, limit = 3 * ((tensor_bytes + 255) / 256 * 256);
  Session one = build_inference_session(b.g);
  feed(one, b);
  one.step();
  for (bool reuse : {true, false}) {
    SCOPED_TRACE(reuse ? "reuse" : "no reuse");
    Session split = build_inference_session(b.g, {.reuse_memory = reuse, .max_buffer_bytes = limit});
    const MemoryStats m = split.memory();
    EXPECT_EQ(one.memory().arena_buffers, 1u);
    EXPECT_GE(m.arena_buffers, reuse ? 2u : 10u) << "arena " << m.arena << " bytes in buffers of " << limit;
    EXPECT_GE(m.arena, one.memory().arena);
    feed(split, b);
    split.step();
    check_outputs(split, b);
    for (const char* name : {"y", "side"})
      EXPECT_TRUE(split.read_output(name).bytes == one.read_output(name).bytes) << name;
  }
  // One intermediate larger than the limit cannot be split: the error names it and its size.
  const std::string msg =
      message_of<OutOfMemoryError>([&] { build_inference_session(b.g, {.max_buffer_bytes = tensor_bytes / 2}); });
  EXPECT_NE(msg.find("needs " + std::to_string(tensor_bytes) + " bytes, more than the device's largest buffer"),
            std::string::npos)
      << msg;
}

// Weights streamed from a checkpoint (Session::set_parameters, what load_weights uses): f32, f16
// and bf16 tensors of odd sizes, read as f32 parameters, cut across staging chunks of 1 KiB, land
// exactly as the one-tensor-at-a-time path puts them; bad names, shapes and dtypes are errors
// naming the file and tensor, raised before any parameter is touched.
TEST(Session, SetParametersStreamsACheckpointAcrossChunks) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  TempDir dir;
  const std::vector<std::pair<std::string, std::pair<Shape, DType>>> tensors = {
      {"a", {{37, 29}, f32}}, {"b", {{1001}, f16}},        {"c", {{3, 5, 7}, bf16}}, {"d", {{2}, f32}},
      {"e", {{700}, f32}},    {"big", {{1201, 1001}, f16}}};  // 4.8 MB as f32: a 4 MiB chunk is filled by several
                                                              // threads
  TensorFile file;
  Graph g;
  Tensor total;
  for (const auto& [name, how] : tensors) {
    const auto& [shape, dtype] = how;
    std::vector<float> v(static_cast<size_t>(numel(shape)));
    for (float& x : v) x = static_cast<float>(rng.uniform(-3, 3));
    file.tensors[name] = dtype == f16 ? host_f16(shape, v) : dtype == bf16 ? host_bf16(shape, v) : host_f32(shape, v);
    Tensor s = sum(g.parameter(name, shape), {});
    total = total.valid() ? total + s : s;
  }
  g.output("total", total);
  write_safetensors(dir / "w.safetensors", file);
  const Checkpoint ckpt = Checkpoint::open(dir / "w.safetensors");
  std::vector<std::string> names;
  for (const auto& [name, how] : tensors) names.push_back(name);

  Session one = build_inference_session(g);
  for (const std::string& name : names) one.set_parameter(name, ckpt.read(name, f32));
  for (const char* kib : {"1", "4096"}) {
    ScopedEnv chunk("MEGANEURA_UPLOAD_CHUNK_KIB", kib);
    Session streamed = build_inference_session(g);
    streamed.set_parameters(ckpt, names);
    for (const std::string& name : names)
      EXPECT_TRUE(streamed.read_parameter(name).bytes == one.read_parameter(name).bytes) << name << ", chunk " << kib;
  }

  auto error = [&](const std::vector<std::string>& which) {
    Session fresh = build_inference_session(g);
    const std::string msg = error_of([&] { fresh.set_parameters(ckpt, which); });
    EXPECT_THAT(error_of([&] { fresh.step(); }), ::testing::HasSubstr("step() before these were set"));
    return msg;
  };
  EXPECT_THAT(error({"a", "nope"}), ::testing::HasSubstr("parameter"));
  Graph other;
  other.output("y", sum(other.parameter("a", {29, 37}), {}) + sum(other.parameter("i", {3}), {}));
  TensorFile ints;
  const std::vector<int32_t> small{1, 2, 3};
  ints.tensors["i"] = HostTensor::i32s({3}, small);
  ints.tensors["a"] = file.tensors["a"];
  write_safetensors(dir / "i.safetensors", ints);
  const Checkpoint ickpt = Checkpoint::open(dir / "i.safetensors");
  Session o = build_inference_session(other);
  const std::string shape = error_of([&] { o.set_parameters(ickpt, std::vector<std::string>{"a"}); });
  EXPECT_THAT(shape, ::testing::AllOf(::testing::HasSubstr("i.safetensors"), ::testing::HasSubstr("\"a\""),
                                      ::testing::HasSubstr("[37,29]"), ::testing::HasSubstr("[29,37]")));
  const std::string dtype = error_of([&] { o.set_parameters(ickpt, std::vector<std::string>{"i"}); });
  EXPECT_THAT(dtype, ::testing::AllOf(::testing::HasSubstr("\"i\""), ::testing::HasSubstr("i32")));
  const std::string missing = error_of([&] { o.set_parameters(ckpt, std::vector<std::string>{"i"}); });
  EXPECT_THAT(missing,
              ::testing::AllOf(::testing::HasSubstr("w.safetensors"), ::testing::HasSubstr("no tensor \"i\"")));
}

// Dispatches are recorded by dependency level (plan/schedule.hpp): the long chain's side branch
// and the independent row sums of a second input join the levels of the chain instead of
// waiting behind it, so the step has fewer barriers than in lowering's order
// (MEGANEURA_SCHEDULE=program), and the same results, bit for bit, with memory reuse on.
TEST(Session, IndependentDispatchesShareLevels) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  b.rtol = 5e-3;  // as PlannerReusesMemoryWithoutChangingResults: the chain drifts in f32
  build_long_chain(b);
  Tensor z = b.input("z", {33, 65});
  b.output("z_rows", sum(exp(z), {1}));  // lowered last, needs nothing of the chain
  std::optional<Session> program;
  {
    mntest::ScopedEnv order("MEGANEURA_SCHEDULE", "program");
    program.emplace(build_inference_session(b.g));
  }
  Session level = build_inference_session(b.g);
  EXPECT_EQ(level.stats().dispatches, program->stats().dispatches);
  EXPECT_LT(level.stats().barriers, program->stats().barriers) << level.listing();
  // By level, z's row sums come before the first barrier after the uploads; in program order,
  // at the end, behind the chain's barriers.
  const std::string listing = level.listing();
  const size_t first_compute_barrier = listing.find("barrier  compute -> compute");
  EXPECT_LT(listing.find("[33,65]"), first_compute_barrier) << listing;
  EXPECT_GT(program->listing().find("[33,65]"), program->listing().find("barrier  compute -> compute"))
      << program->listing();
  feed(level, b);
  feed(*program, b);
  level.step();
  program->step();
  check_outputs(level, b);
  for (const char* name : {"y", "side", "z_rows"})
    EXPECT_TRUE(level.read_output(name).bytes == program->read_output(name).bytes) << name;
}

TEST(Session, RecordsOnceAndReplays) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  Tensor x = b.input("x", {33, 67});
  b.output("y", softmax(matmul(x, b.param("w", {67, 65})) + 1.0f, -1));
  Session s = build_inference_session(b.g);
  EXPECT_EQ(s.stats().recordings, 1u);
  EXPECT_EQ(s.stats().steps, 0u);
  EXPECT_GE(s.stats().dispatches, 2u);
  EXPECT_FALSE(s.listing().empty());
  feed(s, b);
  s.step();
  EXPECT_EQ(s.stats().recordings, 1u);
  EXPECT_EQ(s.stats().steps, 1u);
  check_outputs(s, b);
  b.feeds["x"] = host_f32({33, 67}, rng.floats(33 * 67, -1, 1));
  s.set_input("x", b.feeds["x"]);
  s.step();
  EXPECT_EQ(s.stats().recordings, 1u) << "the second step must replay, not record";
  EXPECT_EQ(s.stats().steps, 2u);
  check_outputs(s, b);
  const uint32_t dispatches = s.stats().dispatches;
  s.step();
  EXPECT_EQ(s.stats().steps, 3u);
  EXPECT_EQ(s.stats().dispatches, dispatches);
}

TEST(Session, ResultsFollowInputsBetweenSteps) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  Tensor x = b.input("x", {7, 33});
  Tensor z = b.input("z", {33});
  b.output("y", exp(x) * z + sum(x, {1}, true));
  Session s = build_inference_session(b.g);
  feed(s, b);
  s.step();
  check_outputs(s, b);
  const HostTensor first = s.read_output("y");

  const auto x1 = b.feeds["x"];
  b.feeds["x"] = host_f32({7, 33}, rng.floats(7 * 33, -1, 1));
  s.set_input("x", b.feeds["x"]);  // z unchanged: the session keeps it
  s.step();
  check_outputs(s, b);
  EXPECT_FALSE(s.read_output("y").bytes == first.bytes);

  // Through the span<const float> overload, back to the first values: the first result again.
  b.feeds["x"] = x1;
  const auto v = decode(x1);
  const std::vector<float> xf(v.begin(), v.end());
  s.set_input("x", std::span<const float>(xf));
  s.step();
  EXPECT_TRUE(s.read_output("y").bytes == first.bytes) << "same inputs, same bits";
}

// A permute that moves only size-1 dimensions (a decoding step's [1, 1, H, D] -> [1, H, 1, D])
// is a view: no dispatch, the same values; one that reorders data is a copy.
TEST(Session, PermutingUnitDimensionsIsAView) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  Tensor x = b.input("x", {1, 1, 3, 4});
  b.output("y", permute(x * 2.0f, {0, 2, 1, 3}) + 1.0f);
  Session s = build_inference_session(b.g, {.optimize = false});
  EXPECT_EQ(s.stats().dispatches, 2u) << s.listing();  // the mul and the add
  feed(s, b);
  s.step();
  check_outputs(s, b);
  CaseBuilder c(rng);
  c.output("y", permute(c.input("x", {1, 2, 3, 4}) * 2.0f, {0, 2, 1, 3}) + 1.0f);
  Session copy = build_inference_session(c.g, {.optimize = false});
  EXPECT_EQ(copy.stats().dispatches, 3u) << copy.listing();
  feed(copy, c);
  copy.step();
  check_outputs(copy, c);
}

TEST(Session, ReadParameterRoundTrips) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  Tensor w = b.param("w", {33, 7});
  Tensor h = b.param_host("h", host_f16({65}, rng.floats(65, -3, 3)));
  Tensor k = b.param_host("k", host_bf16({3}, rng.floats(3, -3, 3)));
  b.output("y", sum(w) + sum(h) + sum(k) + sum(b.input("x", {1})));
  // y adds ~300 values of either sign: its f32 rounding follows their magnitudes, not y's own
  // (which cancellation can make 1e-3 of them: seed 17363628095469211562 failed at rtol 1e-5).
  const auto magnitudes = [&b] {
    double m = 0;
    for (const auto& [name, t] : b.feeds)
      for (float v : t.to_f32()) m += std::abs(v);
    return m;
  };
  b.scale = magnitudes();
  Session s = build_inference_session(b.g);
  feed(s, b);
  for (const char* name : {"w", "h", "k"}) {
    const HostTensor got = s.read_parameter(name);
    EXPECT_EQ(got.dtype, b.feeds[name].dtype) << name;
    EXPECT_EQ(got.shape, b.feeds[name].shape) << name;
    EXPECT_TRUE(got.bytes == b.feeds[name].bytes) << "parameter '" << name << "' did not round-trip";
  }
  s.step();
  check_outputs(s, b);
  // set_parameter through span<const float> after a step.
  const std::vector<float> nw = rng.floats(33 * 7, -5, 5);
  s.set_parameter("w", std::span<const float>(nw));
  EXPECT_TRUE(s.read_parameter("w").bytes == host_f32({33, 7}, nw).bytes);
  b.feeds["w"] = host_f32({33, 7}, nw);
  b.scale = magnitudes();
  s.step();
  check_outputs(s, b);
}

TEST(Session, ListsNames) {
  Graph g;
  Tensor x = g.input("tokens", {3}, i32);
  Tensor w = g.parameter("embed.weight", {10, 4});
  Tensor b = g.parameter("bias", {4});
  g.output("hidden", embedding(w, x) + b);
  g.output("ids", x);
  Session s = build_inference_session(g);
  EXPECT_THAT(s.input_names(), UnorderedElementsAre("tokens"));
  EXPECT_THAT(s.parameter_names(), UnorderedElementsAre("embed.weight", "bias"));
  EXPECT_THAT(s.output_names(), UnorderedElementsAre("hidden", "ids"));
}

TEST(Session, ProfileGivesOneEntryPerDispatch) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  b.output("y", relu(matmul(b.input("x", {5, 9}), b.param("w", {9, 3}))));
  Session s = build_inference_session(b.g, SessionOptions{.profile = true});
  feed(s, b);
  s.step();
  check_outputs(s, b);
  const auto prof = s.profile();
  EXPECT_EQ(prof.size(), s.stats().dispatches);
  for (const auto& [label, ns] : prof) EXPECT_GE(ns, 0.0) << label;
}

// A program runs the calls of its own outputs and asks only for the inputs they read.
TEST(Session, ProgramsRunWhatTheirOutputsNeed) {
  Graph g;
  Tensor a = g.input("a", {4}), b = g.input("b", {4});
  g.output("twice_a", a * 2.0f);
  g.output("b_plus_one", b + 1.0f);
  Session s = build_inference_session(g, {.programs = {{"twice_a"}, {"b_plus_one"}}});
  s.set_input("a", std::vector<float>{1, 2, 3, 4});
  s.run(0);  // "b" is unset: program 0 does not read it
  EXPECT_EQ(s.read_output("twice_a").to_f32(), (std::vector<float>{2, 4, 6, 8}));
  try {
    s.run(1);
    FAIL() << "program 1 ran without its input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run(1) before these were set: input \"b\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.run(2), Error);
  EXPECT_THROW(build_inference_session(g, {.programs = {{"nope"}}}), NameError);
}

}  // namespace
// A program's listing and profile are its own command list's: program 0 runs the product and
// relu of `y`, program 1 the exp of `z`, and neither shows the other's dispatches.
TEST(Session, ProgramsHaveTheirOwnListingAndProfile) {
  Graph g;
  Tensor x = g.input("x", {5, 9});
  g.output("y", relu(matmul(x, g.parameter("w", {9, 3}))));
  g.output("z", exp(g.input("u", {7})));
  Session s = build_inference_session(g, {.profile = true, .programs = {{"y"}, {"z"}}});
  s.set_input("x", std::vector<float>(45, 0.5f));
  s.set_input("u", std::vector<float>(7, 0.0f));
  s.set_parameter("w", std::vector<float>(27, 1.0f));
  EXPECT_TRUE(s.profile(1).empty() || s.profile(1)[0].second == 0.0) << "nothing ran yet";
  s.run(1);
  EXPECT_EQ(s.read_output("z").to_f32(), std::vector<float>(7, 1.0f));
  const std::string only_z = s.listing(1);
  EXPECT_NE(only_z.find("exp"), std::string::npos) << only_z;
  EXPECT_EQ(only_z.find("matmul"), std::string::npos) << only_z;
  EXPECT_NE(s.listing(0).find("matmul"), std::string::npos) << s.listing(0);
  const auto prof = s.profile(1);
  ASSERT_FALSE(prof.empty());
  for (const auto& [label, ns] : prof) {
    EXPECT_EQ(label.find("matmul"), std::string::npos) << label;
    EXPECT_GE(ns, 0.0) << label;
  }
  EXPECT_THAT([&] { (void)s.listing(2); }, ThrowsMessage<Error>(HasSubstr("the session has 2 programs")));
  EXPECT_THAT([&] { (void)s.profile(2); }, ThrowsMessage<Error>(HasSubstr("the session has 2 programs")));
  EXPECT_THAT([&] { (void)s.listing(SIZE_MAX); }, ThrowsMessage<Error>(HasSubstr("the session has 2 programs")));
}

}  // namespace mntest
