/* The JSON object graph globals: ffi.ToJSONGraph / ffi.FromJSONGraph
 * (10_extra/json_graph_write.c, json_graph_read.c) and their string forms
 * through ffi.json.Stringify / ffi.json.Parse. A graph is
 * {"root_index": i, "nodes": [...], "metadata"?: any}. */
#include <string.h>

#include "10_extra/json_graph.h"


static int call_global(const char* name, const TVMFFIAny* args, int32_t n, TVMFFIAny* out) {
  void* f = rt_get_global(name);
  if (f == NULL) return rt_raise("RuntimeError", "%s is not registered", name);
  int rc = rt_xb_call(f, args, n, out);
  rt_decref(f);
  return rc;
}

/* Owned copies of the arguments (raw strings become String objects). */
static int own_args(const TVMFFIAny* args, int32_t n, TVMFFIAny* owned) {
  for (int32_t i = 0; i < n; ++i) {
    if (TVMFFIAnyViewToOwnedAny(&args[i], &owned[i]) != 0) {
      while (i-- > 0) rt_any_release(&owned[i]);
      return -1;
    }
  }
  return 0;
}

static int g_to_json_graph(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  TVMFFIAny a[2];
  if (rt_b_check_nargs("ffi.ToJSONGraph(0: Any, 1: Any) -> Any", n, 2) != 0 || own_args(args, 2, a) != 0)
    return -1;
  int rc = rt_json_graph_write(&a[0], &a[1], ret);
  rt_any_release(&a[0]);
  rt_any_release(&a[1]);
  return rc;
}

static int g_to_json_graph_string(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  TVMFFIAny a[2], graph;
  if (rt_b_check_nargs("ffi.ToJSONGraphString(0: Any, 1: Any) -> str", n, 2) != 0 ||
      own_args(args, 2, a) != 0)
    return -1;
  int rc = rt_json_graph_write(&a[0], &a[1], &graph);
  rt_any_release(&a[0]);
  rt_any_release(&a[1]);
  if (rc != 0) return -1;
  TVMFFIAny sargs[2];
  sargs[0] = graph;
  rt_any_set_none(&sargs[1]);
  rc = call_global("ffi.json.Stringify", sargs, 2, ret);
  rt_any_release(&graph);
  return rc;
}

static int g_from_json_graph(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.FromJSONGraph(0: Any) -> Any", n, 1) != 0) return -1;
  return rt_json_graph_read(&args[0], ret);
}

static int g_from_json_graph_string(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.FromJSONGraphString(0: str) -> Any";
  TVMFFIByteArray s;
  if (rt_b_check_nargs(sig, n, 1) != 0 || rt_b_arg_str(args, 0, sig, &s) != 0) return -1;
  TVMFFIAny graph;
  if (call_global("ffi.json.Parse", &args[0], 1, &graph) != 0) return -1;
  int rc = rt_json_graph_read(&graph, ret);
  rt_any_release(&graph);
  return rc;
}

RT_INIT(rt_serialization_init) {
  (void)rt_register_global("ffi.ToJSONGraph", g_to_json_graph);
  (void)rt_register_global("ffi.ToJSONGraphString", g_to_json_graph_string);
  (void)rt_register_global("ffi.FromJSONGraph", g_from_json_graph);
  (void)rt_register_global("ffi.FromJSONGraphString", g_from_json_graph_string);
}
