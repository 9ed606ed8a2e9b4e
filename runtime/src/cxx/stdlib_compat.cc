// What the official runtime provides of the C++ standard library to the
// libraries it hosts, on a system whose libstdc++ is older than theirs.
//
// The official libtvm_ffi.so of every release carries parts of a GCC 13/14
// libstdc++ and constructs std::ios_base::Init when it is loaded. Libraries
// built with GCC 13+ headers (the official test libraries of 0.1.0..0.1.12,
// and any library a user builds with a recent compiler) rely on that: since
// GCC 13, <iostream> no longer puts an ios_base::Init object in every
// translation unit, the library that defines std::cout does it. With an older
// libstdc++ nobody does, and the first write to std::cout touches an
// unconstructed stream (SIGSEGV). Libraries built with GCC 14+ also import
// __cxa_call_terminate without a version; the official runtime exports it, so
// they load even with RTLD_NOW. (Their std::ios_base_library_init import is
// only a .globl, never relocated: it needs no definition, and nothing of the
// standard library's own namespace is exported.)
#include <exception>
#include <ios>

#include <cxxabi.h>

namespace {
// Constructing one is reference-counted and idempotent: harmless where the
// standard library already did it, the fix where it did not.
const std::ios_base::Init ios_streams_ready;
}  // namespace

// GCC 14+: called when an exception leaves a noexcept function; the
// exception counts as caught (std::current_exception sees it), then terminate.
extern "C" __attribute__((visibility("default"), weak, noreturn)) void __cxa_call_terminate(
    void* exception) noexcept {
  if (exception != nullptr) __cxxabiv1::__cxa_begin_catch(exception);
  std::terminate();
}
