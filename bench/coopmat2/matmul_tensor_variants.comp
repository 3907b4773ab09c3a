#version 450
// matmul_tensor.comp with, one at a time (spec 4 VARIANT, bits), what the library's
// matmul_coop2.glsl adds around it: 1 element offsets known only at run time (read from
// binding 3, zero), 2 an epilogue element by element that reads exponents from shared memory,
// 4 tensor layouts with explicit row strides, 8 B's tile returned by a function and the sum
// stored by one that takes it by value (as matmul_coop2.glsl's load_b and store), 16 B from
// another slice of its buffer each dispatch (p.b_from: weights out of L2, as a model's layers
// read them; the other bits time B while it sits in L2), 32 M, N and K from a uniform buffer (as
// the library's params block) instead of push constants, 64 B as three products of N / 3 columns
// whose workgroups each pick their product's base and layout at run time (as the library's q/k/v
// group; where N / 3 is a multiple of BN), 128 the next K step's tiles loaded before this step's
// product (software pipelining; the tensor loads clamp past K, so the last step loads zeros).
// Which of them costs what (bench/coopmat2/probe.cpp).
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
layout(local_size_x = 256) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint VARIANT = 0;
layout(push_constant) uniform Shape { uint M, N, K, b_from; } p;
layout(std140, binding = 4) uniform UniformShape { uint M, N, K; } u;
layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B { float16_t b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(std430, binding = 3) readonly buffer Exponents { int e[]; };
shared int row_exp[BM / 16u], col_exp[BN / 16u];

#define LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

LAYOUT layout_of(uint rows, uint cols) {
  LAYOUT l = setTensorLayoutDimensionNV(createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV), rows, cols);
  return (VARIANT & 4u) != 0u ? setTensorLayoutStrideNV(l, cols, 1) : l;
}

float unscale(const in uint32_t row, const in uint32_t col, const in float v) {
  return v * exp2(float(-(row_exp[row / 16u] + col_exp[col / 16u])));
}

coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> load_b(LAYOUT lb, uint n0, uint k, uint offset) {
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
  coopMatLoadTensorNV(mb, b, offset, sliceTensorLayoutNV(lb, n0, BN, k, BK), transposed);
  return mb;
}

void store(ACC m, LAYOUT lc, uint m0, uint n0, uint offset) {
  coopMatStoreTensorNV(m, c, offset, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, t = gl_LocalInvocationID.x;
  const uint offset = (VARIANT & 1u) != 0u ? uint(e[1]) : 0u;
  const bool uniform_shape = (VARIANT & 32u) != 0u;
  const uint M = uniform_shape ? u.M : p.M, N = uniform_shape ? u.N : p.N, K = uniform_shape ? u.K : p.K;
  // Variant 64: this workgroup's product g of three, its columns from nb, its B from b_base.
  const uint groups = (VARIANT & 64u) != 0u && N % (3u * BN) == 0u ? 3u : 1u, group_n = N / groups;
  const uint g = n0 / group_n, nb = n0 - g * group_n, b_base = g * group_n * K;
  if ((VARIANT & 2u) != 0u) {
    if (t < BM / 16u) row_exp[t] = e[2u + m0 / 16u + t];
    else if (t < BM / 16u + BN / 16u) col_exp[t - BM / 16u] = e[2u + n0 / 16u + t - BM / 16u];
  }
  LAYOUT la = layout_of(M, K), lb = layout_of(group_n, K), lc = layout_of(M, N);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  ACC acc = ACC(0.0);
  if ((VARIANT & 128u) != 0u) {
    const uint b_at = offset + b_base + ((VARIANT & 16u) != 0u ? p.b_from : 0u);
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma, next_a;
    coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb, next_b;
    coopMatLoadTensorNV(ma, a, offset, sliceTensorLayoutNV(la, m0, BM, 0, BK));
    coopMatLoadTensorNV(mb, b, b_at, sliceTensorLayoutNV(lb, nb, BN, 0, BK), transposed);
    for (uint k = 0; k < K; k += BK) {
      coopMatLoadTensorNV(next_a, a, offset, sliceTensorLayoutNV(la, m0, BM, k + BK, BK));
      coopMatLoadTensorNV(next_b, b, b_at, sliceTensorLayoutNV(lb, nb, BN, k + BK, BK), transposed);
      acc = coopMatMulAdd(ma, mb, acc);
      ma = next_a;
      mb = next_b;
    }
    coopMatStoreTensorNV(acc, c, offset, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
    return;
  }
  for (uint k = 0; k < K; k += BK) {
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
    coopMatLoadTensorNV(ma, a, offset, sliceTensorLayoutNV(la, m0, BM, k, BK));
    const uint b_at = offset + b_base + ((VARIANT & 16u) != 0u ? p.b_from : 0u);
    if ((VARIANT & 8u) != 0u)
      mb = load_b(lb, nb, k, b_at);
    else
      coopMatLoadTensorNV(mb, b, b_at, sliceTensorLayoutNV(lb, nb, BN, k, BK), transposed);
    acc = coopMatMulAdd(ma, mb, acc);
  }
  if ((VARIANT & 2u) != 0u) {
    barrier();
    coopMatPerElementNV(acc, acc, unscale);
  }
  if ((VARIANT & 8u) != 0u)
    store(acc, lc, m0, n0, offset);
  else
    coopMatStoreTensorNV(acc, c, offset, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}
