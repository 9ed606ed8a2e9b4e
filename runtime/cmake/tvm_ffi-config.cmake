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
# path is relative to this file. The headers are C; no C++ standard is imposed.

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

if(NOT TARGET tvm_ffi::header)
  add_library(tvm_ffi::header INTERFACE IMPORTED)
  set_target_properties(tvm_ffi::header PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${tvm_ffi_INCLUDE_DIR}")
endif()

if(NOT TARGET tvm_ffi::shared)
  add_library(tvm_ffi::shared SHARED IMPORTED)
  set_target_properties(tvm_ffi::shared PROPERTIES
    IMPORTED_LOCATION "${tvm_ffi_LIB_FILES}"
    IMPORTED_SONAME "libtvm_ffi.so"
    INTERFACE_INCLUDE_DIRECTORIES "${tvm_ffi_INCLUDE_DIR}")
endif()

set(tvm_ffi_FOUND TRUE)
