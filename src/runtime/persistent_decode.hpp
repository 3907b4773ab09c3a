// A Llama-family decoding step as one persistent dispatch (kernels/decode_step.comp) over the
// weights and KV caches of an existing session: the Generator's fast path for batch-1 decoding.
// Its workgroups stay resident and meet at grid barriers between phases, so the grid must be
// resident all at once: a co-residency probe picks it when the decoder is made, and a barrier
// whose wait runs out makes step() return false (the caller redoes the step with its ordinary
// program) instead of hanging.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "meganeura/session.hpp"

namespace meganeura {

// The model, as names of the session's parameters and states ("": an absent bias).
struct PersistentDecodeModel {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0, window = 0, slots = 0;
  float eps = 1e-6f;
  std::string embed, final_norm, lm_head;  // lm_head: the embedding where tied
  struct Layer {
    std::string ln1, wq, wk, wv, bq, bk, bv, wo, bo;
    std::string ln2, wgate, wup, wdown, bgate, bup, bdown;
    std::string k_cache, v_cache;  // states [1, slots, kv_heads * head_dim]
  };
  std::vector<Layer> layers;
  std::vector<float> cos, sin;  // rotary tables [slots, head_dim], as nn::Rotary makes them
};

class PersistentDecoder {
 public:
  // On a CPU (lavapipe) the dispatch is one workgroup, which llvmpipe runs on one thread, while
  // the program's dispatches spread over all of them: 2.2 times slower on two cores.
  static bool slower_than_program(Session& session);
  // Builds the decoder and probes for a resident grid; throws Error saying why the device cannot
  // run `model` this way (no bufferDeviceAddress, sizes, shared memory), or that no grid was
  // found resident.
  PersistentDecoder(Session& session, const PersistentDecodeModel& model);
  ~PersistentDecoder();
  PersistentDecoder(const PersistentDecoder&) = delete;
  PersistentDecoder& operator=(const PersistentDecoder&) = delete;

  // Decodes `token` at cache position `position` (its k and v go into the caches there); false
  // when a grid barrier's wait ran out: nothing this step wrote can be trusted then.
  bool step(int32_t token, int64_t position);
  std::vector<float> logits() const;  // of the last step()
  // (label, GPU ns) of the last step()'s dispatch, where the session records timestamps
  // (SessionOptions::profile, MEGANEURA_TRACE); empty otherwise.
  std::vector<std::pair<std::string, double>> profile() const;
  uint32_t grid() const;  // workgroups of the dispatch
  // "f16" where the step reads an f16 copy of the weight matrices (each row scaled by a power of
  // two; made at the first step after any parameter write), "f32" where it reads them as they
  // are; why_f32_weights() says why ("" for f16).
  std::string weights() const;
  const std::string& why_f32_weights() const;
  // Tests: the next step()'s first barrier waits for one arrival more than will come.
  void arm_timeout_for_test();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meganeura
