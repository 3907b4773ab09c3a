#include "runtime/decode_weights_copy.hpp"

#include <algorithm>

#include "kernels/kernel_abi.hpp"
#include "runtime/persistent_decode.hpp"
#include "runtime/stage_options.hpp"
#include "util/align.hpp"
#include "util/env.hpp"

namespace meganeura {

DecodeWeightsCopy DecodeWeightsCopy::of(const PersistentDecodeModel& m, uint32_t first) {
  using namespace kernels;
  DecodeWeightsCopy w;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const uint64_t h = u(m.hidden), q = u(m.heads * m.head_dim), kv = u(m.kv_heads * m.head_dim), f = u(m.ffn);
  auto add = [&](const std::string& name, uint64_t rows, uint64_t k, uint32_t entry) {
    const auto buffer = first + static_cast<uint32_t>(w.buffer_bytes.size() - 1);
    w.matrices.push_back({name, rows, k, buffer, w.buffer_bytes.back(), entry});
    w.buffer_bytes.back() += util::align_up(w.matrices.back().bytes(), 256);
  };
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const PersistentDecodeModel::Layer& L = m.layers[l];
    const auto at = [&](uint32_t e) { return static_cast<uint32_t>(kDecodeGlobals + l * kDecodeLayerEntries + e); };
    w.buffer_bytes.push_back(0);
    add(L.wq, q, h, at(kDecodeWq));
    add(L.wk, kv, h, at(kDecodeWk));
    add(L.wv, kv, h, at(kDecodeWv));
    add(L.wo, h, q, at(kDecodeWo));
    add(L.wgate, f, h, at(kDecodeWgate));
    add(L.wup, f, h, at(kDecodeWup));
    add(L.wdown, h, f, at(kDecodeWdown));
  }
  w.buffer_bytes.push_back(0);
  add(m.lm_head, u(m.vocab), h, kDecodeLmHead);
  return w;
}

std::string DecodeWeightsCopy::why_f32(bool training, uint64_t largest_buffer) const {
  const std::string asked = util::env_choice("MEGANEURA_DECODE_WEIGHTS", {"f32", "f16"});
  if (asked == "f32") return "MEGANEURA_DECODE_WEIGHTS=f32";
  if (training) return "a training session's weights change every step";
  if (asked.empty() && runtime::matmul_precision() == "highest") return "MEGANEURA_MATMUL_PRECISION=highest";
  for (uint64_t bytes : buffer_bytes)
    if (bytes > largest_buffer)
      return "a layer's f16 weights (" + std::to_string(bytes) + " bytes) exceed the device's largest allocation (" +
             std::to_string(largest_buffer) + ")";
  return "";
}

std::vector<uint32_t> DecodeWeightsCopy::jobs(const std::function<uint64_t(const Matrix&)>& source,
                                              const std::function<uint64_t(const Matrix&)>& destination) const {
  std::vector<uint32_t> j;
  const auto lo = [](uint64_t a) { return static_cast<uint32_t>(a); };
  const auto hi = [](uint64_t a) { return static_cast<uint32_t>(a >> 32); };
  for (const Matrix& w : matrices) {
    const uint64_t src = source(w), dst = destination(w);
    j.insert(j.end(),
             {lo(src), hi(src), lo(dst), hi(dst), static_cast<uint32_t>(w.rows), static_cast<uint32_t>(w.k), 0, 0});
  }
  return j;
}

std::vector<plan::Command> DecodeWeightsCopy::commands(plan::Slice params, plan::Slice jobs, uint32_t subgroup) const {
  uint64_t rows = 0;
  for (const Matrix& w : matrices) rows = std::max(rows, w.rows);
  plan::Dispatch d;
  d.kernel = kernels::Kernel::DecodeWeights;
  d.params = params;
  d.tensors = {jobs};
  // A subgroup a row of the largest matrix, at most 1,024 workgroups (every SM several times over).
  const uint64_t groups = (rows * subgroup + kernels::kWorkgroupSize - 1) / kernels::kWorkgroupSize;
  d.groups = {static_cast<uint32_t>(std::clamp<uint64_t>(groups, 1, 1024)), 1, 1};
  d.label = "decode_weights (" + std::to_string(matrices.size()) + " matrices to f16)";
  using B = plan::Barrier;
  return {B{B::TransferToCompute}, B{B::ComputeToCompute}, d, B{B::ComputeToCompute}};
}

}  // namespace meganeura
