/* AccessPath objects for other 10_extra files (10_extra/access_path.c). */
#ifndef TVMFFI_RT_ACCESS_PATH_H_
#define TVMFFI_RT_ACCESS_PATH_H_

#include "10_extra/object_build.h"

/* Step kinds (AccessKind of the official headers). */
enum { K_ATTR, K_ARRAY_ITEM, K_MAP_ITEM, K_ATTR_MISSING, K_ARRAY_ITEM_MISSING, K_MAP_ITEM_MISSING };

/* A new root path (depth 0) in *out. */
RT_HIDDEN int rt_access_path_root(TVMFFIAny* out);
/* `parent` (an AccessPath object) extended by one step of `kind` with a
 * copy of `key`, in *out. */
RT_HIDDEN int rt_access_path_extend(void* parent, int32_t kind, const TVMFFIAny* key,
                                    TVMFFIAny* out);

#endif /* TVMFFI_RT_ACCESS_PATH_H_ */
