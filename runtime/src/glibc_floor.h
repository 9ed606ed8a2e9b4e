/* Keep the runtime loadable on old glibc (the floor is glibc 2.17, the
 * manylinux2014 / manylinux_2_17 policy); force-included into every source
 * file of the runtime by runtime/CMakeLists.txt (-include).
 *
 * glibc 2.34 moved the dl* and pthread_* functions from libdl/libpthread into
 * libc and gave each a new default version, GLIBC_2.34. A library linked on a
 * newer system therefore asks for dlopen@GLIBC_2.34 and will not load on any
 * older glibc. Each of those functions still exists under its original
 * version, so we bind to that one instead (`.symver`). On those old systems the
 * functions live in libdl.so.2 / libpthread.so.0, which the loading process
 * (every CPython: the interpreter links both there) has already loaded; the
 * runtime does not list them in DT_NEEDED itself: doing so changed the order
 * in which libraries loaded next to the runtime resolve symbols
 * (tests/test_stubs.py's kitchen library lost its typed globals).
 *
 * The other symbols the runtime takes from libc are 2.17 or older
 * (clock_gettime@GLIBC_2.17, aligned_alloc@GLIBC_2.16, memcpy@GLIBC_2.14);
 * tests/test_packaging.py fails when a dynamic symbol needs a newer GLIBC_. */
#ifndef TVMFFI_RT_GLIBC_FLOOR_H_
#define TVMFFI_RT_GLIBC_FLOOR_H_

/* Force-included before anything else, so ask the C library who it is; the
 * feature-test macros come from the command line (-D_GNU_SOURCE). */
#if defined(__linux__) && !defined(TVMFFI_RT_NO_GLIBC_FLOOR)
#include <features.h>
#endif

#if defined(__linux__) && defined(__GLIBC__) && !defined(TVMFFI_RT_NO_GLIBC_FLOOR)

#if defined(__x86_64__)
#define RT_GLIBC_BASE "GLIBC_2.2.5"
#define RT_GLIBC_2_3_3 "GLIBC_2.3.3"
#elif defined(__aarch64__)
/* aarch64 starts at 2.17: every symbol's oldest version is GLIBC_2.17. */
#define RT_GLIBC_BASE "GLIBC_2.17"
#define RT_GLIBC_2_3_3 "GLIBC_2.17"
#endif

#ifdef RT_GLIBC_BASE
#define RT_GLIBC_PIN(sym, ver) __asm__(".symver " #sym "," #sym "@" ver)
RT_GLIBC_PIN(dlopen, RT_GLIBC_BASE);
RT_GLIBC_PIN(dlsym, RT_GLIBC_BASE);
RT_GLIBC_PIN(dlerror, RT_GLIBC_BASE);
RT_GLIBC_PIN(dlclose, RT_GLIBC_BASE);
RT_GLIBC_PIN(dladdr, RT_GLIBC_BASE);
RT_GLIBC_PIN(dladdr1, RT_GLIBC_2_3_3);
RT_GLIBC_PIN(dlinfo, RT_GLIBC_2_3_3);
RT_GLIBC_PIN(pthread_key_create, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_key_delete, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_getspecific, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_setspecific, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_once, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_mutexattr_init, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_mutexattr_destroy, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_mutexattr_settype, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_create, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_join, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_detach, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_getattr_np, RT_GLIBC_BASE);
RT_GLIBC_PIN(pthread_attr_getstack, RT_GLIBC_BASE);
#undef RT_GLIBC_PIN
#endif

#endif
#endif /* TVMFFI_RT_GLIBC_FLOOR_H_ */
