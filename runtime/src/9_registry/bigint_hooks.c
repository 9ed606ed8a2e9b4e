/* The BigInt entries of the official start-up columns: __ffi_eq__,
 * __ffi_compare__, __ffi_hash__ (Functions over two objects / one object and
 * a recursion callback) and __data_to_json__ / __data_from_json__ (decimal
 * text). Words are int64, least significant first, two's complement. */
#include <stdlib.h>
#include <string.h>

#include "container_internal.h"

/* Words of an Int or BigInt value, or 0 when it is neither. */
static int bi_words(const TVMFFIAny* v, const int64_t** w, size_t* n) {
  if (v->type_index != kTVMFFIInt && v->type_index != kTVMFFIBigInt) return 0;
  TVMFFIByteArray c = TVMFFIBigIntGetContentByteArray(v);
  *w = (const int64_t*)c.data;
  *n = c.size / sizeof(int64_t);
  return *n > 0;
}

static int bi_arg(const TVMFFIAny* args, int32_t i, const char* hook, const int64_t** w,
                  size_t* n) {
  if (bi_words(&args[i], w, n)) return 0;
  size_t len;
  const char* key = rt_type_key(args[i].type_index, &len);
  return rt_raise("TypeError", "Cannot convert from type `%.*s` to `ffi.BigInt` in %s",
                  (int)len, key, hook);
}

static int bi_compare(const int64_t* a, size_t na, const int64_t* b, size_t nb) {
  int neg_a = a[na - 1] < 0, neg_b = b[nb - 1] < 0;
  if (neg_a != neg_b) return neg_a ? -1 : 1;
  uint64_t sa = neg_a ? ~(uint64_t)0 : 0, sb = neg_b ? ~(uint64_t)0 : 0;
  for (size_t i = na > nb ? na : nb; i != 0; --i) {
    uint64_t x = i <= na ? (uint64_t)a[i - 1] : sa;
    uint64_t y = i <= nb ? (uint64_t)b[i - 1] : sb;
    if (x != y) return x > y ? 1 : -1;
  }
  return 0;
}

static int h_eq(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  const int64_t *a, *b;
  size_t na, nb;
  if (nargs != 3) return rt_raise("TypeError", "ffi.BigInt.__ffi_eq__ expects 3 arguments");
  if (bi_arg(args, 0, "__ffi_eq__", &a, &na) || bi_arg(args, 1, "__ffi_eq__", &b, &nb)) return -1;
  rt_any_set_bool(ret, bi_compare(a, na, b, nb) == 0);
  return 0;
}

static int h_compare(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  const int64_t *a, *b;
  size_t na, nb;
  if (nargs != 3) return rt_raise("TypeError", "ffi.BigInt.__ffi_compare__ expects 3 arguments");
  if (bi_arg(args, 0, "__ffi_compare__", &a, &na) || bi_arg(args, 1, "__ffi_compare__", &b, &nb))
    return -1;
  rt_any_set_int(ret, bi_compare(a, na, b, nb));
  return 0;
}

static int h_hash(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  const int64_t* a;
  size_t na;
  if (nargs != 2) return rt_raise("TypeError", "ffi.BigInt.__ffi_hash__ expects 2 arguments");
  if (bi_arg(args, 0, "__ffi_hash__", &a, &na)) return -1;
  uint64_t v = args[0].type_index == kTVMFFIInt ? (uint64_t)args[0].v_int64
                                                 : rt_hash_bytes((const char*)a, na * 8);
  rt_any_set_int(ret, (int64_t)v);
  return 0;
}

/* Decimal text of a value (magnitude by repeated division by 10^18). */
static int h_to_json(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  const int64_t* a;
  size_t n;
  if (nargs != 1) return rt_raise("TypeError", "ffi.BigInt.__data_to_json__ expects 1 argument");
  if (bi_arg(args, 0, "__data_to_json__", &a, &n)) return -1;
  int neg = a[n - 1] < 0;
  uint64_t* mag = (uint64_t*)malloc(n * sizeof(uint64_t));
  char* digits = (char*)malloc(n * 20 + 2);
  if (!mag || !digits) {
    free(mag);
    free(digits);
    return rt_raise("MemoryError", "out of memory");
  }
  unsigned carry = 1;
  for (size_t i = 0; i < n; ++i) { /* |a|: two's complement negation when negative */
    uint64_t w = (uint64_t)a[i];
    if (neg) {
      w = ~w + carry;
      carry = carry && w == 0;
    }
    mag[i] = w;
  }
  size_t nd = 0, top = n;
  const uint64_t base = 1000000000000000000ull;
  do {
    unsigned __int128 rem = 0;
    for (size_t i = top; i-- > 0;) {
      unsigned __int128 cur = (rem << 64) | mag[i];
      mag[i] = (uint64_t)(cur / base);
      rem = cur % base;
    }
    while (top > 0 && mag[top - 1] == 0) --top;
    uint64_t chunk = (uint64_t)rem;
    for (int k = 0; k < 18 && (top > 0 || chunk > 0 || k == 0); ++k) {
      digits[nd++] = (char)('0' + chunk % 10);
      chunk /= 10;
    }
  } while (top > 0);
  rt_sbuf b;
  rt_sb_init(&b);
  if (neg) rt_sb_puts(&b, "-");
  for (size_t i = nd; i-- > 0;) rt_sb_append(&b, &digits[i], 1);
  free(mag);
  free(digits);
  return rt_sb_to_string_any(&b, ret);
}

static int h_from_json(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray s;
  if (nargs != 1) return rt_raise("TypeError", "ffi.BigInt.__data_from_json__ expects 1 argument");
  if (!rt_any_get_bytes(&args[0], 0, &s)) {
    size_t len;
    const char* key = rt_type_key(args[0].type_index, &len);
    return rt_raise("TypeError", "Cannot convert from type `%.*s` to `ffi.String`", (int)len,
                    key);
  }
  size_t i = 0;
  int neg = 0;
  if (i < s.size && (s.data[i] == '-' || s.data[i] == '+')) neg = s.data[i++] == '-';
  if (i == s.size) return rt_raise("ValueError", "Invalid decimal string for ffi.BigInt");
  size_t cap = (s.size - i) / 18 + 2, n = 1;
  uint64_t* mag = (uint64_t*)calloc(cap, sizeof(uint64_t));
  if (!mag) return rt_raise("MemoryError", "out of memory");
  for (; i < s.size; ++i) {
    if (s.data[i] < '0' || s.data[i] > '9') {
      free(mag);
      return rt_raise("ValueError", "Invalid decimal string for ffi.BigInt");
    }
    unsigned __int128 carry = (unsigned)(s.data[i] - '0');
    for (size_t k = 0; k < n; ++k) {
      unsigned __int128 cur = (unsigned __int128)mag[k] * 10 + carry;
      mag[k] = (uint64_t)cur;
      carry = cur >> 64;
    }
    if (carry) mag[n++] = (uint64_t)carry;
  }
  n += 1; /* a clear top word keeps the magnitude positive */
  if (neg) {
    unsigned c = 1;
    for (size_t k = 0; k < n; ++k) {
      mag[k] = ~mag[k] + c;
      c = c && mag[k] == 0;
    }
  }
  TVMFFIByteArray content = {(const char*)mag, n * sizeof(uint64_t)};
  int rc = TVMFFIBigIntFromByteArray(&content, ret);
  free(mag);
  return rc;
}

/* Native AnyHash / AnyEqual hooks: raw function pointers with the
 * official native-hook convention (arguments by reference, an Any back:
 * the result, or an Error object). */
static TVMFFIAny native_error(const char* kind, const char* msg) {
  TVMFFIAny r;
  rt_any_set_none(&r);
  TVMFFIByteArray k = {kind, strlen(kind)}, m = {msg, strlen(msg)}, b = {"", 0};
  TVMFFIObjectHandle e = NULL;
  if (TVMFFIErrorCreate(&k, &m, &b, &e) == 0 && e) rt_any_set_obj(&r, e);
  return r;
}

static TVMFFIAny native_any_hash(const TVMFFIAny* v) {
  const int64_t* w;
  size_t n;
  if (!bi_words(v, &w, &n)) return native_error("TypeError", "__any_hash__ expects a BigInt");
  TVMFFIAny r;
  rt_any_set_int(&r, v->type_index == kTVMFFIInt ? v->v_int64
                                                 : (int64_t)rt_hash_bytes((const char*)w, n * 8));
  return r;
}

static TVMFFIAny native_any_equal(const TVMFFIAny* a, const TVMFFIAny* b) {
  const int64_t *x, *y;
  size_t nx, ny;
  if (!bi_words(a, &x, &nx) || !bi_words(b, &y, &ny))
    return native_error("TypeError", "__any_equal__ expects two BigInts");
  TVMFFIAny r;
  rt_any_set_bool(&r, bi_compare(x, nx, y, ny) == 0);
  return r;
}

RT_INIT(rt_bigint_hooks_init) {
  (void)rt_type_set_native_attr(kTVMFFIBigInt, "__any_hash__", (void*)native_any_hash);
  (void)rt_type_set_native_attr(kTVMFFIBigInt, "__any_equal__", (void*)native_any_equal);
  static const struct {
    const char* column;
    TVMFFISafeCallType fn;
  } hooks[] = {{"__ffi_eq__", h_eq},           {"__ffi_compare__", h_compare},
               {"__ffi_hash__", h_hash},       {"__data_to_json__", h_to_json},
               {"__data_from_json__", h_from_json}};
  for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); ++i) {
    TVMFFIObjectHandle f = NULL;
    if (TVMFFIFunctionCreate(NULL, hooks[i].fn, NULL, &f) != 0) continue;
    TVMFFIByteArray col = {hooks[i].column, strlen(hooks[i].column)};
    TVMFFIAny v;
    rt_any_set_obj(&v, f);
    (void)TVMFFITypeRegisterAttr(kTVMFFIBigInt, &col, &v);
    rt_decref(f);
  }
}
