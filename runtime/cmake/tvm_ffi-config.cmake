# CMake package "tvm_ffi" of the tvmffi runtime (our C11 implementation of the
# TVM-FFI stable C ABI), installed next to it inside the Python package:
#   <pkg>/share/cmake/tvm_ffi/tvm_ffi-config.cmake   (this file)
#   <pkg>/include/{tvm/ffi/c_api.h, dlpack/dlpack.h, ...}
#   <pkg>/lib/libtvm_ffi.so
#
# Use it with
#   cmake -DCMAKE_PREFIX_PATH="$(tvmffi config --cmakedir)" ...
#   find_package(tvm_ffi CONFIG REQUIRED)
#   target_link_libraries(mylib PRIVATE tvm_ffi::shared)
#
# The package and target names are the ones of the reference package
# (apache-tvm-ffi), so a project switches runtimes by changing the prefix path:
#   tvm_ffi::header  include directories only
#   tvm_ffi::shared  libtvm_ffi.so, carrying the include directories
# and the variables tvm_ffi_ROOT, tvm_ffi_INCLUDE_DIR,
# tvm_ffi_DLPACK_INCLUDE_DIR and tvm_ffi_LIB_FILES.
# Unlike the reference package, this one asks no Python interpreter: every
# path is relative to this file. Our headers are C; no C++ standard is imposed.
#
# C++ (tvm/ffi/tvm_ffi.h, the export macros, Array/Map/String): those headers
# belong to apache-tvm-ffi (pip install 'tvmffi[cxx]'). When it is installed
# next to this package (the same site-packages), or tvm_ffi_CXX_INCLUDE_DIR
# names its include directory, both targets carry it and
# tvm_ffi_CXX_INCLUDE_DIR is set. find_package(tvm_ffi COMPONENTS CXX) fails
# without it, naming what to install; a project with C++ enabled that did not
# ask for the component gets a warning instead.

get_filename_component(tvm_ffi_ROOT "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(tvm_ffi_INCLUDE_DIR "${tvm_ffi_ROOT}/include")
set(tvm_ffi_DLPACK_INCLUDE_DIR "${tvm_ffi_ROOT}/include")
set(tvm_ffi_LIB_FILES "${tvm_ffi_ROOT}/lib/libtvm_ffi.so")

foreach(_tvm_ffi_need IN ITEMS "${tvm_ffi_INCLUDE_DIR}/tvm/ffi/c_api.h"
                                "${tvm_ffi_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h"
                                "${tvm_ffi_LIB_FILES}")
  if(NOT EXISTS "${_tvm_ffi_need}")
    set(tvm_ffi_FOUND FALSE)
    set(tvm_ffi_NOT_FOUND_MESSAGE
        "tvm_ffi: ${_tvm_ffi_need} is missing; reinstall the tvmffi package")
    unset(_tvm_ffi_need)
    return()
  endif()
endforeach()
unset(_tvm_ffi_need)

set(_tvm_ffi_includes "${tvm_ffi_INCLUDE_DIR}")
if(NOT tvm_ffi_CXX_INCLUDE_DIR)
  get_filename_component(_tvm_ffi_sibling "${tvm_ffi_ROOT}/../tvm_ffi/include" ABSOLUTE)
  if(EXISTS "${_tvm_ffi_sibling}/tvm/ffi/tvm_ffi.h")
    set(tvm_ffi_CXX_INCLUDE_DIR "${_tvm_ffi_sibling}")
  endif()
  unset(_tvm_ffi_sibling)
endif()
set(_tvm_ffi_cxx_hint "the C++ headers (tvm/ffi/tvm_ffi.h) come from apache-tvm-ffi, which is not installed next to ${tvm_ffi_ROOT}; install it with: pip install 'tvmffi[cxx]' (or set tvm_ffi_CXX_INCLUDE_DIR to its include directory)")
if(tvm_ffi_CXX_INCLUDE_DIR AND EXISTS "${tvm_ffi_CXX_INCLUDE_DIR}/tvm/ffi/tvm_ffi.h")
  # Ours first: C and C++ sources of one target see the same c_api.h.
  list(APPEND _tvm_ffi_includes "${tvm_ffi_CXX_INCLUDE_DIR}")
  set(tvm_ffi_CXX_FOUND TRUE)
else()
  set(tvm_ffi_CXX_FOUND FALSE)
  unset(tvm_ffi_CXX_INCLUDE_DIR)
  if("CXX" IN_LIST tvm_ffi_FIND_COMPONENTS)
    set(tvm_ffi_FOUND FALSE)
    set(tvm_ffi_NOT_FOUND_MESSAGE "tvm_ffi: ${_tvm_ffi_cxx_hint}")
    return()
  endif()
  get_property(_tvm_ffi_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CXX" IN_LIST _tvm_ffi_langs)
    message(WARNING "tvm_ffi: C only: ${_tvm_ffi_cxx_hint}")
  endif()
  unset(_tvm_ffi_langs)
endif()
unset(_tvm_ffi_cxx_hint)

if(NOT TARGET tvm_ffi::header)
  add_library(tvm_ffi::header INTERFACE IMPORTED)
  set_target_properties(tvm_ffi::header PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_tvm_ffi_includes}")
endif()

if(NOT TARGET tvm_ffi::shared)
  add_library(tvm_ffi::shared SHARED IMPORTED)
  set_target_properties(tvm_ffi::shared PROPERTIES
    IMPORTED_LOCATION "${tvm_ffi_LIB_FILES}"
    IMPORTED_SONAME "libtvm_ffi.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_tvm_ffi_includes}")
endif()
unset(_tvm_ffi_includes)

set(tvm_ffi_FOUND TRUE)
