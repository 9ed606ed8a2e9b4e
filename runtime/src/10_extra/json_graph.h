/* The JSON object graph, both directions (10_extra/json_graph_write.c,
 * json_graph_read.c); the globals are in serialization.c. */
#ifndef TVMFFI_RT_JSON_GRAPH_H_
#define TVMFFI_RT_JSON_GRAPH_H_

#include <string.h>

#include "10_extra/object_build.h"

/* Nesting bound of both directions, besides the stack check
 * (rt_xb_stack_low); frames per level are small. */
#define RT_GRAPH_DEPTH 1000000

/* The graph of an owned `value` with optional `metadata` (None: no
 * "metadata" key) as a Map in *out. */
RT_HIDDEN int rt_json_graph_write(const TVMFFIAny* value, const TVMFFIAny* metadata,
                                  TVMFFIAny* out);
/* The value a graph (a Map as ffi.json.Parse makes it) describes. */
RT_HIDDEN int rt_json_graph_read(const TVMFFIAny* graph, TVMFFIAny* out);

/* Type index of a type key, or -1 (no error left raised). */
static inline int32_t rt_graph_index_of(const char* key) {
  TVMFFIByteArray b = {key, strlen(key)};
  int32_t ti = -1;
  if (TVMFFITypeKeyToIndex(&b, &ti) != 0) {
    TVMFFIObjectHandle e = NULL;
    TVMFFIErrorMoveFromRaised(&e);
    rt_decref(e);
    return -1;
  }
  return ti;
}

#endif /* TVMFFI_RT_JSON_GRAPH_H_ */
