// The persistent decoding step's f16 copy of its weight matrices (kernels/decode_weights.comp;
// docs/concepts.md, "Persistent decoding"): where each matrix's copy goes in the decoder's
// buffers, whether a session takes one, and the command list that makes it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/decode_step_abi.hpp"
#include "plan/program.hpp"

namespace meganeura {

struct PersistentDecodeModel;

struct DecodeWeightsCopy {
  struct Matrix {
    std::string name;          // the session's parameter
    uint64_t rows = 0, k = 0;  // [rows, k]
    uint32_t buffer = 0;       // where its copy goes among the decoder's buffers
    uint64_t offset = 0;
    uint32_t table_entry = 0;  // the address-table entry the copy takes (decode_step_abi.hpp)
    uint64_t bytes() const { return rows * kernels::decode_weights_row_bytes(k); }
  };
  std::vector<Matrix> matrices;        // each layer's seven, then the LM head
  std::vector<uint64_t> buffer_bytes;  // buffer first + i: a layer's matrices each, then the LM head

  // Every weight matrix of `m`, in buffers from `first`.
  static DecodeWeightsCopy of(const PersistentDecodeModel& m, uint32_t first);
  // Why the step should read f32 weights rather than this copy ("": take it). The copy follows
  // the matmul precision (f16 scaled a row at a time is `high`'s class), MEGANEURA_DECODE_WEIGHTS
  // overrides it; a training session's optimizer writes its weights every step, which the copy
  // would not follow; no buffer may exceed the device's largest allocation.
  std::string why_f32(bool training, uint64_t largest_buffer) const;
  // decode_weights.comp's jobs, two uvec4 a matrix: its source and destination device addresses.
  std::vector<uint32_t> jobs(const std::function<uint64_t(const Matrix&)>& source,
                             const std::function<uint64_t(const Matrix&)>& destination) const;
  // The list that makes the copy, after whatever wrote the parameters (uploads, a default
  // initialisation): one dispatch, a subgroup a row.
  std::vector<plan::Command> commands(plan::Slice params, plan::Slice jobs, uint32_t subgroup) const;
};

}  // namespace meganeura
