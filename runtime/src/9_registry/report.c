/* tvmffi_rt_* reports built from the layers below: the recorded misuse as
 * JSON, the list of globals, and the C timing loop of `tvmffi bench`. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "container_internal.h"

static void rt_violation_json(const char* kind, const char* detail, void* ctx) {
  rt_sbuf* b = (rt_sbuf*)ctx;
  if (b->size > 1) rt_sb_puts(b, ", ");
  rt_sb_puts(b, "{\"kind\": ");
  rt_sb_json_str(b, kind, strlen(kind));
  rt_sb_puts(b, ", \"detail\": ");
  rt_sb_json_str(b, detail, strlen(detail));
  rt_sb_puts(b, "}");
}

TVM_FFI_DLL int tvmffi_rt_violations(TVMFFIAny* out) {
  if (!out) return rt_raise("ValueError", "tvmffi_rt_violations: out is NULL");
  rt_sbuf b;
  rt_sb_init(&b);
  rt_sb_puts(&b, "[");
  rt_violations_snapshot(rt_violation_json, &b);
  rt_sb_puts(&b, "]");
  return rt_sb_to_string_any(&b, out);
}

/* ---- enumeration ---- */
TVM_FFI_DLL int tvmffi_rt_list_globals(TVMFFIAny* out) {
  if (!out) return rt_raise("ValueError", "tvmffi_rt_list_globals: out is NULL");
  char** names;
  size_t n;
  if (rt_global_names(&names, &n) != 0) return -1;
  TVMFFIAny* items = (TVMFFIAny*)calloc(n ? n : 1, sizeof(TVMFFIAny));
  int rc = items ? 0 : rt_raise("MemoryError", "out of memory listing globals");
  size_t made = 0;
  for (; rc == 0 && made < n; ++made) rc = rt_string_to_any(names[made], strlen(names[made]), &items[made]);
  if (rc == 0) rc = rt_array_from_anys(items, (int64_t)n, out);
  for (size_t i = 0; items && i < made; ++i) rt_any_release(&items[i]);
  free(items);
  for (size_t i = 0; i < n; ++i) free(names[i]);
  free(names);
  return rc;
}

/* ---- timing ---- */
static int64_t rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

TVM_FFI_DLL int tvmffi_rt_time_calls(TVMFFIObjectHandle func, const TVMFFIAny* args,
                                     int32_t num_args, int64_t calls_per_round, int32_t rounds,
                                     int64_t* out_ns_per_round) {
  if (!func || !out_ns_per_round || (num_args > 0 && !args) || num_args < 0 ||
      calls_per_round < 1 || rounds < 1)
    return rt_raise("ValueError", "tvmffi_rt_time_calls: bad arguments");
  if (((TVMFFIObject*)func)->type_index != kTVMFFIFunction)
    return rt_raise("TypeError", "tvmffi_rt_time_calls: not a Function object");
  /* The callee may not modify args, but the C signature of FunctionCall takes
   * a mutable pointer; pass a private copy so the caller's array is never
   * touched. */
  TVMFFIAny small[16];
  TVMFFIAny* copy = num_args <= 16 ? small : (TVMFFIAny*)malloc(sizeof(TVMFFIAny) * (size_t)num_args);
  if (!copy) return rt_raise("MemoryError", "out of memory");
  if (num_args) memcpy(copy, args, sizeof(TVMFFIAny) * (size_t)num_args);
  int rc = 0;
  for (int32_t r = 0; r < rounds && rc == 0; ++r) {
    int64_t t0 = rt_now_ns();
    for (int64_t i = 0; i < calls_per_round; ++i) {
      TVMFFIAny res;
      rt_any_set_none(&res);
      if (TVMFFIFunctionCall(func, copy, num_args, &res) != 0) {
        rc = -1;
        break;
      }
      rt_any_release(&res);
    }
    out_ns_per_round[r] = rt_now_ns() - t0;
  }
  if (copy != small) free(copy);
  return rc;
}
