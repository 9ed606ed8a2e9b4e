/* Structural equality and hashing: the entry points the rest of the
 * runtime (and the C++ surface in src/cxx/structural.cc) calls. C linkage,
 * hidden. Values are owned Any cells (no view-only type indices: convert
 * arguments with TVMFFIAnyViewToOwnedAny first). Functions returning int
 * return 0, or -1 with an error raised in the calling thread. */
#ifndef TVMFFI_RT_EXTRA_STRUCTURAL_H_
#define TVMFFI_RT_EXTRA_STRUCTURAL_H_

#include <stdint.h>

#include <tvm/ffi/c_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_ST_API __attribute__((visibility("hidden")))

/* *out = 1 when lhs and rhs are structurally equal, else 0. */
RT_ST_API int rt_structural_equal(const TVMFFIAny* lhs, const TVMFFIAny* rhs, int map_free_vars,
                                  int skip_tensor_content, int* out);
/* *out = None when equal, else an owned Array of two AccessPath objects:
 * where the first mismatch sits in lhs and in rhs. */
RT_ST_API int rt_structural_first_mismatch(const TVMFFIAny* lhs, const TVMFFIAny* rhs,
                                           int map_free_vars, int skip_tensor_content,
                                           TVMFFIAny* out);
/* The official runtime's structural hash of value. */
RT_ST_API int rt_structural_hash(const TVMFFIAny* value, int map_free_vars,
                                 int skip_tensor_content, uint64_t* out);

#ifdef __cplusplus
}
#endif

#endif /* TVMFFI_RT_EXTRA_STRUCTURAL_H_ */
