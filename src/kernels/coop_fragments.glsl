// Shared by the tensor-core kernels on GL_NV_cooperative_matrix (the attention kernels): the
// extensions they need and their 16x16 fragment types. Include first, right after enabling
// GL_GOOGLE_include_directive.
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_NV_cooperative_matrix : require

#define FRAG16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>  // f16 operand
#define FRAG32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>  // f32 accumulator

// Writes this subgroup's 16 rows of FRAGS side-by-side 16x16 accumulators ACC[0..FRAGS), kept at
// exponent ACC_EXP (coop_stage.glsl), to DST: row r, column c at
// DST[BASE + (ROW0 + r) * ROW_STRIDE + c], times SCALE, for ROW0 + r < ROWS. They
// pass through the subgroup's f32 scratch SCRATCH at AT (row stride STRIDE, 16 x 16 at least):
// fragments are opaque. Uses `lane` (gl_SubgroupInvocationID).
#define STORE_ACCUMULATOR_ROWS(ACC, ACC_EXP, FRAGS, DST, BASE, ROW0, ROWS, ROW_STRIDE, SCALE, SCRATCH, AT, STRIDE) \
  for (uint f_ = 0u; f_ < (FRAGS); ++f_) {                                                                     \
    coopMatStoreNV(ACC[f_], SCRATCH, AT, STRIDE, false);                                                       \
    subgroupMemoryBarrierShared();                                                                             \
    subgroupBarrier();                                                                                         \
    for (uint e_ = lane; e_ < 256u; e_ += gl_SubgroupSize) {                                                   \
      uint r_ = e_ / 16u;                                                                                      \
      if ((ROW0) + r_ < (ROWS))                                                                                \
        DST[(BASE) + ((ROW0) + r_) * (ROW_STRIDE) + f_ * 16u + e_ % 16u] =                                     \
            floatBitsToUint(stage_unscale(SCRATCH[(AT) + r_ * (STRIDE) + e_ % 16u], ACC_EXP) * (SCALE));        \
    }                                                                                                          \
    subgroupBarrier();                                                                                         \
  }
