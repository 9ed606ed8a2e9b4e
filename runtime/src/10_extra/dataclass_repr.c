/* ffi.ReprPrint: the text of a value as the official runtime prints it.
 *
 * Scalars: None, True/False, decimal ints, floats as printf "%g", dtype
 * text, "device:id". Strings in double quotes with Python-style escapes,
 * bytes as b"..." with \xNN escapes, BigInt in decimal, tensors as
 * "dtype[d0, d1]@device", shapes as "Shape(d0, d1)". Arrays as tuples
 * "(a, b)" / "(a,)", Lists as "[a, b]", Maps and Dicts as "{k: v}". Objects
 * as "type_key(field=value, ...)" over their fields (ancestors first, a name
 * repeated by a child printed once, repr-off fields left out), or just the
 * type key without fields; an __ffi_repr__ column value (a Function taking
 * the object and a callback that prints a nested value) takes precedence;
 * enum singletons print "type_key.name". An object met again while it is
 * being printed prints "..."; one already printed reuses its text.
 * TVM_FFI_REPR_WITH_ADDR=1 appends "@0x<address>" to containers, tensors,
 * enums and object headers (and to "...").
 *
 * Also: the __ffi_repr__ column values of ffi.reflection.AccessStep and
 * ffi.reflection.AccessPath ("<root>.a[0]["k"]..."). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "10_extra/dataclass.h"

typedef struct {
  char* s;
  size_t n;
} rp_text;

typedef struct {
  TVMFFIObject* obj;
  int32_t ti;
  dc_children ch;
  size_t idx;
  rp_text* reprs;
  size_t nreprs;
} rp_frame;

typedef struct {
  rp_frame* f;
  size_t n, cap;
} rp_stack;

typedef struct {
  int show_addr;
  dc_map state; /* object -> u: 1 in progress, 2 done (text: its repr) */
  const void* missing;
  const void* kwargs;
} rp_ctx;

static int rp_is_container(int32_t ti) {
  return ti == kTVMFFIArray || ti == kTVMFFIList || ti == kTVMFFIMap || ti == kTVMFFIDict;
}

static void rp_addr(rt_sbuf* b, const void* p) { rt_sb_printf(b, "@0x%" PRIxPTR, (uintptr_t)p); }

/* ---- scalar texts ---- */
static void rp_escape_py(rt_sbuf* b, const char* data, size_t len) {
  rt_sb_puts(b, "\"");
  size_t i = 0;
  while (i < len) {
    unsigned char c = (unsigned char)data[i];
    unsigned char d = i + 1 < len ? (unsigned char)data[i + 1] : 0;
    if (c == 0x1b && d == '[') { /* an ANSI escape sequence stays readable */
      size_t j = i + 2;
      while (j < len && ((data[j] >= '0' && data[j] <= '9') || data[j] == ';')) ++j;
      if (j < len && (data[j] == 'm' || data[j] == 'K')) {
        rt_sb_puts(b, "\\x1b[");
        rt_sb_append(b, data + i + 2, j + 1 - (i + 2));
        i = j + 1;
        continue;
      }
    }
    const char* esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r"
                    : c == '\\' ? "\\\\" : c == '"' ? "\\\"" : NULL;
    if (esc) {
      rt_sb_puts(b, esc);
      ++i;
      continue;
    }
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) rt_sb_printf(b, "\\x%02x", (unsigned)c);
      else rt_sb_append(b, (const char*)&c, 1);
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0 && i + 1 < len && (d & 0xC0) == 0x80) {
      rt_sb_printf(b, "\\u%04x", (unsigned)(((c & 0x1F) << 6) | (d & 0x3F)));
      i += 2;
    } else if ((c & 0xF0) == 0xE0 && i + 2 < len && (d & 0xC0) == 0x80 &&
               ((unsigned char)data[i + 2] & 0xC0) == 0x80) {
      unsigned e = (unsigned char)data[i + 2];
      rt_sb_printf(b, "\\u%04x", ((c & 0x0Fu) << 12) | ((d & 0x3Fu) << 6) | (e & 0x3Fu));
      i += 3;
    } else if ((c & 0xF8) == 0xF0 && i + 3 < len && (d & 0xC0) == 0x80 &&
               ((unsigned char)data[i + 2] & 0xC0) == 0x80 &&
               ((unsigned char)data[i + 3] & 0xC0) == 0x80) {
      unsigned e = (unsigned char)data[i + 2], f = (unsigned char)data[i + 3];
      rt_sb_printf(b, "\\U%08x",
                   ((c & 0x07u) << 18) | ((d & 0x3Fu) << 12) | ((e & 0x3Fu) << 6) | (f & 0x3Fu));
      i += 4;
    } else {
      rt_sb_printf(b, "\\x%02x", (unsigned)c);
      ++i;
    }
  }
  rt_sb_puts(b, "\"");
}

static void rp_bytes(rt_sbuf* b, const char* data, size_t len) {
  rt_sb_puts(b, "b\"");
  for (size_t i = 0; i < len; ++i) {
    unsigned char c = (unsigned char)data[i];
    if (c >= 32 && c < 127 && c != '"' && c != '\\') rt_sb_append(b, (const char*)&c, 1);
    else rt_sb_printf(b, "\\x%02x", (unsigned)c);
  }
  rt_sb_puts(b, "\"");
}

static const char* rp_device_name(int t) {
  switch (t) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    case kDLVPI: return "vpi";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    case kDLExtDev: return "ext_dev";
    case kDLCUDAManaged: return "cuda_managed";
    case kDLOneAPI: return "oneapi";
    case kDLWebGPU: return "webgpu";
    case kDLHexagon: return "hexagon";
    case kDLMAIA: return "maia";
    case kDLTrn: return "trn";
    default: return "unknown";
  }
}

static void rp_device(rt_sbuf* b, DLDevice d) {
  rt_sb_printf(b, "%s:%d", rp_device_name((int)d.device_type), (int)d.device_id);
}

static int rp_dtype(rt_sbuf* b, DLDataType t) {
  TVMFFIAny s;
  rt_any_set_none(&s);
  if (TVMFFIDataTypeToString(&t, &s) != 0) return -1;
  TVMFFIByteArray ba = dc_bytes(&s);
  rt_sb_append(b, ba.data, ba.size);
  rt_any_release(&s);
  return 0;
}

/* Appends a Function's string result (a hook's or a callback's). */
static int rp_take_text(rt_sbuf* b, TVMFFIAny* r) {
  if (r->type_index != kTVMFFISmallStr && r->type_index != kTVMFFIStr) {
    TVMFFIByteArray k = dc_type_key(r->type_index);
    rt_any_release(r);
    return rt_raise("TypeError", "Cannot convert from type `%.*s` to `str`", (int)k.size, k.data);
  }
  TVMFFIByteArray s = dc_bytes(r);
  rt_sb_append(b, s.data, s.size);
  rt_any_release(r);
  return 0;
}

static int rp_cache(rp_ctx* c, const void* obj, const rt_sbuf* text) {
  dc_entry* e = dc_map_put(&c->state, obj, NULL);
  if (e == NULL) return -1;
  free(e->text);
  e->text = (char*)malloc(text->size ? text->size : 1);
  if (e->text == NULL) return rt_raise("MemoryError", "out of memory");
  if (text->size) memcpy(e->text, text->data, text->size);
  e->len = text->size;
  e->u = 2;
  return 0;
}

static int rp_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret);
static int rp_run(rp_ctx* c, const TVMFFIAny* v, rt_sbuf* out);

/* 1: the text of `v` was appended to `b`; 0: `v` needs a frame; -1: error. */
static int rp_immediate(rp_ctx* c, const TVMFFIAny* v, rt_sbuf* b) {
  int32_t ti = v->type_index;
  switch (ti) {
    case kTVMFFINone: rt_sb_puts(b, "None"); return 1;
    case kTVMFFIBool: rt_sb_puts(b, v->v_int64 ? "True" : "False"); return 1;
    case kTVMFFIInt: rt_sb_printf(b, "%" PRId64, v->v_int64); return 1;
    case kTVMFFIFloat: rt_sb_printf(b, "%g", v->v_float64); return 1;
    case kTVMFFIDataType: return rp_dtype(b, v->v_dtype) == 0 ? 1 : -1;
    case kTVMFFIDevice: rp_device(b, v->v_device); return 1;
    case kTVMFFISmallStr: rp_escape_py(b, v->v_bytes, v->small_str_len); return 1;
    case kTVMFFISmallBytes: rp_bytes(b, v->v_bytes, v->small_str_len); return 1;
    default: break;
  }
  if (ti < kTVMFFIStaticObjectBegin) {
    TVMFFIByteArray k = dc_type_key(ti);
    rt_sb_append(b, k.data, k.size);
    return 1;
  }
  TVMFFIObject* obj = v->v_obj;
  if (obj == NULL) {
    rt_sb_puts(b, "None");
    return 1;
  }
  dc_entry* e = dc_map_find(&c->state, obj, NULL);
  if (e && e->u == 2) {
    rt_sb_append(b, e->text, e->len);
    return 1;
  }
  if (e && e->u == 1) {
    rt_sb_puts(b, "...");
    if (c->show_addr) rp_addr(b, obj);
    return 1;
  }
  if (obj == c->missing || obj == c->kwargs) {
    rt_sb_puts(b, obj == c->missing ? "<MISSING>" : "<KWARGS>");
    return 1;
  }
  if (ti == kTVMFFIBigInt) {
    const TVMFFIAny* fn = dc_column(DC_COL_TO_JSON, kTVMFFIBigInt);
    if (fn == NULL) return rt_raise("InternalError", "ffi.BigInt has no __data_to_json__");
    TVMFFIAny arg = *v, r;
    if (dc_call(fn, NULL, &arg, 1, &r) != 0) return -1;
    return rp_take_text(b, &r) == 0 ? 1 : -1;
  }
  if (ti == kTVMFFIStr || ti == kTVMFFIBytes) {
    TVMFFIByteArray s = dc_bytes(v);
    if (ti == kTVMFFIStr) rp_escape_py(b, s.data, s.size);
    else rp_bytes(b, s.data, s.size);
    return 1;
  }
  if (ti == kTVMFFITensor) {
    const DLTensor* t = (const DLTensor*)rt_cell(obj);
    if (rp_dtype(b, t->dtype) != 0) return -1;
    rt_sb_puts(b, "[");
    for (int32_t i = 0; i < t->ndim; ++i) rt_sb_printf(b, "%s%" PRId64, i ? ", " : "", t->shape[i]);
    rt_sb_puts(b, "]@");
    rp_device(b, t->device);
    if (c->show_addr) rp_addr(b, obj);
    return 1;
  }
  if (ti == kTVMFFIShape) {
    const TVMFFIShapeCell* s = (const TVMFFIShapeCell*)rt_cell(obj);
    rt_sb_puts(b, "Shape(");
    for (size_t i = 0; i < s->size; ++i) rt_sb_printf(b, "%s%" PRId64, i ? ", " : "", s->data[i]);
    rt_sb_puts(b, ")");
    return 1;
  }
  const TVMFFIAny* hook = dc_column(DC_COL_REPR, ti);
  if (hook != NULL) {
    e = dc_map_put(&c->state, obj, NULL);
    if (e == NULL) return -1;
    e->u = 1;
    TVMFFIAny args[2], r;
    args[0] = *v;
    if (dc_make_callback(c, rp_callback, &args[1]) != 0) return -1;
    int rc = dc_call(hook, DC_SIG_REPR, args, 2, &r);
    rt_any_release(&args[1]);
    if (rc != 0) return -1;
    rt_sbuf t;
    rt_sb_init(&t);
    if (rp_take_text(&t, &r) != 0) return -1;
    if (c->show_addr && rp_is_container(ti)) rp_addr(&t, obj);
    rc = rp_cache(c, obj, &t);
    rt_sb_append(b, t.data, t.size);
    rt_sb_free(&t);
    return rc == 0 ? 1 : -1;
  }
  if (dc_is_enum(ti)) {
    rt_sbuf t;
    rt_sb_init(&t);
    TVMFFIByteArray k = dc_type_key(ti);
    rt_sb_append(&t, k.data, k.size);
    rt_sb_puts(&t, ".");
    /* EnumObj: int64 _int_index, then the String _str_index */
    TVMFFIByteArray name = dc_bytes((const TVMFFIAny*)((char*)rt_cell(obj) + 8));
    rt_sb_append(&t, name.data, name.size);
    if (c->show_addr) rp_addr(&t, obj);
    int rc = rp_cache(c, obj, &t);
    rt_sb_append(b, t.data, t.size);
    rt_sb_free(&t);
    return rc == 0 ? 1 : -1;
  }
  return 0;
}

/* ---- frames ---- */
static void rp_frame_free(rp_frame* f) {
  for (size_t i = 0; i < f->nreprs; ++i) free(f->reprs[i].s);
  free(f->reprs);
  dc_children_free(&f->ch);
}

static int rp_push(rp_ctx* c, rp_stack* st, const TVMFFIAny* v) {
  if (st->n >= DC_MAX_DEPTH)
    return rt_raise("ValueError", "ObjectGraphDFS: maximum stack depth (%zu) exceeded",
                    DC_MAX_DEPTH);
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    rp_frame* f = (rp_frame*)realloc(st->f, cap * sizeof(rp_frame));
    if (f == NULL) return rt_raise("MemoryError", "out of memory");
    st->f = f;
    st->cap = cap;
  }
  dc_entry* e = dc_map_put(&c->state, v->v_obj, NULL);
  if (e == NULL) return -1;
  e->u = 1;
  rp_frame* f = &st->f[st->n];
  memset(f, 0, sizeof(*f));
  f->obj = v->v_obj;
  f->ti = v->v_obj->type_index;
  if (dc_children_of(v, kTVMFFIFieldFlagBitMaskReprOff, &f->ch) != 0) {
    dc_children_free(&f->ch);
    return -1;
  }
  f->reprs = (rp_text*)calloc(f->ch.n ? f->ch.n : 1, sizeof(rp_text));
  if (f->reprs == NULL) {
    dc_children_free(&f->ch);
    return rt_raise("MemoryError", "out of memory");
  }
  ++st->n;
  return 0;
}

static void rp_feed(rp_frame* f, rt_sbuf* text) {
  f->reprs[f->nreprs].s = text->data;
  f->reprs[f->nreprs].n = text->size;
  ++f->nreprs;
  rt_sb_init(text); /* ownership moved */
}

static int rp_finalize(rp_ctx* c, rp_frame* f, rt_sbuf* b) {
  if (f->ch.kind == DC_SEQ) {
    rt_sb_puts(b, f->ti == kTVMFFIArray ? "(" : "[");
    for (size_t i = 0; i < f->nreprs; ++i) {
      if (i) rt_sb_puts(b, ", ");
      rt_sb_append(b, f->reprs[i].s, f->reprs[i].n);
    }
    if (f->ti == kTVMFFIArray && f->nreprs == 1) rt_sb_puts(b, ",");
    rt_sb_puts(b, f->ti == kTVMFFIArray ? ")" : "]");
  } else if (f->ch.kind == DC_MAP) {
    rt_sb_puts(b, "{");
    for (size_t i = 0; i + 1 < f->nreprs; i += 2) {
      if (i) rt_sb_puts(b, ", ");
      rt_sb_append(b, f->reprs[i].s, f->reprs[i].n);
      rt_sb_puts(b, ": ");
      rt_sb_append(b, f->reprs[i + 1].s, f->reprs[i + 1].n);
    }
    rt_sb_puts(b, "}");
  } else {
    TVMFFIByteArray k = dc_type_key(f->ti);
    rt_sb_append(b, k.data, k.size);
    if (c->show_addr) rp_addr(b, f->obj);
    if (f->nreprs > 0) {
      rt_sb_puts(b, "(");
      int first = 1;
      for (size_t i = 0; i < f->nreprs; ++i) {
        TVMFFIByteArray name = f->ch.fields[i]->name;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; ++j)
          seen = f->ch.fields[j]->name.size == name.size &&
                 memcmp(f->ch.fields[j]->name.data, name.data, name.size) == 0;
        if (seen) continue; /* a child's field of the same name: printed once */
        if (!first) rt_sb_puts(b, ", ");
        first = 0;
        rt_sb_append(b, name.data, name.size);
        rt_sb_puts(b, "=");
        rt_sb_append(b, f->reprs[i].s, f->reprs[i].n);
      }
      rt_sb_puts(b, ")");
    }
  }
  if (c->show_addr && rp_is_container(f->ti)) rp_addr(b, f->obj);
  if (b->failed) return rt_raise("MemoryError", "out of memory");
  return rp_cache(c, f->obj, b);
}

static int rp_run(rp_ctx* c, const TVMFFIAny* v, rt_sbuf* out) {
  int r = rp_immediate(c, v, out);
  if (r != 0) return r < 0 ? -1 : 0;
  rp_stack st = {NULL, 0, 0};
  int rc = rp_push(c, &st, v);
  while (rc == 0) {
    rp_frame* f = &st.f[st.n - 1];
    int pushed = 0;
    while (rc == 0 && f->idx < f->ch.n) {
      const TVMFFIAny* child = &f->ch.items[f->idx++];
      rt_sbuf t;
      rt_sb_init(&t);
      r = rp_immediate(c, child, &t);
      if (r == 1) {
        rp_feed(f, &t);
        continue;
      }
      rt_sb_free(&t);
      if (r < 0) rc = -1;
      else {
        rc = rp_push(c, &st, child);
        pushed = 1;
        break;
      }
    }
    if (rc != 0) break;
    if (pushed) continue;
    rt_sbuf t;
    rt_sb_init(&t);
    rc = rp_finalize(c, f, &t);
    rp_frame_free(f);
    --st.n;
    if (rc != 0) {
      rt_sb_free(&t);
      break;
    }
    if (st.n == 0) {
      rt_sb_append(out, t.data, t.size);
      rt_sb_free(&t);
      break;
    }
    rp_feed(&st.f[st.n - 1], &t);
  }
  for (size_t i = 0; i < st.n; ++i) rp_frame_free(&st.f[i]);
  free(st.f);
  return rc;
}

/* The callback a __ffi_repr__ hook gets: the text of one nested value. */
static int rp_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  if (n != 1)
    return rt_raise("TypeError",
                    "Mismatched number of arguments when calling: `fn_repr(0: Any) -> str`. "
                    "Expected 1 but got %d arguments", (int)n);
  TVMFFIAny v;
  if (dc_own(&args[0], &v) != 0) return -1;
  rt_sbuf b;
  rt_sb_init(&b);
  int rc = rp_run((rp_ctx*)self, &v, &b);
  rt_any_release(&v);
  if (rc != 0) {
    rt_sb_free(&b);
    return -1;
  }
  return rt_sb_to_string_any(&b, ret);
}

int rt_dc_repr(const TVMFFIAny* value, TVMFFIAny* out) {
  rp_ctx c;
  memset(&c, 0, sizeof(c));
  const char* env = getenv("TVM_FFI_REPR_WITH_ADDR");
  c.show_addr = env != NULL && strcmp(env, "1") == 0;
  c.missing = dc_missing_ptr();
  c.kwargs = dc_kwargs_ptr();
  TVMFFIAny v;
  if (dc_own(value, &v) != 0) return -1;
  rt_sbuf b;
  rt_sb_init(&b);
  int rc = rp_run(&c, &v, &b);
  rt_any_release(&v);
  dc_map_free(&c.state);
  if (rc == 0 && b.failed) rc = rt_raise("MemoryError", "out of memory");
  if (rc != 0) {
    rt_sb_free(&b);
    return -1;
  }
  return rt_sb_to_string_any(&b, out);
}

static int g_repr(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.ReprPrint(0: Any) -> str", n, 1) != 0) return -1;
  return rt_dc_repr(&args[0], ret);
}

/* ---- __ffi_repr__ of the access path types ----
 * AccessStep: int32 kind, then the Any key. AccessPath: parent, step
 * (object pointers, NULL at the root), int32 depth. */
enum { K_ATTR, K_ARRAY_ITEM, K_MAP_ITEM, K_ATTR_MISSING, K_ARRAY_ITEM_MISSING, K_MAP_ITEM_MISSING };

static int rp_call_fn(const TVMFFIAny* fn, const TVMFFIAny* v, rt_sbuf* b) {
  TVMFFIAny arg = *v, r;
  if (dc_call(fn, NULL, &arg, 1, &r) != 0) return -1;
  return rp_take_text(b, &r);
}

static int rp_hook_args(const TVMFFIAny* args, int32_t n, const char* key, void** self) {
  if (n != 2) return rt_raise("TypeError", "%s.__ffi_repr__ expects 2 arguments", key);
  TVMFFIByteArray want = {key, strlen(key)};
  int32_t ti = -1;
  if (TVMFFITypeKeyToIndex(&want, &ti) != 0) return -1;
  if (args[0].type_index != ti || args[0].v_obj == NULL) {
    TVMFFIByteArray got = dc_type_key(args[0].type_index);
    return rt_raise("TypeError", "Cannot convert from type `%.*s` to `%s`", (int)got.size,
                    got.data, key);
  }
  *self = args[0].v_obj;
  return 0;
}

static int rp_step_repr(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  void* step;
  if (rp_hook_args(args, n, "ffi.reflection.AccessStep", &step) != 0) return -1;
  int32_t kind = *(const int32_t*)rt_cell(step);
  const TVMFFIAny* key = (const TVMFFIAny*)((char*)rt_cell(step) + 8);
  rt_sbuf b;
  rt_sb_init(&b);
  int rc = 0;
  switch (kind) {
    case K_ATTR: {
      TVMFFIByteArray s = dc_bytes(key);
      rt_sb_puts(&b, ".");
      rt_sb_append(&b, s.data, s.size);
      break;
    }
    case K_ARRAY_ITEM:
    case K_ARRAY_ITEM_MISSING:
      rt_sb_printf(&b, kind == K_ARRAY_ITEM ? "[%" PRId64 "]" : "[<missing:%" PRId64 ">]",
                   key->v_int64);
      break;
    case K_MAP_ITEM:
      rt_sb_puts(&b, "[");
      rc = rp_call_fn(&args[1], key, &b);
      rt_sb_puts(&b, "]");
      break;
    default:
      rt_sb_puts(&b, "[<missing:");
      rc = rp_call_fn(&args[1], key, &b);
      rt_sb_puts(&b, ">]");
      break;
  }
  if (rc != 0) {
    rt_sb_free(&b);
    return -1;
  }
  return rt_sb_to_string_any(&b, ret);
}

static int rp_path_repr(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  void* path;
  if (rp_hook_args(args, n, "ffi.reflection.AccessPath", &path) != 0) return -1;
  size_t count = 0;
  for (void* p = path; p && *(void**)rt_cell(p); p = *(void**)rt_cell(p)) ++count;
  TVMFFIObject** steps = (TVMFFIObject**)calloc(count ? count : 1, sizeof(void*));
  if (steps == NULL) return rt_raise("MemoryError", "out of memory");
  size_t i = count;
  for (void* p = path; p && *(void**)rt_cell(p); p = *(void**)rt_cell(p))
    steps[--i] = *(TVMFFIObject**)((char*)rt_cell(p) + 8);
  rt_sbuf b;
  rt_sb_init(&b);
  rt_sb_puts(&b, "<root>");
  int rc = 0;
  for (i = 0; rc == 0 && i < count; ++i) {
    TVMFFIAny s;
    rt_any_set_none(&s);
    if (steps[i]) rt_any_set_obj(&s, steps[i]); /* a view: no reference taken */
    rc = rp_call_fn(&args[1], &s, &b);
  }
  free(steps);
  if (rc != 0) {
    rt_sb_free(&b);
    return -1;
  }
  return rt_sb_to_string_any(&b, ret);
}

RT_INIT(rt_dataclass_repr_init) { dc_register_global("ffi.ReprPrint", g_repr, 1, "ffi.String"); }

/* After the reflection types exist (9_registry/builtin_types.c, RT_INIT). */
__attribute__((constructor(210))) static void rt_dataclass_repr_attrs(void) {
  dc_register_attr("ffi.reflection.AccessStep", "__ffi_repr__", rp_step_repr);
  dc_register_attr("ffi.reflection.AccessPath", "__ffi_repr__", rp_path_repr);
}
