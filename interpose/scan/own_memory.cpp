// leaseguard's own heap memory is handed out cleared.
//
// The reachability scan takes every host block that leaseguard's globals reach as its own,
// and never enters one from the program's side (docs/how-it-works.md, "What is left out").
// Bytes its containers never wrote (a vector's spare room, padding) would otherwise hold what
// a block the program freed held there: stale pointers into the program's live heap, which
// made the program's blocks leaseguard's and the device memory only they held read lost (a
// Python program's object graph, in one run of seven, through the spare room of the module
// map's vector).
//
// So the preload's own operator new, bound within it (the exports map keeps it local, and
// the program's operator new is untouched), takes memory from the definition every other
// library uses (the first in the global scope: libstdc++'s, the program's own, or a
// sanitizer's runtime's), and clears it. Deletes are not defined: that definition's take
// memory from either, as when a std::string made inside libstdc++ is freed by code inlined
// here, and a sanitizer sees every block go back the way it came.
#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <new>

#include "heap_tracker.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

using New = void *(*)(std::size_t);
using AlignedNew = void *(*)(std::size_t, std::align_val_t);
using NothrowNew = void *(*)(std::size_t, const std::nothrow_t &) noexcept;
using AlignedNothrowNew = void *(*)(std::size_t, std::align_val_t, const std::nothrow_t &) noexcept;

void *cleared(void *memory, std::size_t bytes) noexcept {
  if (memory == nullptr) return nullptr;
  std::memset(memory, 0, bytes);
  heap::mark_own(memory);
  return memory;
}

}  // namespace
}  // namespace leaseguard::interpose

using leaseguard::interpose::AlignedNew;
using leaseguard::interpose::AlignedNothrowNew;
using leaseguard::interpose::cleared;
using leaseguard::interpose::New;
using leaseguard::interpose::NothrowNew;
using leaseguard::interpose::real_symbol;

void *operator new(std::size_t bytes) {
  static const New next = real_symbol<New>(RTLD_DEFAULT, "_Znwm");
  return cleared(next(bytes), bytes);
}

void *operator new[](std::size_t bytes) {
  static const New next = real_symbol<New>(RTLD_DEFAULT, "_Znam");
  return cleared(next(bytes), bytes);
}

void *operator new(std::size_t bytes, std::align_val_t alignment) {
  static const AlignedNew next = real_symbol<AlignedNew>(RTLD_DEFAULT, "_ZnwmSt11align_val_t");
  return cleared(next(bytes, alignment), bytes);
}

void *operator new[](std::size_t bytes, std::align_val_t alignment) {
  static const AlignedNew next = real_symbol<AlignedNew>(RTLD_DEFAULT, "_ZnamSt11align_val_t");
  return cleared(next(bytes, alignment), bytes);
}

void *operator new(std::size_t bytes, const std::nothrow_t &tag) noexcept {
  static const NothrowNew next = real_symbol<NothrowNew>(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
  return cleared(next(bytes, tag), bytes);
}

void *operator new[](std::size_t bytes, const std::nothrow_t &tag) noexcept {
  static const NothrowNew next = real_symbol<NothrowNew>(RTLD_DEFAULT, "_ZnamRKSt9nothrow_t");
  return cleared(next(bytes, tag), bytes);
}

void *operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t &tag) noexcept {
  static const AlignedNothrowNew next =
      real_symbol<AlignedNothrowNew>(RTLD_DEFAULT, "_ZnwmSt11align_val_tRKSt9nothrow_t");
  return cleared(next(bytes, alignment, tag), bytes);
}

void *operator new[](std::size_t bytes, std::align_val_t alignment, const std::nothrow_t &tag) noexcept {
  static const AlignedNothrowNew next =
      real_symbol<AlignedNothrowNew>(RTLD_DEFAULT, "_ZnamSt11align_val_tRKSt9nothrow_t");
  return cleared(next(bytes, alignment, tag), bytes);
}
