#version 450
// C = A · Bᵀ on workgroup-scope cooperative matrices (GL_NV_cooperative_matrix2): A [M, K] and
// B [N, K] f16 rows along k (the layout of stage_f16.comp's outputs), C [M, N] f32. Each K step
// loads a BM x BK tile of A and a BN x BK tile of B through tensor layouts (edges clamped to
// zero) and multiplies; the driver stages, pipelines and splits the tile over the subgroups.
// The probe's ceiling for tensor-core products (bench/coopmat2/probe.cpp).
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 256) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(push_constant) uniform Shape { uint M, N, K; } p;
layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B { float16_t b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };

#define LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
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
    acc = coopMatMulAdd(ma, mb, acc);
  }
  coopMatStoreTensorNV(acc, c, 0, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}
