/* Big integers: TVMFFIBigIntFromByteArray / TVMFFIBigIntGetContentByteArray.
 *
 * Layout of a BigInt object (type index kTVMFFIBigInt): the 24-byte header,
 * a size_t word count, then that many int64 words, least significant first,
 * two's complement, native byte order. Values are kept canonical: no
 * redundant sign words, and anything that fits int64 is a plain Int. */
#include <string.h>

#include "internal.h"

typedef struct {
  TVMFFIObject header;
  size_t size;
  int64_t words[];
} rt_bigint;

int TVMFFIBigIntFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out) {
  if (input == NULL || out == NULL) return rt_raise("ValueError", "TVMFFIBigIntFromByteArray: NULL argument");
  rt_any_set_none(out);
  if (input->size % sizeof(int64_t) != 0) {
    return rt_raise("ValueError", "BigInt content must contain whole 64-bit words");
  }
  size_t n = input->size / sizeof(int64_t);
  const char* src = input->data;
  /* Trim redundant sign-extension words before allocating anything. */
  while (n > 1) {
    int64_t top, below;
    memcpy(&top, src + (n - 1) * 8, 8);
    memcpy(&below, src + (n - 2) * 8, 8);
    if (top != (below < 0 ? -1 : 0)) break;
    --n;
  }
  if (n <= 1) {
    int64_t v = 0;
    if (n == 1) memcpy(&v, src, 8);
    rt_any_set_int(out, v);
    return 0;
  }
  if (n > (SIZE_MAX - sizeof(rt_bigint)) / sizeof(int64_t)) {
    return rt_raise("MemoryError", "BigInt too large");
  }
  rt_bigint* b = (rt_bigint*)rt_object_alloc(sizeof(rt_bigint) + n * sizeof(int64_t),
                                             kTVMFFIBigInt, rt_object_plain_deleter);
  if (b == NULL) return -1;
  b->size = n;
  memcpy(b->words, src, n * sizeof(int64_t));
  rt_any_set_obj(out, b);
  return 0;
}

TVMFFIByteArray TVMFFIBigIntGetContentByteArray(const TVMFFIAny* value) {
  TVMFFIByteArray r = {NULL, 0};
  if (value == NULL) return r;
  if (value->type_index == kTVMFFIInt) {
    r.data = (const char*)&value->v_int64;
    r.size = sizeof(int64_t);
  } else if (value->type_index == kTVMFFIBigInt && value->v_obj != NULL) {
    const rt_bigint* b = (const rt_bigint*)value->v_obj;
    r.data = (const char*)b->words;
    r.size = b->size * sizeof(int64_t);
  }
  return r;
}
