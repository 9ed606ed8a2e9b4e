/* ffi.ContainerFindFirstNonCPUDevice: the device of the first Tensor not on
 * the CPU inside nested Arrays, Lists, Maps and Dicts (map values only),
 * depth first in container order; (kDLCPU, 0) when there is none. */
#include "container_internal.h"

static int find_device(const TVMFFIAny* v, DLDevice* out) {
  switch (v->type_index) {
    case kTVMFFITensor: {
      const DLTensor* t = (const DLTensor*)rt_cell(v->v_obj);
      if (t->device.device_type != kDLCPU) {
        *out = t->device;
        return 1;
      }
      return 0;
    }
    case kTVMFFIArray:
    case kTVMFFIList: {
      int64_t n;
      const TVMFFIAny* items = rt_seq_items(v->v_obj, &n);
      for (int64_t i = 0; i < n; ++i)
        if (find_device(&items[i], out)) return 1;
      return 0;
    }
    case kTVMFFIMap:
    case kTVMFFIDict: {
      void* m = v->v_obj;
      for (uint64_t it = rt_map_iter_begin(m); it != rt_map_iter_end(m);
           it = rt_map_iter_next(m, it)) {
        const TVMFFIAny *k, *val;
        rt_map_iter_kv(m, it, &k, &val);
        if (find_device(val, out)) return 1;
      }
      return 0;
    }
    default:
      return 0;
  }
}

static int g_find_device(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ContainerFindFirstNonCPUDevice(0: Any) -> Device";
  if (rt_b_check_nargs(sig, nargs, 1)) return -1;
  DLDevice d = {kDLCPU, 0};
  (void)find_device(&args[0], &d);
  ret->type_index = kTVMFFIDevice;
  ret->zero_padding = 0;
  ret->v_int64 = 0;
  ret->v_device = d;
  return 0;
}

RT_INIT(rt_devices_init) {
  rt_register_global("ffi.ContainerFindFirstNonCPUDevice", g_find_device);
}
