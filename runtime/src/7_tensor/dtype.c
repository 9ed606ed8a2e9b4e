/* Data type strings: TVMFFIDataTypeFromString / TVMFFIDataTypeToString.
 *
 * Spellings follow the reference runtime so both agree on every string:
 * int/uint/float/bfloat/bool/handle with optional bits, "x<lanes>" vectors,
 * "xvscalex<lanes>" scalable vectors (stored as negative lanes), the float8,
 * float6 and float4 variants (also "fp8_"/"f8_" style prefixes), short
 * aliases (i32, u8, f16, bf16), "void"/"" for the empty handle type and
 * custom[name] types resolved through dtype.get_custom_type_* globals. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* DLPack codes past the classic ones; spelled out because headers differ in
 * which of them they name. */
enum {
  DT_INT = 0,
  DT_UINT = 1,
  DT_FLOAT = 2,
  DT_HANDLE = 3,
  DT_BFLOAT = 4,
  DT_BOOL = 6,
  DT_F8_E3M4 = 7,
  DT_F8_E4M3 = 8,
  DT_F8_E4M3B11FNUZ = 9,
  DT_F8_E4M3FN = 10,
  DT_F8_E4M3FNUZ = 11,
  DT_F8_E5M2 = 12,
  DT_F8_E5M2FNUZ = 13,
  DT_F8_E8M0FNU = 14,
  DT_F6_E2M3FN = 15,
  DT_F6_E3M2FN = 16,
  DT_F4_E2M1FN = 17,
  DT_CUSTOM_BEGIN = 129
};

static const char* code_name(int code) {
  switch (code) {
    case DT_INT: return "int";
    case DT_UINT: return "uint";
    case DT_FLOAT: return "float";
    case DT_HANDLE: return "handle";
    case DT_BFLOAT: return "bfloat";
    case DT_BOOL: return "bool";
    case DT_F8_E3M4: return "float8_e3m4";
    case DT_F8_E4M3: return "float8_e4m3";
    case DT_F8_E4M3B11FNUZ: return "float8_e4m3b11fnuz";
    case DT_F8_E4M3FN: return "float8_e4m3fn";
    case DT_F8_E4M3FNUZ: return "float8_e4m3fnuz";
    case DT_F8_E5M2: return "float8_e5m2";
    case DT_F8_E5M2FNUZ: return "float8_e5m2fnuz";
    case DT_F8_E8M0FNU: return "float8_e8m0fnu";
    case DT_F6_E2M3FN: return "float6_e2m3fn";
    case DT_F6_E3M2FN: return "float6_e3m2fn";
    case DT_F4_E2M1FN: return "float4_e2m1fn";
    default: return NULL;
  }
}

/* Calls global `name` with one argument; *out is owned. */
static int call_global1(const char* name, const TVMFFIAny* arg, TVMFFIAny* out) {
  void* f = rt_get_global(name);
  if (f == NULL) return rt_raise("ValueError", "Function %s not found", name);
  TVMFFIAny a = *arg;
  rt_any_set_none(out);
  int rc = TVMFFIFunctionCall(f, &a, 1, out);
  rt_decref(f);
  return rc;
}

/* ---------------------------------------------------------------- parse */

typedef struct {
  const char* s; /* the (normalized) text being parsed */
  size_t n;
} dt_text;

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int has_prefix(const dt_text* t, size_t at, const char* p) {
  size_t k = strlen(p);
  return at <= t->n && t->n - at >= k && memcmp(t->s + at, p, k) == 0;
}

static int err_unknown(const dt_text* t) {
  return rt_raise("ValueError", "unknown dtype `%.*s`", (int)t->n, t->s);
}

/* Decimal digits from *pos; saturates above UINT32_MAX (then reported). */
static int parse_digits(const dt_text* t, size_t* pos, uint32_t* out) {
  size_t start = *pos;
  uint64_t v = 0;
  while (*pos < t->n && is_digit(t->s[*pos])) {
    if (v <= UINT32_MAX) v = v * 10 + (uint64_t)(t->s[*pos] - '0');
    ++*pos;
  }
  if (v > UINT32_MAX) {
    return rt_raise("ValueError", "Integer value in dtype string '%.*s' is out of range for uint32_t",
                    (int)(*pos - start), t->s + start);
  }
  *out = (uint32_t)v;
  return 0;
}

/* Optional "x<lanes>" (or "xvscalex<lanes>" when scalable is allowed). */
static int parse_lanes(const dt_text* t, size_t* pos, int allow_scalable, uint16_t* out) {
  int negative = 0;
  if (allow_scalable && has_prefix(t, *pos, "xvscale")) {
    negative = 1;
    *pos += 7;
  }
  if (*pos >= t->n || t->s[*pos] != 'x') {
    *out = 1;
    return 0;
  }
  ++*pos;
  size_t digits = *pos;
  uint32_t v = 0;
  if (parse_digits(t, pos, &v) != 0) return -1;
  if (*pos == digits || v == 0) {
    return rt_raise("ValueError",
                    "Invalid lanes specification in dtype '%.*s'. Lanes must be a positive integer.",
                    (int)t->n, t->s);
  }
  if (v > UINT16_MAX) {
    return rt_raise("ValueError", "Lanes value %u is out of range for uint16_t in dtype '%.*s'",
                    (unsigned)v, (int)t->n, t->s);
  }
  *out = negative ? (uint16_t)(0x10000u - v) : (uint16_t)v;
  return 0;
}

/* `pattern` at `at`, followed by the end, 'x' or (if allowed) '_'. Returns
 * the end offset or -1. */
static long match_variant(const dt_text* t, size_t at, const char* pattern, int allow_us) {
  if (!has_prefix(t, at, pattern)) return -1;
  size_t end = at + strlen(pattern);
  if (end == t->n || t->s[end] == 'x' || (allow_us && t->s[end] == '_')) return (long)end;
  return -1;
}

static int finish_small_float(const dt_text* t, size_t pos, int code, int bits, int allow_us,
                              DLDataType* out) {
  out->code = (uint8_t)code;
  out->bits = (uint8_t)bits;
  if (allow_us && pos < t->n && t->s[pos] == '_') ++pos;
  if (parse_lanes(t, &pos, 0, &out->lanes) != 0) return -1;
  if (pos != t->n) return err_unknown(t);
  return 0;
}

typedef struct {
  const char* suffix;
  int code;
} dt_variant;

static int parse_small_float(const dt_text* t, size_t at, int width, DLDataType* out) {
  static const dt_variant f8[] = {
      {"e4m3b11fnuz", DT_F8_E4M3B11FNUZ}, {"e4m3fnuz", DT_F8_E4M3FNUZ}, {"e4m3fn", DT_F8_E4M3FN},
      {"e5m2fnuz", DT_F8_E5M2FNUZ},       {"e8m0fnu", DT_F8_E8M0FNU},   {"e3m4", DT_F8_E3M4},
      {"e4m3", DT_F8_E4M3},               {"e5m2", DT_F8_E5M2},         {NULL, 0}};
  static const dt_variant f6[] = {{"e2m3fn", DT_F6_E2M3FN}, {"e3m2fn", DT_F6_E3M2FN}, {NULL, 0}};
  static const dt_variant f4[] = {{"e2m1fn", DT_F4_E2M1FN}, {NULL, 0}};
  const dt_variant* table = width == 8 ? f8 : width == 6 ? f6 : f4;
  int allow_us = width == 4; /* only float4 accepts "float4_e2m1fn_x2" */
  for (const dt_variant* v = table; v->suffix; ++v) {
    long end = match_variant(t, at, v->suffix, allow_us);
    if (end >= 0) return finish_small_float(t, (size_t)end, v->code, width, allow_us, out);
  }
  return rt_raise("ValueError", "unknown float%d type `%.*s`", width, (int)t->n, t->s);
}

static int parse_custom(const dt_text* t, size_t* pos, DLDataType* out) {
  size_t p = 6; /* after "custom" */
  if (p >= t->n || t->s[p] != '[') {
    return rt_raise("ValueError", "expected opening brace after 'custom' type in%.*s", (int)t->n,
                    t->s);
  }
  ++p;
  size_t name_start = p;
  while (p < t->n && t->s[p] != ']') ++p;
  if (p >= t->n) {
    return rt_raise("ValueError", "expected closing brace after 'custom' type in%.*s", (int)t->n,
                    t->s);
  }
  TVMFFIAny sarg, res;
  if (rt_string_to_any(t->s + name_start, p - name_start, &sarg) != 0) return -1;
  int rc = call_global1("dtype.get_custom_type_code", &sarg, &res);
  rt_any_release(&sarg);
  if (rc != 0) return -1;
  if (res.type_index != kTVMFFIInt && res.type_index != kTVMFFIBool) {
    rt_any_release(&res);
    return rt_raise("TypeError", "dtype.get_custom_type_code must return an int");
  }
  out->code = (uint8_t)res.v_int64;
  *pos = p + 1;
  return 0;
}

static int parse_dtype(const dt_text* t, DLDataType* out) {
  size_t pos;
  out->bits = 32;
  out->lanes = 1;
  if (has_prefix(t, 0, "int")) {
    out->code = DT_INT;
    pos = 3;
  } else if (has_prefix(t, 0, "uint")) {
    out->code = DT_UINT;
    pos = 4;
  } else if (has_prefix(t, 0, "bool")) {
    out->code = DT_BOOL;
    out->bits = 8;
    pos = 4;
  } else if (has_prefix(t, 0, "f8_")) {
    return parse_small_float(t, 3, 8, out);
  } else if (has_prefix(t, 0, "f6_")) {
    return parse_small_float(t, 3, 6, out);
  } else if (has_prefix(t, 0, "f4_")) {
    return parse_small_float(t, 3, 4, out);
  } else if (has_prefix(t, 0, "float")) {
    if (has_prefix(t, 5, "8_")) return parse_small_float(t, 7, 8, out);
    if (has_prefix(t, 5, "6_")) return parse_small_float(t, 7, 6, out);
    if (has_prefix(t, 5, "4_")) return parse_small_float(t, 7, 4, out);
    out->code = DT_FLOAT;
    pos = 5;
  } else if (has_prefix(t, 0, "handle")) {
    out->code = DT_HANDLE;
    out->bits = 64;
    pos = 6;
  } else if (has_prefix(t, 0, "bfloat")) {
    out->code = DT_BFLOAT;
    out->bits = 16;
    pos = 6;
  } else if (has_prefix(t, 0, "custom")) {
    if (parse_custom(t, &pos, out) != 0) return -1;
  } else {
    return err_unknown(t);
  }
  uint32_t bits = 0;
  if (parse_digits(t, &pos, &bits) != 0) return -1;
  if (bits > UINT8_MAX) {
    return rt_raise("ValueError", "Bits value %u is out of range for uint8_t in dtype '%.*s'",
                    (unsigned)bits, (int)t->n, t->s);
  }
  if (bits != 0) out->bits = (uint8_t)bits;
  if (parse_lanes(t, &pos, 1, &out->lanes) != 0) return -1;
  if (pos != t->n) return err_unknown(t);
  return 0;
}

int TVMFFIDataTypeFromString(const TVMFFIByteArray* str, DLDataType* out) {
  if (str == NULL || out == NULL) return rt_raise("ValueError", "TVMFFIDataTypeFromString: NULL argument");
  const char* s = str->size ? str->data : "";
  size_t n = str->size;
  if (n == 0 || (n == 4 && memcmp(s, "void", 4) == 0)) {
    out->code = DT_HANDLE;
    out->bits = 0;
    out->lanes = 0;
    return 0;
  }
  /* Short aliases are rewritten to their long form first, so messages quote
   * the long spelling like the reference does. */
  const char* canon = NULL;
  size_t skip = 0;
  if (n >= 2 && s[0] == 'i' && is_digit(s[1])) {
    canon = "int", skip = 1;
  } else if (n >= 2 && s[0] == 'u' && is_digit(s[1])) {
    canon = "uint", skip = 1;
  } else if (n >= 3 && s[0] == 'b' && s[1] == 'f' && is_digit(s[2])) {
    canon = "bfloat", skip = 2;
  } else if (n >= 4 && memcmp(s, "fp8_", 4) == 0) {
    canon = "float8_", skip = 4;
  } else if (n >= 4 && memcmp(s, "fp6_", 4) == 0) {
    canon = "float6_", skip = 4;
  } else if (n >= 4 && memcmp(s, "fp4_", 4) == 0) {
    canon = "float4_", skip = 4;
  } else if (n >= 2 && s[0] == 'f' && is_digit(s[1])) {
    canon = "float", skip = 1;
  }
  if (canon == NULL) {
    dt_text t = {s, n};
    return parse_dtype(&t, out);
  }
  size_t cn = strlen(canon);
  char small[64];
  char* buf = n - skip + cn <= sizeof(small) ? small : (char*)malloc(n - skip + cn);
  if (buf == NULL) return rt_raise("MemoryError", "out of memory parsing a dtype");
  memcpy(buf, canon, cn);
  memcpy(buf + cn, s + skip, n - skip);
  dt_text t = {buf, n - skip + cn};
  int rc = parse_dtype(&t, out);
  if (buf != small) free(buf);
  return rc;
}

/* ---------------------------------------------------------------- print */

int TVMFFIDataTypeToString(const DLDataType* dtype, TVMFFIAny* out) {
  if (dtype == NULL || out == NULL) return rt_raise("ValueError", "TVMFFIDataTypeToString: NULL argument");
  DLDataType d = *dtype;
  if (d.code == DT_BOOL && d.bits == 8 && d.lanes == 1) return rt_string_to_any("bool", 4, out);
  if (d.code == DT_HANDLE && d.bits == 0 && d.lanes == 0) return rt_string_to_any("", 0, out);
  char buf[96];
  size_t len = 0;
  if (d.code >= DT_CUSTOM_BEGIN) {
    TVMFFIAny arg, res;
    rt_any_set_int(&arg, d.code);
    if (call_global1("dtype.get_custom_type_name", &arg, &res) != 0) return -1;
    TVMFFIByteArray name;
    if (!rt_any_get_bytes(&res, 0, &name)) {
      rt_any_release(&res);
      return rt_raise("TypeError", "dtype.get_custom_type_name must return a str");
    }
    size_t k = name.size > 64 ? 64 : name.size;
    len = (size_t)snprintf(buf, sizeof(buf), "custom[%.*s]", (int)k, name.data);
    rt_any_release(&res);
  } else {
    const char* name = code_name(d.code);
    if (name == NULL) {
      return rt_raise("ValueError", "DLDataType contains unknown type_code=%d", (int)d.code);
    }
    len = (size_t)snprintf(buf, sizeof(buf), "%s", name);
  }
  if (d.code == DT_HANDLE) return rt_string_to_any(buf, len, out);
  int lanes = (int16_t)d.lanes;
  if (d.code < DT_F8_E3M4 && (d.code != DT_BOOL || d.bits != 8)) {
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%d", (int)d.bits);
  }
  if (lanes > 1) {
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "x%d", lanes);
  } else if (lanes < -1) {
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "xvscalex%d", -lanes);
  }
  return rt_string_to_any(buf, len, out);
}
