/* Strings and bytes (small inline form and heap objects), AnyView to owned
 * Any, a growable text buffer, and the ffi.String / ffi.Bytes globals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Heap String/Bytes: header, byte array cell, then the NUL-terminated
 * content in the same block (one allocation). */
typedef struct {
  TVMFFIObject header;
  TVMFFIByteArray cell;
} rt_bytes_obj;

#define RT_MAX_STRING ((size_t)1 << 48)

/* One unaligned 8- or 16-byte move (compiles to a load and a store). */
#define RT_MOVE(dst, src, width) \
  do {                           \
    char t_[width];              \
    memcpy(t_, (src), width);    \
    memcpy((dst), t_, width);    \
  } while (0)

/* memcpy, with sizes 8..64 (most names and keys) copied inline by two or
 * four overlapping fixed-size moves instead of a call. */
static inline __attribute__((always_inline)) void rt_copy_short(char* dst, const char* src,
                                                                size_t n) {
  if (n >= 8 && n <= 16) {
    RT_MOVE(dst, src, 8);
    RT_MOVE(dst + n - 8, src + n - 8, 8);
  } else if (n > 16 && n <= 64) {
    RT_MOVE(dst, src, 16);
    if (n > 32) {
      RT_MOVE(dst + 16, src + 16, 16);
      RT_MOVE(dst + n - 32, src + n - 32, 16);
    }
    RT_MOVE(dst + n - 16, src + n - 16, 16);
  } else if (n) {
    memcpy(dst, src, n);
  }
}

/* Fills a block from the quiet allocator (size <= RT_MAX_STRING). Inlined
 * into the public entry points so the common case is one call (malloc) deep. */
static inline __attribute__((always_inline)) rt_bytes_obj* rt_bytes_obj_quiet(int32_t type_index,
                                                                              const char* data,
                                                                              size_t size) {
  rt_bytes_obj* o = (rt_bytes_obj*)rt_object_alloc_uninit_quiet(sizeof(rt_bytes_obj) + size + 1,
                                                                type_index, rt_object_plain_deleter);
  if (RT_UNLIKELY(!o)) return NULL;
  char* content = (char*)(o + 1);
  rt_copy_short(content, data, size);
  content[size] = '\0';
  o->cell.data = content;
  o->cell.size = size;
  return o;
}

/* Same error as rt_object_alloc's; a custom allocator may have raised its
 * own already, which is kept. */
static __attribute__((noinline, cold)) int rt_bytes_alloc_failed(size_t size) {
  if (!tvmffi_rt_error_pending())
    rt_raise("MemoryError", "allocator returned NULL for %zu bytes",
             sizeof(rt_bytes_obj) + size + 1);
  return -1;
}

static void* rt_bytes_obj_new(int32_t type_index, const char* data, size_t size) {
  if (size > RT_MAX_STRING)
    return rt_raise("ValueError", "string of %zu bytes is too large", size), NULL;
  rt_bytes_obj* o = rt_bytes_obj_quiet(type_index, data, size);
  if (RT_UNLIKELY(!o)) rt_bytes_alloc_failed(size);
  return o;
}

void* rt_string_obj_new(const char* data, size_t size) {
  return rt_bytes_obj_new(kTVMFFIStr, data, size);
}

static int rt_to_any(int32_t small_index, int32_t heap_index, const char* data, size_t size,
                     TVMFFIAny* out) {
  if (size <= 7) {
    out->type_index = small_index;
    out->small_str_len = (uint32_t)size;
    out->v_int64 = 0;
    if (size) memcpy(out->v_bytes, data, size);
    return 0;
  }
  void* o = rt_bytes_obj_new(heap_index, data, size);
  if (!o) return -1;
  rt_any_set_obj(out, o);
  return 0;
}

int rt_string_to_any(const char* data, size_t size, TVMFFIAny* out) {
  return rt_to_any(kTVMFFISmallStr, kTVMFFIStr, data, size, out);
}

int rt_bytes_to_any(const char* data, size_t size, TVMFFIAny* out) {
  return rt_to_any(kTVMFFISmallBytes, kTVMFFIBytes, data, size, out);
}

/* The public constructors: a heap object made inline on the common path;
 * small forms, errors and allocation failure go through rt_to_any. */
static inline __attribute__((always_inline)) int rt_from_byte_array(const char* api,
                                                                    int32_t small_index,
                                                                    int32_t heap_index,
                                                                    const TVMFFIByteArray* input,
                                                                    TVMFFIAny* out) {
  if (RT_UNLIKELY(!input || !out)) return rt_raise("ValueError", "%s: NULL argument", api);
  const char* data = input->data;
  size_t size = input->size;
  if (RT_LIKELY(size > 7 && size <= RT_MAX_STRING && data)) {
    rt_bytes_obj* o = rt_bytes_obj_quiet(heap_index, data, size);
    if (RT_UNLIKELY(!o)) return rt_bytes_alloc_failed(size);
    out->type_index = heap_index;
    out->zero_padding = 0;
    out->v_obj = &o->header;
    return 0;
  }
  if (size && !data) return rt_raise("ValueError", "%s: NULL argument", api);
  return rt_to_any(small_index, heap_index, data, size, out);
}

TVM_FFI_DLL int TVMFFIStringFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out) {
  return rt_from_byte_array("TVMFFIStringFromByteArray", kTVMFFISmallStr, kTVMFFIStr, input, out);
}

TVM_FFI_DLL int TVMFFIBytesFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out) {
  return rt_from_byte_array("TVMFFIBytesFromByteArray", kTVMFFISmallBytes, kTVMFFIBytes, input,
                            out);
}

int rt_any_get_bytes(const TVMFFIAny* a, int want_bytes, TVMFFIByteArray* out) {
  int is_bytes;
  switch (a->type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      is_bytes = a->type_index == kTVMFFISmallBytes;
      out->data = a->v_bytes;
      out->size = a->small_str_len;
      break;
    case kTVMFFIStr:
    case kTVMFFIBytes:
      is_bytes = a->type_index == kTVMFFIBytes;
      *out = ((rt_bytes_obj*)a->v_obj)->cell;
      break;
    case kTVMFFIRawStr:
      is_bytes = 0;
      if (!a->v_c_str) return 0;
      out->data = a->v_c_str;
      out->size = strlen(a->v_c_str);
      break;
    case kTVMFFIByteArrayPtr:
      is_bytes = 1;
      if (!a->v_ptr) return 0;
      *out = *(const TVMFFIByteArray*)a->v_ptr;
      break;
    default:
      return 0;
  }
  if (want_bytes >= 0 && is_bytes != want_bytes) return 0;
  return 1;
}

TVM_FFI_DLL int TVMFFIAnyViewToOwnedAny(const TVMFFIAny* any_view, TVMFFIAny* out) {
  if (!any_view || !out) return rt_raise("ValueError", "TVMFFIAnyViewToOwnedAny: NULL argument");
  int32_t t = any_view->type_index;
  if (t >= kTVMFFIStaticObjectBegin) {
    if (any_view->v_obj) TVMFFIObjectIncRef(any_view->v_obj);
    *out = *any_view;
    return 0;
  }
  switch (t) {
    case kTVMFFIRawStr: {
      if (!any_view->v_c_str) return rt_raise("ValueError", "raw string view is NULL");
      return rt_string_to_any(any_view->v_c_str, strlen(any_view->v_c_str), out);
    }
    case kTVMFFIByteArrayPtr: {
      const TVMFFIByteArray* ba = (const TVMFFIByteArray*)any_view->v_ptr;
      if (!ba) return rt_raise("ValueError", "byte array view is NULL");
      return rt_bytes_to_any(ba->data, ba->size, out);
    }
    case kTVMFFIObjectRValueRef: {
      /* Moves the object out of the referenced slot. */
      TVMFFIObject** slot = (TVMFFIObject**)any_view->v_ptr;
      if (!slot || !*slot) return rt_raise("ValueError", "RValueRef already moved");
      TVMFFIObject* o = *slot;
      *slot = NULL;
      rt_any_set_obj(out, o);
      return 0;
    }
    default:
      *out = *any_view;
      return 0;
  }
}

/* ---- text buffer ---- */
void rt_sb_init(rt_sbuf* b) {
  b->data = NULL;
  b->size = 0;
  b->cap = 0;
  b->failed = 0;
}

void rt_sb_free(rt_sbuf* b) {
  free(b->data);
  rt_sb_init(b);
}

static int rt_sb_reserve(rt_sbuf* b, size_t extra) {
  if (b->failed) return 0;
  if (b->size + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->size + extra + 1) cap *= 2;
  char* p = (char*)realloc(b->data, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void rt_sb_append(rt_sbuf* b, const char* data, size_t n) {
  if (!rt_sb_reserve(b, n)) return;
  if (n) memcpy(b->data + b->size, data, n);
  b->size += n;
  b->data[b->size] = '\0';
}

void rt_sb_puts(rt_sbuf* b, const char* s) { rt_sb_append(b, s, strlen(s)); }

void rt_sb_printf(rt_sbuf* b, const char* fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof(small)) {
    rt_sb_append(b, small, (size_t)n);
    return;
  }
  if (!rt_sb_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->size, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->size += (size_t)n;
}

void rt_sb_json_str(rt_sbuf* b, const char* s, size_t n) {
  rt_sb_append(b, "\"", 1);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '"': rt_sb_append(b, "\\\"", 2); break;
      case '\\': rt_sb_append(b, "\\\\", 2); break;
      case '\n': rt_sb_append(b, "\\n", 2); break;
      case '\r': rt_sb_append(b, "\\r", 2); break;
      case '\t': rt_sb_append(b, "\\t", 2); break;
      default:
        if (c < 0x20) {
          char esc[8];
          snprintf(esc, sizeof(esc), "\\u%04x", c);
          rt_sb_append(b, esc, 6);
        } else {
          rt_sb_append(b, (const char*)&s[i], 1);
        }
    }
  }
  rt_sb_append(b, "\"", 1);
}

int rt_sb_to_string_any(rt_sbuf* b, TVMFFIAny* out) {
  if (b->failed) {
    rt_sb_free(b);
    return rt_raise("MemoryError", "out of memory building a string");
  }
  int rc = rt_string_to_any(b->data ? b->data : "", b->size, out);
  rt_sb_free(b);
  return rc;
}
