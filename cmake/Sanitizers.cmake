# MEGANEURA_SANITIZE: build every target (library, CLI, tests, examples, bench) with sanitizers.
#   address,undefined  AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer
#   thread             ThreadSanitizer (cannot be combined with address)
# UBSan findings abort (-fno-sanitize-recover) so that a test fails on one, as ASan's do.
# Third-party libraries (Mesa, the Vulkan loader and layers, libcurl, shaderc) stay
# uninstrumented; tests/sanitizers/*.supp silence their reports, and tests/CMakeLists.txt points
# the sanitizers' runtime options at those files (docs/reliability.md#sanitizers).
set(MEGANEURA_SANITIZE "" CACHE STRING "Sanitizers: empty, address,undefined or thread")
set_property(CACHE MEGANEURA_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")

if(MEGANEURA_SANITIZE STREQUAL "")
  return()
endif()
string(REPLACE "," ";" _meganeura_sanitizers "${MEGANEURA_SANITIZE}")
foreach(s IN LISTS _meganeura_sanitizers)
  if(NOT s MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "MEGANEURA_SANITIZE: unknown sanitizer '${s}' (address, undefined or thread)")
  endif()
endforeach()
if("thread" IN_LIST _meganeura_sanitizers AND "address" IN_LIST _meganeura_sanitizers)
  message(FATAL_ERROR "MEGANEURA_SANITIZE: thread and address cannot be combined")
endif()

# Directory-wide, so that every target below (tests, tools, examples, bench) gets them.
add_compile_options(-fsanitize=${MEGANEURA_SANITIZE} -fno-omit-frame-pointer)
add_link_options(-fsanitize=${MEGANEURA_SANITIZE})
if("undefined" IN_LIST _meganeura_sanitizers)
  add_compile_options(-fno-sanitize-recover=undefined)
endif()
message(STATUS "meganeura: sanitizers ${MEGANEURA_SANITIZE}")
