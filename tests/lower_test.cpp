// Lowering without a device: the pattern matcher its passes use, the order and log of the
// passes, and the dispatch counts of SmolLM2-135M's shapes (a regression bound: a change to
// lowering may lower them, never raise them unnoticed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "kernels/kernel_abi.hpp"
#include "kernels/spirv.hpp"
#include "lower/lowered.hpp"
#include "lower/match.hpp"
#include "meganeura/llama.hpp"
#include "meganeura/ops.hpp"
#include "optimize/optimize.hpp"
#include "runtime/stage_options.hpp"
#include "train/training_graph.hpp"
#include "train/update_graph.hpp"

namespace mn = meganeura;
using mn::lower::match;
using mn::lower::node;
using mn::lower::var;

namespace {

// An H100 as the device reports it: tensor cores (NV), subgroups of 32, 132 SMs.
mn::DeviceInfo h100() {
  mn::DeviceInfo d;
  d.name = "an H100 (described, not opened)";
  d.subgroup_size = 32;
  d.shared_memory = 232448;
  d.multiprocessors = 132;
  d.fp16 = true;
  d.coopmat_nv = true;
  d.coopmat_shapes = {"16x16x16 f16*f16->f32"};
  return d;
}

mn::models::LlamaConfig smollm2(int64_t layers) {
  mn::models::LlamaConfig c;
  c.vocab_size = 49152;
  c.hidden_size = 576;
  c.intermediate_size = 1536;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 9;
  c.num_key_value_heads = 3;
  c.head_dim = 64;
  c.tie_word_embeddings = true;
  return c;
}

// The default precision (tests run at "highest", validation_env.cpp): tensor cores on; update
// packs of 4 MiB (the default).
mn::lower::Lowered lowered(const mn::Graph& g, const std::vector<int>& keep = {},
                           const mn::DeviceInfo& device = h100()) {
  const std::string before = std::getenv("MEGANEURA_MATMUL_PRECISION") ? std::getenv("MEGANEURA_MATMUL_PRECISION") : "";
  setenv("MEGANEURA_MATMUL_PRECISION", "high", 1);
  mn::lower::LowerOptions o = mn::runtime::lower_options(device, true);
  setenv("MEGANEURA_MATMUL_PRECISION", before.c_str(), 1);
  o.update_pack_bytes = uint64_t{4} << 20;
  return mn::lower::lower(g, keep, o);
}

// The calls of a step (derived calls, weights staged for the tensor cores, run only when the
// parameters change).
size_t calls(const mn::Graph& g, const std::vector<int>& keep = {}) {
  const mn::lower::Lowered low = lowered(g, keep);
  return static_cast<size_t>(
      std::count_if(low.calls.begin(), low.calls.end(), [](const auto& c) { return !c.derived; }));
}

size_t derived_calls(const mn::Graph& g, const std::vector<int>& keep = {}) {
  const mn::lower::Lowered low = lowered(g, keep);
  return static_cast<size_t>(
      std::count_if(low.calls.begin(), low.calls.end(), [](const auto& c) { return c.derived; }));
}

// A decoding step's graph: `tokens` (one, or a prefill's) against KV caches of `slots` positions.
std::unique_ptr<mn::Graph> decode_step(const mn::models::LlamaConfig& c, int64_t slots, int64_t tokens = 1) {
  auto g = std::make_unique<mn::Graph>();
  mn::models::Llama model(*g, c);
  std::vector<mn::models::Llama::Cache> caches;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    caches.push_back({g->state(std::string("k").append(std::to_string(l)), model.cache_shape(1, slots)),
                      g->state(std::string("v").append(std::to_string(l)), model.cache_shape(1, slots))});
  mn::Tensor hidden =
      model.forward_cached(g->input("ids", {1, tokens}, mn::i32), g->input("positions", {tokens}, mn::i32),
                           g->input("start", {1}, mn::i32), caches);
  g->output("logits", model.head(mn::gather(hidden, g->input("last", {1}, mn::i32), 1)));
  return g;
}

size_t count_kernel(const mn::lower::Lowered& low, mn::kernels::Kernel k) {
  return static_cast<size_t>(
      std::count_if(low.calls.begin(), low.calls.end(), [&](const auto& c) { return c.kernel == k; }));
}

bool is_staged_product(mn::kernels::Kernel k) {
  return k == mn::kernels::Kernel::MatMulCoopStagedNV || k == mn::kernels::Kernel::MatMulCoopStagedTallNV;
}

size_t staged_products(const mn::lower::Lowered& low) {
  return count_kernel(low, mn::kernels::Kernel::MatMulCoopStagedNV) +
         count_kernel(low, mn::kernels::Kernel::MatMulCoopStagedTallNV);
}

// A training step's graph as build_session makes it, and the nodes it keeps.
std::vector<int> training_step(mn::models::LlamaGraph& model, const mn::TrainConfig& config,
                               std::unique_ptr<mn::Graph>& graph) {
  mn::train::TrainingGraph tg = mn::train::build_training_graph(*model.graph, model.loss, config);
  const mn::train::UpdateGraph update = mn::train::append_update_graph(*tg.graph, tg.params, tg.grads, config);
  std::vector<int> keep = tg.grads;
  keep.insert(keep.end(), update.roots.begin(), update.roots.end());
  graph = std::move(tg.graph);
  return keep;
}

}  // namespace

TEST(LowerMatch, NamedCapturesBindNodesAndRepeatedVariablesMustAgree) {
  mn::Graph g;
  mn::Tensor x = g.input("x", {4}), w = g.input("w", {4});
  mn::Tensor y = mn::add(mn::mul(x, w), x);
  mn::Tensor z = mn::add(mn::mul(x, w), w);
  const auto p = node(mn::Op::Add, {node(mn::Op::Mul, {var("a"), var("b")}).as("product"), var("a")});
  const auto m = match(g, y.id(), p);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["a"], x.id());
  EXPECT_EQ((*m)["b"], w.id());
  EXPECT_EQ((*m)["product"], g.node(y.id()).inputs[0]);
  EXPECT_FALSE(match(g, z.id(), p)) << "a is x in the product and w in the add";
  EXPECT_FALSE(match(g, x.id(), p)) << "an input is no add";
}

TEST(LowerLog, PrintsTheGroupsAfterEachPassInOrder) {
  mn::models::LlamaConfig c = smollm2(2);
  c.vocab_size = 256;
  auto lg = mn::models::llama_graph(c, 1, 16, true);
  std::unique_ptr<mn::Graph> g;
  const std::vector<int> keep = training_step(lg, {.clip_grad_norm = 1.0f, .accumulation_steps = 2}, g);
  mn::lower::LowerOptions o = mn::runtime::lower_options(h100(), true);
  o.log = true;
  o.update_pack_bytes = uint64_t{4} << 20;
  testing::internal::CaptureStderr();
  const size_t n = mn::lower::lower(*g, keep, o).calls.size();
  const std::string log = testing::internal::GetCapturedStderr();
  size_t at = log.find("dispatch groups before fusion");
  ASSERT_NE(at, std::string::npos) << log;
  for (const char* pass :
       {"matmul_siblings", "elementwise_chains", "scatter_in_place", "rotary_pairs", "attention_grad_pairs",
        "norm_after_matmul", "add_in_norm_backward", "map_in_reduction", "swiglu_in_matmul", "rotary_in_matmul",
        "rms_norm_in_gemv", "product_sums", "update_packs"}) {
    const size_t next = log.find(std::string("lower: ") + pass + " (", at);
    ASSERT_NE(next, std::string::npos) << pass << " missing or out of order in:\n" << log;
    at = next;
  }
  EXPECT_NE(log.find(std::to_string(n) + " calls from these groups"), std::string::npos) << log;
  EXPECT_NE(log.find("matmul @%"), std::string::npos) << log;
  EXPECT_NE(log.find("+ glu"), std::string::npos) << "the gate/up pair computes its swiglu:\n" << log;
  EXPECT_NE(log.find("product_sum @%"), std::string::npos) << log;
  EXPECT_NE(log.find("step_scalars"), std::string::npos) << log;
  EXPECT_NE(log.find("clip_grad_norm"), std::string::npos) << log;
  EXPECT_NE(log.find("training @%"), std::string::npos) << "the updates' and accumulations' packs:\n" << log;
}

TEST(LowerLog, SilentUnlessAsked) {
  mn::Graph g;
  g.output("y", mn::relu(mn::exp(g.input("x", {3}))));
  testing::internal::CaptureStderr();
  mn::lower::lower(g, {}, {.fuse = true});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// SmolLM2-135M's three benchmark modes, as the H100 lowers them: at most as many calls as when
// lowering became passes over dispatch groups (docs/development.md).
TEST(LowerCounts, SmolLM2NeverTakesMoreDispatches) {
  const mn::models::LlamaConfig c = smollm2(30);
  auto inference = mn::models::llama_graph(c, 1, 128, false);
  // 245: the products that read a norm's rows (q/k/v, gate/up, the LM head) or the gate/up
  // product's swiglu (down) read them staged by the kernel that wrote them, their weights staged
  // once by derived calls (6 a layer, 1 for the LM head).
  EXPECT_LE(calls(*mn::optimize::optimize(*inference.graph)), 245u);
  EXPECT_EQ(derived_calls(*mn::optimize::optimize(*inference.graph)), 181u);

  auto g = decode_step(c, 256);
  EXPECT_LE(calls(*mn::optimize::optimize(*g)), 185u);  // 245 until the KV appends joined the rotary

  auto training = mn::models::llama_graph(c, 1, 128, true);
  std::unique_ptr<mn::Graph> step;
  const std::vector<int> keep = training_step(training, {.optimizer = mn::AdamW{.lr = 1e-4f}}, step);
  // As when the optimizer's calls were appended after lowering: step_scalars is one more, and the
  // cross-entropy backward's counting dispatch one fewer; the LM head's weight gradient stages its
  // operands before the product (two StageF16 calls, faster on an H100: 9.08 -> 8.99 ms).
  EXPECT_LE(calls(*step, keep), 1037u);
  EXPECT_EQ(derived_calls(*step, keep), 0u);  // the optimizer writes every weight
}

// Each decoding layer's rotary of q and k writes k and v into their caches (RotaryAppend): no
// CacheWrite dispatch is left, and the step is 6 dispatches a layer.
TEST(LowerPicks, DecodingAppendsJoinEveryLayersRotary) {
  const mn::lower::Lowered low = lowered(*mn::optimize::optimize(*decode_step(smollm2(3), 256)));
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::RotaryAppend), 3u);
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::CacheWrite), 0u);
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::Rotary), 0u);
  // A prefill's q/k/v on split-K rotates in its summing pass: the appends follow it, as CacheWrite.
  // At SmolLM2-135M's shape on an H100 every layer but the first does.
  mn::models::LlamaConfig c = smollm2(3);
  c.vocab_size = 1000;
  const mn::lower::Lowered prefill = lowered(*mn::optimize::optimize(*decode_step(c, 256, 128)));
  EXPECT_EQ(count_kernel(prefill, mn::kernels::Kernel::MatMulSplitSumRotary), 2u);
  EXPECT_EQ(count_kernel(prefill, mn::kernels::Kernel::RotaryAppend), 1u);
  EXPECT_EQ(count_kernel(prefill, mn::kernels::Kernel::CacheWrite), 4u);
}

// A generator's graph holds its prefill and its decoding step, reading the same weights: the
// step's q/k/v and gate/up products group as they do alone, sharing the prefill's packed weights.
TEST(LowerPicks, ADecodingStepBesideItsPrefillGroupsItsProducts) {
  const mn::models::LlamaConfig c = smollm2(2);
  mn::Graph g;
  mn::models::Llama model(g, c);
  std::vector<mn::models::Llama::Cache> caches;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    caches.push_back({g.state(std::string("k").append(std::to_string(l)), model.cache_shape(1, 256)),
                      g.state(std::string("v").append(std::to_string(l)), model.cache_shape(1, 256))});
  for (int64_t tokens : {int64_t{64}, int64_t{1}}) {
    const std::string at = std::to_string(tokens);
    mn::Tensor hidden =
        model.forward_cached(g.input("ids" + at, {1, tokens}, mn::i32), g.input("positions" + at, {tokens}, mn::i32),
                             g.input("start" + at, {1}, mn::i32), caches);
    g.output("logits" + at, model.head(mn::gather(hidden, g.input("last" + at, {1}, mn::i32), 1)));
  }
  const auto gemvs = [](const mn::lower::Lowered& low) {
    return count_kernel(low, mn::kernels::Kernel::MatMulGemv) +
           count_kernel(low, mn::kernels::Kernel::MatMulGemvSubgroup);
  };
  const size_t alone = gemvs(lowered(*mn::optimize::optimize(*decode_step(c, 256))));
  EXPECT_EQ(gemvs(lowered(*mn::optimize::optimize(g))), alone + 1);  // + the prefill's LM head on its last row
}

// The tensor-core attention takes 128 query rows a workgroup. Its forward runs from 512 full
// blocks (the 1.7B shape at 4 x 512 tokens), its backward from 64 (at 1 x 256); at 128 tokens
// (32 blocks) the exact kernels do both, 2.4x faster forward on an H200. Never for a decoding
// step's one row a head, which would fill each block with a single row.
TEST(LowerPicks, TensorCoreAttentionNeedsRowsNotJustHeads) {
  mn::models::LlamaConfig c = smollm2(1);
  c.hidden_size = 2048;
  c.num_attention_heads = c.num_key_value_heads = 32;
  c.vocab_size = 1000;
  auto picks = [&](int64_t batch, int64_t seq) {  // tensor-core forward, backward calls of a step
    auto model = mn::models::llama_graph(c, batch, seq, true);
    std::unique_ptr<mn::Graph> step;
    const std::vector<int> keep = training_step(model, {.optimizer = mn::AdamW{.lr = 1e-4f}}, step);
    const mn::lower::Lowered low = lowered(*step, keep);
    return std::pair{count_kernel(low, mn::kernels::Kernel::AttentionCoopNV),
                     count_kernel(low, mn::kernels::Kernel::AttentionBackwardCoopNV)};
  };
  EXPECT_EQ(picks(1, 128), std::pair(size_t{0}, size_t{0}));
  EXPECT_EQ(picks(1, 256).first, 0u);
  EXPECT_GT(picks(1, 256).second, 0u);
  EXPECT_EQ(picks(4, 512).first, 1u);
  const mn::lower::Lowered d = lowered(*mn::optimize::optimize(*decode_step(c, 300)));
  EXPECT_EQ(count_kernel(d, mn::kernels::Kernel::AttentionCoopNV), 0u);
  EXPECT_EQ(count_kernel(d, mn::kernels::Kernel::Attention), 1u);
}

// A decoding step's attention (one row a head) splits its keys over workgroups where a workgroup
// a head would leave SMs idle and the cache holds at least two splits of 256 keys: as many as
// give 2 workgroups an SM (ceil(2 * 132 / 9) = 30 for SmolLM2-135M's 9 heads, 9 for the 1.7B
// shape's 32) or as fit the cache at 256 keys each (8 of 2048 slots, 2 of 600), none for 300.
TEST(LowerPicks, DecodingSplitsTheKeysOfLongCaches) {
  auto splits = [](int64_t hidden, int64_t heads, int64_t slots) {
    mn::models::LlamaConfig c = smollm2(1);
    c.hidden_size = hidden;
    c.num_attention_heads = c.num_key_value_heads = heads;
    c.head_dim = 64;
    c.vocab_size = 1000;
    const mn::lower::Lowered low = lowered(*mn::optimize::optimize(*decode_step(c, slots)));
    std::vector<uint32_t> found;
    for (const auto& call : low.calls)
      if (call.kernel == mn::kernels::Kernel::Attention) {
        mn::kernels::AttentionParams p{};
        std::memcpy(&p, call.params.data(), sizeof p);
        const bool split = call.spec.size() > 3 && call.spec[3] == 1u;
        found.push_back(split ? p.key_splits : 0u);
        if (split) {
          EXPECT_EQ(call.groups[0], p.key_splits);
        }
      }
    return found;
  };
  EXPECT_EQ(splits(2048, 32, 4096), std::vector<uint32_t>{9});
  EXPECT_EQ(splits(2048, 32, 2048), std::vector<uint32_t>{8});
  EXPECT_EQ(splits(576, 9, 8192), std::vector<uint32_t>{30});
  EXPECT_EQ(splits(576, 9, 600), std::vector<uint32_t>{2});
  EXPECT_EQ(splits(576, 9, 300), std::vector<uint32_t>{0});
}

// Operands staged before the product (StageF16, then MatMulCoopStagedNV) where each staged value
// feeds many products (M·N ≥ 512·(M + N)), not at 128 rows; MEGANEURA_COOP_STAGED forces either.
TEST(LowerPicks, OperandsStagedBeforeLargeProducts) {
  mn::Graph g;
  const mn::Tensor big = mn::matmul(g.input("a", {2048, 1000}), g.parameter("w", {1000, 3000}));
  const mn::Tensor small = mn::matmul(g.input("x", {128, 576}), g.parameter("v", {576, 1536}));
  g.output("big", big);
  g.output("small", small);
  auto staged_words = [](int64_t rows, int64_t k) {  // rows padded to 64, K to 64; exponents after
    const int64_t r = (rows + 63) / 64 * 64, words = (k + 63) / 64 * 32;
    return static_cast<uint64_t>(r * words + r / 16 * (words / 16)) * 4;
  };
  const mn::lower::Lowered low = lowered(g);
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::StageF16), 2u);
  // K = 1000 a workgroup: 128-row tiles (MatMulCoopStagedTallNV).
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::MatMulCoopStagedTallNV), 1u);
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::MatMulCoopNV), 1u);
  std::vector<mn::kernels::StageF16Params> stages;
  for (const auto& c : low.calls) {
    if (c.kernel != mn::kernels::Kernel::StageF16) continue;
    mn::kernels::StageF16Params sp{};
    ASSERT_EQ(c.params.size() * 4, sizeof(sp));
    std::memcpy(&sp, c.params.data(), sizeof(sp));
    stages.push_back(sp);
    EXPECT_EQ(low.tensors[static_cast<size_t>(c.tensors[1].tensor)].bytes, staged_words(sp.rows, sp.K)) << c.label;
  }
  ASSERT_EQ(stages.size(), 2u);
  // The weight, which no call writes, is staged by a derived call into a state of its own.
  EXPECT_EQ(derived_calls(g), 1u);
  for (const auto& c : low.calls) {
    if (c.kernel != mn::kernels::Kernel::StageF16) continue;
    EXPECT_EQ(low.tensors[static_cast<size_t>(c.tensors[1].tensor)].role,
              c.derived ? mn::lower::Role::State : mn::lower::Role::Scratch)
        << c.label;
  }
  // A, [2048, 1000] row-major; B's columns as rows: w(k, n) at n + 3000 k.
  EXPECT_EQ(stages[0].rows, 2048u);
  EXPECT_EQ(stages[0].row_stride, 1000u);
  EXPECT_EQ(stages[0].col_stride, 1u);
  EXPECT_EQ(stages[1].rows, 3000u);
  EXPECT_EQ(stages[1].padded_rows, 3008u);
  EXPECT_EQ(stages[1].row_words, 512u);  // K 1000 padded to 1024
  EXPECT_EQ(stages[1].row_stride, 1u);
  EXPECT_EQ(stages[1].col_stride, 3000u);
  setenv("MEGANEURA_COOP_STAGED", "0", 1);
  EXPECT_EQ(count_kernel(lowered(g), mn::kernels::Kernel::StageF16), 0u);
  setenv("MEGANEURA_COOP_STAGED", "1", 1);
  EXPECT_EQ(staged_products(lowered(g)), 2u);
  unsetenv("MEGANEURA_COOP_STAGED");
}

// A norm or a gate/up product whose output a tensor-core product reads next, weights staged
// once, stages it as it stores it (StagedRows, GLU_STAGED): the products need no StageF16 for A.
// Where the weights are written (a training step) nothing is staged that way.
// On a device with VK_NV_cooperative_matrix2 (and a build with its kernels), the inference
// products whose operands both hold one exponent along K run on workgroup-scope matrices where
// they have 1024 rows and K of 2048 or more, at any size with MEGANEURA_COOP2=1: the q/k/v group,
// the gate/up pair (as a group of two, the swiglu a call of its own), the LM head, and the o and
// down projections where unsplit (their A then staged at one exponent a block of rows,
// WHOLE_ROWS) and, as they add a residual, K is 8192 or more: the down projection. The 1.7B
// shape at 128 tokens, asked: q/k/v and this head on 64 x 128 tiles (48 and 32 of 128 rows would
// leave most SMs idle), gate/up on 128-row ones (128 of them); o and down, split over K, keep
// MatMulCoopStagedNV; unasked, none. At 8 x 128 tokens, unasked: every product but o, on
// 128-row tiles.
TEST(LowerPicks, OneExponentProductsTakeWorkgroupScopeMatrices) {
  mn::models::LlamaConfig c = smollm2(2);
  c.hidden_size = 2048;
  c.intermediate_size = 8192;
  c.num_attention_heads = c.num_key_value_heads = 32;
  c.vocab_size = 4096;  // an LM head of 2^30 multiply-adds: its weights staged once
  auto model = mn::models::llama_graph(c, 1, 128, false);
  const std::unique_ptr<mn::Graph> graph = mn::optimize::optimize(*model.graph);  // the swiglu fused
  if (!mn::kernels::kernel_built(mn::kernels::Kernel::MatMulCoop2StagedNV))
    GTEST_SKIP() << "this build has no cooperative-matrix-2 kernels (scripts/fetch_glslang.sh)";
  mn::DeviceInfo device = h100();
  device.coopmat_khr = device.coopmat2_nv = true;
  setenv("MEGANEURA_COOP2", "1", 1);
  const mn::lower::Lowered low = lowered(*graph, {}, device);
  unsetenv("MEGANEURA_COOP2");
  std::vector<std::string> picked;
  for (const auto& call : low.calls)
    if (call.kernel == mn::kernels::Kernel::MatMulCoop2StagedNV) {
      ASSERT_GE(call.spec.size(), 18u) << call.label;
      EXPECT_EQ(call.label.find("swiglu"), std::string::npos) << call.label;  // a call of its own
      const bool gate_up = call.label.find("-> [1,128,8192]") != std::string::npos;
      EXPECT_EQ(call.spec[15], gate_up ? 128u : 64u) << call.label;  // BM
      EXPECT_EQ(call.spec[16], 128u) << call.label;                  // BN
      picked.push_back(call.label);
    }
  EXPECT_EQ(picked.size(), 2u * 2 + 1) << ::testing::PrintToString(picked);
  EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::MatMulCoopStagedNV) +
                count_kernel(low, mn::kernels::Kernel::MatMulCoopStagedTallNV),
            2u * 2);                                           // o and down
  const mn::lower::Lowered off = lowered(*graph, {}, device);  // unasked, 128 rows
  EXPECT_EQ(count_kernel(off, mn::kernels::Kernel::MatMulCoop2StagedNV), 0u);
  auto batched = mn::models::llama_graph(c, 8, 128, false);
  const mn::lower::Lowered tall = lowered(*mn::optimize::optimize(*batched.graph), {}, device);
  size_t tall_picks = 0;
  for (const auto& call : tall.calls)
    if (call.kernel == mn::kernels::Kernel::MatMulCoop2StagedNV) {
      EXPECT_EQ(call.spec[15], 128u) << call.label;
      ++tall_picks;
    }
  EXPECT_EQ(tall_picks, 2u * 4 + 1);  // o and down too (their A staged at one exponent a row block)
  size_t whole_rows_a = 0;
  for (const auto& call : tall.calls)
    if (call.kernel == mn::kernels::Kernel::StageF16 && !call.derived) {
      EXPECT_EQ(call.spec, std::vector<uint32_t>{1u}) << call.label;  // WHOLE_ROWS
      ++whole_rows_a;
    }
  EXPECT_EQ(whole_rows_a, 2u * 2);
}

TEST(LowerPicks, ProducersStageTheRowsOfTheNextProduct) {
  mn::Graph g;
  const mn::Tensor h = mn::rms_norm(g.input("x", {100, 576}), g.parameter("norm", {576}));
  const mn::MatMulOptions t{.transpose_b = true};
  const mn::Tensor gate = mn::matmul(h, g.parameter("gate", {1536, 576}), t);  // gate first: the GLU's order
  const mn::Tensor up = mn::matmul(h, g.parameter("up", {1536, 576}), t);
  g.output("y", mn::matmul(mn::swiglu(gate, up), g.parameter("down", {576, 1536}), t));
  const mn::lower::Lowered low = lowered(g);
  std::map<int, std::string> writer;  // staged copies by the call that writes them
  for (const auto& c : low.calls) {
    if (c.kernel == mn::kernels::Kernel::Norm) {
      ASSERT_EQ(c.spec.size(), 4u);
      EXPECT_EQ(c.spec[3], 1u) << c.label;  // STAGE_ROWS
      mn::kernels::NormCallParams p{};
      ASSERT_EQ(c.params.size() * 4, sizeof(p));
      std::memcpy(&p, c.params.data(), sizeof(p));
      EXPECT_EQ(p.staged.padded_rows, 128u);
      EXPECT_EQ(p.staged.row_words, 288u);
      writer[c.tensors[4].tensor] = c.label;
    }
    if (is_staged_product(c.kernel) && c.label.find("swiglu") != std::string::npos) {
      ASSERT_EQ(c.spec.size(), 13u) << c.label;
      EXPECT_EQ(c.spec[11], 1u) << c.label;  // GLU_STAGED
      EXPECT_EQ(c.spec[12], 1u) << c.label;  // ONE_EXPONENT: the norm's rows and weights staged once
      writer[c.tensors[8].tensor] = c.label;
    }
  }
  EXPECT_EQ(writer.size(), 2u);
  size_t products = 0;
  for (const auto& c : low.calls) {
    if (c.kernel == mn::kernels::Kernel::StageF16) {
      EXPECT_TRUE(c.derived) << "A staged by a call of its own: " << c.label;
      EXPECT_EQ(c.spec, std::vector<uint32_t>{1u}) << "weights at one exponent along K (WHOLE_ROWS): " << c.label;
    }
    if (!is_staged_product(c.kernel)) continue;
    ++products;
    EXPECT_TRUE(writer.count(c.tensors[0].tensor)) << c.label << " reads A staged by the kernel that wrote it";
    if (c.label.find("swiglu") == std::string::npos) {  // down: A from the swiglu, an exponent a block
      EXPECT_TRUE(c.spec.size() < 13 || c.spec[12] == 0u) << c.label;
    }
  }
  EXPECT_EQ(products, 2u);  // gate/up, down

  auto model = mn::models::llama_graph(smollm2(1), 1, 128, true);
  std::unique_ptr<mn::Graph> step;
  const std::vector<int> keep = training_step(model, {.optimizer = mn::AdamW{.lr = 1e-4f}}, step);
  for (const auto& c : lowered(*step, keep).calls) {
    if (c.kernel == mn::kernels::Kernel::Norm) {
      EXPECT_EQ(c.spec[3], 0u) << "the weights change every step";
    }
    if (c.kernel == mn::kernels::Kernel::MatMulCoopNV) {
      EXPECT_LT(c.spec.size(), 12u) << c.label;
    }
  }
}

// Staged products take 128-row tiles where each workgroup sums at least 512 of K (B read by half
// as many workgroups), 64-row ones where steps are few and workgroups count (a weight gradient
// over 128 tokens).
TEST(LowerPicks, StagedTilesFollowTheirDepth) {
  mn::Graph g;
  g.output("deep", mn::matmul(g.input("a", {2048, 1024}), g.input("b", {1024, 3000})));
  g.output("shallow", mn::matmul(g.input("x", {2048, 128}), g.input("y", {128, 3000})));
  // Deep, but 128-row tiles would make 24 workgroups for 132 SMs (weights staged once).
  g.output("few", mn::matmul(g.input("f", {128, 2048}), g.parameter("w", {2048, 1536})));
  const mn::lower::Lowered low = lowered(g);
  for (const auto& c : low.calls) {
    if (!is_staged_product(c.kernel)) continue;
    mn::kernels::MatMulParams p{};
    std::memcpy(&p, c.params.data(), sizeof(p));
    const bool tall = p.K >= 512 && p.M > 128;
    EXPECT_EQ(c.kernel, tall ? mn::kernels::Kernel::MatMulCoopStagedTallNV : mn::kernels::Kernel::MatMulCoopStagedNV)
        << c.label;
    EXPECT_EQ(c.groups[1], (p.M + (tall ? 127 : 63)) / (tall ? 128 : 64) * p.splits) << c.label;
  }
  EXPECT_EQ(staged_products(low), 3u);
}

// A batch sharing its weights (x [8, 512, k] · w) is one product of 4096 rows: one tile grid,
// staged once; a batch with weights of its own stays a batch.
TEST(LowerPicks, SharedWeightsFoldTheBatchIntoRows) {
  mn::Graph g;
  g.output("shared", mn::matmul(g.input("x", {8, 512, 576}), g.parameter("w", {576, 1536})));
  g.output("own", mn::matmul(g.input("y", {8, 64, 96}), g.input("v", {8, 96, 80})));
  std::vector<mn::kernels::MatMulParams> products;
  for (const auto& c : lowered(g).calls) {
    if (c.kernel != mn::kernels::Kernel::MatMulCoopNV && !is_staged_product(c.kernel)) continue;
    mn::kernels::MatMulParams p{};
    ASSERT_GE(c.params.size() * 4, sizeof(p));
    std::memcpy(&p, c.params.data(), sizeof(p));
    products.push_back(p);
  }
  ASSERT_EQ(products.size(), 2u);
  EXPECT_EQ(products[0].M, 4096u);
  EXPECT_EQ(products[0].batch, 1u);
  EXPECT_EQ(products[1].M, 64u);
  EXPECT_EQ(products[1].batch, 8u);
}

// Short reductions fold one invocation an output (spec 2) where that fills the device — on a
// GPU, 8 values or fewer, or up to 64 with many outputs; on a CPU implementation, up to 64, or
// any number with 512 outputs or more. 64 values for each of 1152 rows (attention's backward at
// SmolLM2-135M's shape) stay a workgroup an output on a GPU.
TEST(LowerPicks, ShortReductionsFoldAloneWhereThatFillsTheDevice) {
  auto alone = [](const mn::Shape& shape, bool cpu) {
    mn::Graph g;
    g.output("s", mn::sum(g.input("x", shape), {static_cast<int64_t>(shape.size()) - 1}));
    mn::lower::LowerOptions o = mn::runtime::lower_options(h100(), true);
    o.cpu_device = cpu;
    const mn::lower::Lowered low = mn::lower::lower(g, {}, o);
    EXPECT_EQ(count_kernel(low, mn::kernels::Kernel::Reduce), 1u);
    for (const auto& c : low.calls)
      if (c.kernel == mn::kernels::Kernel::Reduce) return c.spec.at(2) == 1u;
    return false;
  };
  EXPECT_FALSE(alone({1152, 64}, false));
  EXPECT_TRUE(alone({1152, 64}, true));
  EXPECT_TRUE(alone({1152, 8}, false));
  EXPECT_TRUE(alone({65536, 64}, false));
  EXPECT_FALSE(alone({65535, 9}, false));
  EXPECT_FALSE(alone({100000, 65}, false));
  EXPECT_TRUE(alone({512, 4096}, true));
  EXPECT_FALSE(alone({511, 65}, true));
}

// On a CPU implementation (lavapipe) the exact product runs CPU_TILE (spec 11 = 1) and never
// splits K on its own; on a GPU it does neither (a product of few tiles and a long K splits).
TEST(LowerPicks, ExactProductsTakeTheCpuTileOnACpu) {
  mn::Graph g;
  g.output("c", mn::matmul(g.input("a", {5, 2100}), g.input("b", {2100, 70})));
  auto calls = [&](const std::string& type) {
    mn::DeviceInfo d;
    d.name = "a " + type + " (described, not opened)";
    d.type = type;
    const mn::lower::LowerOptions o = mn::runtime::lower_options(d, true);
    EXPECT_EQ(o.cpu_device, type == "CPU");
    return mn::lower::lower(g, {}, o).calls;
  };
  for (const auto& c : calls("CPU")) {
    ASSERT_EQ(c.kernel, mn::kernels::Kernel::MatMul) << c.label;
    ASSERT_EQ(c.spec.size(), 11u) << c.label;
    EXPECT_EQ(c.spec[10], 1u) << c.label;
    EXPECT_EQ(c.label.find("split-K"), std::string::npos) << c.label;
  }
  bool split = false;
  for (const auto& c : calls("discrete GPU")) {
    if (c.kernel == mn::kernels::Kernel::MatMul) {
      EXPECT_LT(c.spec.size(), 11u) << c.label;
    }
    split = split || c.label.find("split-K") != std::string::npos;
  }
  EXPECT_TRUE(split);
}
