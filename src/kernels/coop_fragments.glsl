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
