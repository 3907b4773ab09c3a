// The K loop of matmul_coop.glsl for operands staged before the product (STAGED, spec 12): A and
// B are StageF16 outputs (stage_f16.comp, kernel_abi.hpp), f16 rows along k, zero-padded to whole
// tiles and 64 k, with an exponent per 16 x 32 block. A K step only copies: 16 bytes a load and a
// store, nothing converted, no maxima and no barrier of their own. Each accumulator follows its
// own blocks' exponents (its subgroup's 16 rows of A and 16 columns of B), capped as the in-kernel
// staging caps them (STAGE_GROWTH above the smallest so far in this sum), a capped fragment
// scaled down where it is loaded. ONE_EXPONENT (spec 13): every block of each 16 rows of A and
// of B is at one exponent along K (a norm's staged rows, weights staged WHOLE_ROWS), read once;
// the K loop then only copies and multiplies. Included by matmul_coop.glsl after its shared
// memory and element macros.

layout(constant_id = 13) const uint ONE_EXPONENT = 0u;

const uint K_BLOCKS = BK / 32u;       // exponent blocks in a K step
const uint A_CHUNKS = BM * BK / 2048u, B_CHUNKS = BN * BK / 2048u;  // 16-byte chunks an invocation copies a step

// Where 16-row block `rb` (of a staged operand at word `base`, `padded_rows` rows of `row_words`)
// keeps the exponent of the k block at k0.
uint staged_exp_at(uint base, uint padded_rows, uint row_words, uint rb, uint k0) {
  return base + staged_exponent_word(padded_rows, row_words, rb, k0 / 32u);
}

// Tile column bn's staged row and its operand's base word (GLU: 16-column runs alternate
// between the gate's and the up projection's staged rows).
void staged_column(uint bn, uint g, uint n0, out uint row, out uint base) {
  row = GLU != 0u ? n0 + (bn / 32u) * 16u + bn % 16u : n0 + bn;
  base = p.b_offset[GLU != 0u ? (bn / 16u) % 2u : g];
}

void staged_products(inout FRAG_C acc[FRAG_M * FRAG_N], out int frag_exp[FRAG_M * FRAG_N], uint m0, uint n0,
                     uint g, uint k_begin, uint k_end) {
  const uint tid = gl_LocalInvocationID.x, wm = gl_SubgroupID / WARPS_N, wn = gl_SubgroupID % WARPS_N;
  const uint a_rows = (p.M + STAGED_ROWS - 1u) / STAGED_ROWS * STAGED_ROWS, a_words = p.a_row_stride;
  const uint b_rows = (p.N[g] + BN - 1u) / BN * BN, b_words = p.b_row_stride[g];
  uvec4 qa[A_CHUNKS], qb[B_CHUNKS];  // the next step's chunks, in flight during this one's products
  int xa[FRAG_M * K_BLOCKS], xb[FRAG_N * K_BLOCKS];  // and its raw exponents
  // Chunk c of a step: row (A) or column (B) c / (BK / 8), 8 k from 8 * (c % (BK / 8)).
#define STAGED_LOAD(k0)                                                                                 \
  for (uint q = 0u; q < A_CHUNKS; ++q) {                                                                \
    uint c = tid + 256u * q, r = c / (BK / 8u), kw = (k0) / 2u + 4u * (c % (BK / 8u));                  \
    qa[q] = floatBitsToUint(a4[(p.a_offset + (m0 + r) * a_words + kw) / 4u]);                          \
  }                                                                                                     \
  for (uint q = 0u; q < B_CHUNKS; ++q) {                                                                \
    uint c = tid + 256u * q, r = c / (BK / 8u), kw = (k0) / 2u + 4u * (c % (BK / 8u));                  \
    uint brow, bbase;                                                                                   \
    staged_column(r, g, n0, brow, bbase);                                                               \
    qb[q] = floatBitsToUint(b4[(bbase + brow * b_words + kw) / 4u]);                                    \
  }                                                                                                     \
  for (uint kb = 0u; kb < (ONE_EXPONENT != 0u ? 0u : K_BLOCKS); ++kb) {                                \
    for (uint i = 0u; i < FRAG_M; ++i)                                                                  \
      xa[i * K_BLOCKS + kb] = int(a_data[staged_exp_at(p.a_offset, a_rows, a_words,                     \
                                                       (m0 + (wm * FRAG_M + i) * 16u) / 16u, (k0) + 32u * kb)]); \
    for (uint j = 0u; j < FRAG_N; ++j) {                                                                \
      uint brow, bbase;                                                                                 \
      staged_column((wn * FRAG_N + j) * 16u, g, n0, brow, bbase);                                       \
      xb[j * K_BLOCKS + kb] = int(b_data[staged_exp_at(bbase, b_rows, b_words, brow / 16u, (k0) + 32u * kb)]); \
    }                                                                                                   \
  }

  // The step's chunks from registers into shared memory.
#define STAGED_STORE()                                                  \
  for (uint q = 0u; q < A_CHUNKS; ++q) {                                \
    uint c = tid + 256u * q, r = c / (BK / 8u), k = 8u * (c % (BK / 8u)); \
    As[(r * A_STRIDE + k) / 4u] = qa[q].xy;                             \
    As[(r * A_STRIDE + k) / 4u + 1u] = qa[q].zw;                        \
  }                                                                     \
  for (uint q = 0u; q < B_CHUNKS; ++q) {                                \
    uint c = tid + 256u * q, r = c / (BK / 8u), k = 8u * (c % (BK / 8u)); \
    Bs[(r * B_STRIDE + k) / 4u] = qb[q].xy;                             \
    Bs[(r * B_STRIDE + k) / 4u + 1u] = qb[q].zw;                        \
  }

  STAGED_LOAD(k_begin)
  if (ONE_EXPONENT != 0u) {  // every block of a fragment's rows and columns at one exponent
    for (uint i = 0u; i < FRAG_M; ++i)
      for (uint j = 0u; j < FRAG_N; ++j) {
        uint brow, bbase;
        staged_column((wn * FRAG_N + j) * 16u, g, n0, brow, bbase);
        frag_exp[i * FRAG_N + j] =
            int(a_data[staged_exp_at(p.a_offset, a_rows, a_words, (m0 + (wm * FRAG_M + i) * 16u) / 16u, 0u)]) +
            int(b_data[staged_exp_at(bbase, b_rows, b_words, brow / 16u, 0u)]);
      }
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
      STAGED_STORE()
      barrier();
      if (k0 + BK < k_end) { STAGED_LOAD(k0 + BK) }
      for (uint kk = 0u; kk < BK; kk += 16u) {
        FRAG_A fa[FRAG_M];
        FRAG_B fb[FRAG_N];
        for (uint i = 0u; i < FRAG_M; ++i)
          FRAG_LOAD(fa[i], As, (((wm * FRAG_M + i) * 16u) * A_STRIDE + kk) / 4u, A_STRIDE / 4u);
        for (uint j = 0u; j < FRAG_N; ++j)
          FRAG_LOAD_COLUMNS(fb[j], Bs, (((wn * FRAG_N + j) * 16u) * B_STRIDE + kk) / 4u, B_STRIDE / 4u);
        for (uint i = 0u; i < FRAG_M; ++i)
          for (uint j = 0u; j < FRAG_N; ++j) acc[i * FRAG_N + j] = FRAG_MMA(fa[i], fb[j], acc[i * FRAG_N + j]);
      }
      barrier();
    }
    return;
  }
  int min_a[FRAG_M], min_b[FRAG_N];
  for (uint i = 0u; i < FRAG_M; ++i) min_a[i] = STAGE_EXP_LIMIT;
  for (uint j = 0u; j < FRAG_N; ++j) min_b[j] = STAGE_EXP_LIMIT;
  for (uint f = 0u; f < FRAG_M * FRAG_N; ++f) frag_exp[f] = 0;
  for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
    STAGED_STORE()
    int ra[FRAG_M * K_BLOCKS], rb[FRAG_N * K_BLOCKS];
    for (uint x = 0u; x < FRAG_M * K_BLOCKS; ++x) ra[x] = xa[x];
    for (uint x = 0u; x < FRAG_N * K_BLOCKS; ++x) rb[x] = xb[x];
    barrier();
    if (k0 + BK < k_end) { STAGED_LOAD(k0 + BK) }
    for (uint kb = 0u; kb < K_BLOCKS; ++kb) {
      int ea[FRAG_M], eb[FRAG_N];
      for (uint i = 0u; i < FRAG_M; ++i) {
        ea[i] = min(ra[i * K_BLOCKS + kb], min_a[i] + STAGE_GROWTH);
        min_a[i] = min(min_a[i], ea[i]);
      }
      for (uint j = 0u; j < FRAG_N; ++j) {
        eb[j] = min(rb[j * K_BLOCKS + kb], min_b[j] + STAGE_GROWTH);
        min_b[j] = min(min_b[j], eb[j]);
      }
      for (uint i = 0u; i < FRAG_M; ++i)
        for (uint j = 0u; j < FRAG_N; ++j) {
          uint f = i * FRAG_N + j;
          int e = ea[i] + eb[j];
          if ((k0 != k_begin || kb != 0u) && e != frag_exp[f]) acc[f] = acc[f] * stage_rescale(frag_exp[f], e);
          frag_exp[f] = e;
        }
      for (uint kk = 32u * kb; kk < 32u * kb + 32u; kk += 16u) {
        FRAG_A fa[FRAG_M];
        FRAG_B fb[FRAG_N];
        for (uint i = 0u; i < FRAG_M; ++i) {
          FRAG_LOAD(fa[i], As, (((wm * FRAG_M + i) * 16u) * A_STRIDE + kk) / 4u, A_STRIDE / 4u);
          int capped = ea[i] - ra[i * K_BLOCKS + kb];  // <= 0: staged at the raw exponent
          if (capped < 0) fa[i] = fa[i] * STAGE_T(stage_pow2(max(capped, -30)));
        }
        for (uint j = 0u; j < FRAG_N; ++j) {
          FRAG_LOAD_COLUMNS(fb[j], Bs, (((wn * FRAG_N + j) * 16u) * B_STRIDE + kk) / 4u, B_STRIDE / 4u);
          int capped = eb[j] - rb[j * K_BLOCKS + kb];
          if (capped < 0) fb[j] = fb[j] * STAGE_T(stage_pow2(max(capped, -30)));
        }
        for (uint i = 0u; i < FRAG_M; ++i)
          for (uint j = 0u; j < FRAG_N; ++j) acc[i * FRAG_N + j] = FRAG_MMA(fa[i], fb[j], acc[i * FRAG_N + j]);
      }
    }
    barrier();
  }
#undef STAGED_LOAD
#undef STAGED_STORE
}
