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
foreach(_comp IN LISTS _mn_kernel_comps)
  get_filename_component(_name ${_comp} NAME_WE)
  set(_hdr ${MEGANEURA_KERNEL_INCLUDE_DIR}/${_name}.spv.h)
  set(_glslang ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE} --quiet -V --target-env vulkan1.1 -I${_mn_kernel_dir})
  set(_validate "")
  if(MEGANEURA_SPIRV_VAL)
    set(_spv ${MEGANEURA_KERNEL_INCLUDE_DIR}/${_name}.spv)
    set(_validate
      COMMAND ${_glslang} -o ${_spv} ${_comp}
      COMMAND ${MEGANEURA_SPIRV_VAL} --target-env vulkan1.1 ${_spv})
  endif()
  add_custom_command(
    OUTPUT ${_hdr}
    COMMAND ${_glslang} --vn mn_spv_${_name} -o ${_hdr} ${_comp}
    ${_validate}
    DEPENDS ${_comp} ${_mn_kernel_includes}
    COMMENT "Compiling kernel ${_name}.comp to SPIR-V"
    VERBATIM)
  list(APPEND MEGANEURA_KERNEL_SOURCES ${_hdr})
endforeach()

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
