// The persistent decoding kernel's part of the contract (decode_step.comp mirrors it): its params
// block, the layout of its address table and its flags. Bindings: 0 params, 1 status, 2 the table
// (uvec2 device addresses, 0 for an absent bias), 3 the grid barrier's counters (two words,
// zeroed before each step), 4 the step's token and position (two i32).
#pragma once
#include <cstdint>

namespace meganeura::kernels {

struct DecodeStepParams {
  uint32_t hidden, heads, kv_heads, head_dim, ffn, vocab, layers, window;
  uint32_t slots, flags, spin_limit, pad2;
  float eps, scale, pad0, pad1;
};

// DecodeWeights (decode_weights.comp): binding 2 the jobs, two uvec4 a matrix: (source address,
// destination address) as uint32 pairs, then (rows, k, 0, 0). A matrix [rows, k] of f32 becomes
// rows of decode_weights_row_bytes(k): 16 bytes holding the row's exponent e (an int, then zeros),
// then the row times 2^e as f16, two a word (the even k in the low half), zero past k to a
// multiple of 8. DecodeStep reads its weights so with spec 4 F16_WEIGHTS = 1.
struct DecodeWeightsParams {
  uint32_t jobs, pad0, pad1, pad2;
};
inline constexpr uint64_t decode_weights_row_bytes(uint64_t k) { return 16 + (k + 7) / 8 * 16; }

// Blocks a head's keys split into at most in the attention phase (ATTN_BLOCKS in the kernel).
inline constexpr uint32_t kDecodeAttnBlocks = 16;

// STATUS_GRID_TIMEOUT: a grid barrier's wait ran out (node: the barrier's number, value: the
// arrivals seen, limit: the arrivals awaited); every workgroup then returned.
enum : uint32_t { STATUS_GRID_TIMEOUT = 3 };
enum : uint32_t {
  DECODE_FLAG_PROBE = 1,      // only one grid barrier: is the whole grid resident at once?
  DECODE_FLAG_ONE_SHORT = 2,  // (tests) the first barrier waits for one arrival more than come
};

// The address table: the model's globals, then kDecodeLayerEntries a layer.
enum DecodeGlobal : uint32_t {
  kDecodeEmbed,
  kDecodeFinalNorm,
  kDecodeLmHead,
  kDecodeCos,
  kDecodeSin,
  kDecodeX,        // scratch: the hidden state [hidden]
  kDecodeQ,        // scratch: q after rotary [heads * head_dim]
  kDecodePartial,  // scratch: [heads, kDecodeAttnBlocks, head_dim + 2] (sums, max, denominator)
  kDecodeH,        // scratch: silu(gate) * up [ffn]
  kDecodeLogits,   // [vocab]
  kDecodeGlobals
};
enum DecodeLayerEntry : uint32_t {
  kDecodeLn1,
  kDecodeWq,
  kDecodeWk,
  kDecodeWv,
  kDecodeBq,
  kDecodeBk,
  kDecodeBv,
  kDecodeWo,
  kDecodeBo,
  kDecodeLn2,
  kDecodeWgate,
  kDecodeWup,
  kDecodeWdown,
  kDecodeBgate,
  kDecodeBup,
  kDecodeBdown,
  kDecodeKCache,
  kDecodeVCache,
  kDecodeLayerEntries
};

}  // namespace meganeura::kernels
