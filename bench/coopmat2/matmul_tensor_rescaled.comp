#version 450
// matmul_tensor.comp with stage_f16.comp's exponents: every 16 rows x 32 k block of A and B has
// its own power of two, so each K step of 32 multiplies into a fresh accumulator and adds it to
// the sum scaled by its blocks' exponents (binding 3: A's [M / 16][K / 32] ints, then B's
// [N / 16][K / 32]), an element at a time. What keeping today's staging costs on this road.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
layout(local_size_x = 256) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;  // one exponent block a step: 32
layout(push_constant) uniform Shape { uint M, N, K; } p;
layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B { float16_t b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(std430, binding = 3) readonly buffer Exponents { int e[]; };
shared float row_scale[BM / 16u], col_scale[BN / 16u];

#define LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

float add_scaled(const in uint32_t row, const in uint32_t col, const in float product, const in float sum) {
  return sum + product * row_scale[row / 16u] * col_scale[col / 16u];
}

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, t = gl_LocalInvocationID.x;
  const uint k_blocks = (p.K + 31u) / 32u, b_exponents = (p.M + 15u) / 16u * k_blocks;
  LAYOUT la = setTensorLayoutDimensionNV(createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV), p.M, p.K);
  LAYOUT lb = setTensorLayoutDimensionNV(createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV), p.N, p.K);
  LAYOUT lc = setTensorLayoutDimensionNV(createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV), p.M, p.N);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  ACC acc = ACC(0.0);
  for (uint k = 0; k < p.K; k += BK) {
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
    coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(la, m0, BM, k, BK));
    coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(lb, n0, BN, k, BK), transposed);
    ACC product = coopMatMulAdd(ma, mb, ACC(0.0));
    barrier();  // the previous step's scales are read
    if (t < BM / 16u) row_scale[t] = exp2(float(e[(m0 / 16u + t) * k_blocks + k / 32u]));
    else if (t < BM / 16u + BN / 16u)
      col_scale[t - BM / 16u] = exp2(float(e[b_exponents + (n0 / 16u + t - BM / 16u) * k_blocks + k / 32u]));
    barrier();
    coopMatPerElementNV(acc, product, add_scaled, acc);
  }
  coopMatStoreTensorNV(acc, c, 0, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}
