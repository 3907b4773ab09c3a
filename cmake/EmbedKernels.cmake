# Compiles every src/kernels/*.comp to SPIR-V at build time and embeds it in the library as a C
# array (glslangValidator --vn), so nothing is read from disk at run time. glslangValidator
# validates as it compiles; spirv-val, where found, checks the SPIR-V once more.
# The include files (*.glsl) are also embedded as text (glsl_library.h) for the kernels generated
# at session build. Sets MEGANEURA_KERNEL_SOURCES (the generated headers, to list as library sources so they are
# built before src/kernels/spirv.cpp) and MEGANEURA_KERNEL_INCLUDE_DIR (where they are).

set(_mn_kernel_dir ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels)
set(MEGANEURA_KERNEL_INCLUDE_DIR ${CMAKE_CURRENT_BINARY_DIR}/kernels)
file(GLOB _mn_kernel_comps CONFIGURE_DEPENDS ${_mn_kernel_dir}/*.comp)
file(GLOB _mn_kernel_includes CONFIGURE_DEPENDS ${_mn_kernel_dir}/*.glsl)  # common.glsl, math.glsl
find_program(MEGANEURA_SPIRV_VAL spirv-val)
file(MAKE_DIRECTORY ${MEGANEURA_KERNEL_INCLUDE_DIR})

set(MEGANEURA_KERNEL_SOURCES "")
set(MEGANEURA_KERNEL_DEFINITIONS "")  # MEGANEURA_KERNEL_<NAME>: optional variants that were built

# The compiler, its SPIR-V validator and the target environment of _mn_kernel: Debian 12's glslang
# for Vulkan 1.1, unless a caller sets them (the kernels that need a newer glslang, below).
set(_mn_glslang ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE})
set(_mn_spirv_val ${MEGANEURA_SPIRV_VAL})
set(_mn_target_env vulkan1.1)

# Compiles SOURCE (a compute shader) with the macro definitions in ARGN into the embedded
# array mn_spv_<name>.
function(_mn_kernel name source)
  set(_hdr ${MEGANEURA_KERNEL_INCLUDE_DIR}/${name}.spv.h)
  set(_defines "")
  foreach(_d IN LISTS ARGN)
    list(APPEND _defines -D${_d})
  endforeach()
  set(_glslang ${_mn_glslang} --quiet -V --target-env ${_mn_target_env} -S comp ${_defines} -I${_mn_kernel_dir})
  set(_validate "")
  if(_mn_spirv_val)
    set(_spv ${MEGANEURA_KERNEL_INCLUDE_DIR}/${name}.spv)
    set(_validate
      COMMAND ${_glslang} -o ${_spv} ${source}
      COMMAND ${_mn_spirv_val} --target-env ${_mn_target_env} --uniform-buffer-standard-layout ${_spv})
  endif()
  add_custom_command(
    OUTPUT ${_hdr}
    COMMAND ${_glslang} --vn mn_spv_${name} -o ${_hdr} ${source}
    ${_validate}
    DEPENDS ${source} ${_mn_kernel_includes}
    COMMENT "Compiling kernel ${name} to SPIR-V"
    VERBATIM)
  set(MEGANEURA_KERNEL_SOURCES ${MEGANEURA_KERNEL_SOURCES} ${_hdr} PARENT_SCOPE)
endfunction()

foreach(_comp IN LISTS _mn_kernel_comps)
  get_filename_component(_name ${_comp} NAME_WE)
  _mn_kernel(${_name} ${_comp})
endforeach()

# Tensor-core matmuls: one body, compiled per extension and staging type. The NV variants
# always build (Debian 12's glslang knows GL_NV_cooperative_matrix); a KHR variant builds where
# this glslang compiles it (GL_KHR_cooperative_matrix arrived in glslang 13, bf16 later still),
# and the library knows which through MEGANEURA_KERNEL_<NAME>.
set(_mn_coop ${_mn_kernel_dir}/matmul_coop.glsl)
_mn_kernel(matmul_coop_nv ${_mn_coop})
_mn_kernel(matmul_coop_staged_nv ${_mn_coop} STAGED)  # operands from stage_f16.comp
_mn_kernel(matmul_coop_staged_tall_nv ${_mn_coop} STAGED STAGED_TALL)  # the same, 128-row tiles
_mn_kernel(attention_coop_nv ${_mn_kernel_dir}/attention_coop.glsl)
_mn_kernel(attention_coop_backward_nv ${_mn_kernel_dir}/attention_coop_backward.glsl)
_mn_kernel(attention_coop_split_nv ${_mn_kernel_dir}/attention_coop_split.glsl)
foreach(_variant "khr;COOP_KHR" "khr_bf16;COOP_KHR;STAGE_BF16")
  list(POP_FRONT _variant _suffix)
  set(_defines "")
  foreach(_d IN LISTS _variant)
    list(APPEND _defines -D${_d})
  endforeach()
  execute_process(
    COMMAND ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE} --quiet -V --target-env vulkan1.1 -S comp ${_defines}
            -I${_mn_kernel_dir} -o ${CMAKE_CURRENT_BINARY_DIR}/coop_probe.spv ${_mn_coop}
    RESULT_VARIABLE _status OUTPUT_QUIET ERROR_QUIET)
  if(_status EQUAL 0)
    _mn_kernel(matmul_coop_${_suffix} ${_mn_coop} ${_variant})
    string(TOUPPER "${_suffix}" _upper)
    list(APPEND MEGANEURA_KERNEL_DEFINITIONS MEGANEURA_KERNEL_MATMUL_COOP_${_upper})
    message(STATUS "meganeura: tensor-core matmul variant ${_suffix} built")
  else()
    message(STATUS "meganeura: this glslang cannot compile the tensor-core matmul variant ${_suffix}; skipped")
  endif()
endforeach()

# Kernels that need a newer glslang than Debian 12's (GL_NV_cooperative_matrix2: workgroup-scope
# matrices, tensor loads), for Vulkan 1.3: built with the one scripts/fetch_glslang.sh unpacks
# into .tools/glslang, where it is; the library knows which through MEGANEURA_KERNEL_<NAME>.
set(_mn_new_tools ${CMAKE_CURRENT_SOURCE_DIR}/.tools/glslang)
if(EXISTS ${_mn_new_tools}/glslangValidator)
  set(_mn_glslang ${_mn_new_tools}/glslangValidator)
  set(_mn_spirv_val ${_mn_new_tools}/spirv-val)
  set(_mn_target_env vulkan1.3)
  _mn_kernel(matmul_coop2_staged_nv ${_mn_kernel_dir}/matmul_coop2.glsl)
  list(APPEND MEGANEURA_KERNEL_DEFINITIONS MEGANEURA_KERNEL_MATMUL_COOP2_STAGED_NV)
  message(STATUS "meganeura: cooperative-matrix-2 kernels built (${_mn_new_tools})")
else()
  message(STATUS "meganeura: no .tools/glslang (scripts/fetch_glslang.sh): cooperative-matrix-2 kernels skipped")
endif()

# The include files' text, for kernels generated and compiled at session build.
set(_mn_glsl_header ${MEGANEURA_KERNEL_INCLUDE_DIR}/glsl_library.h)
add_custom_command(
  OUTPUT ${_mn_glsl_header}
  COMMAND ${CMAKE_COMMAND} "-DINPUTS=${_mn_kernel_includes}" -DOUT=${_mn_glsl_header}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/EmbedGlslText.cmake
  DEPENDS ${_mn_kernel_includes} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/EmbedGlslText.cmake
  COMMENT "Embedding the GLSL include files"
  VERBATIM)
list(APPEND MEGANEURA_KERNEL_SOURCES ${_mn_glsl_header})
