// The preload's definitions of the CUDA driver's allocation family.
//
// Every hook forwards to the driver with the caller's arguments and returns the driver's
// status unchanged. Around that call it tells the tracker what happened:
//   - an allocation is recorded after the driver succeeded, and only if the out-parameter
//     the driver filled is non-NULL (a NULL one is never read);
//   - a free is recorded before the driver call, so no other thread can be handed the same
//     address and record it while the old record still exists. An unknown pointer, NULL,
//     or a double free is forwarded untouched: the driver decides, as without leaseguard.
//     The one free that is not forwarded is the late free of memory leaseguard reclaimed
//     when its lease ended (policy reclaim): it succeeds without reaching the driver;
//   - a context destroy is marked before the driver call and recorded after the driver
//     succeeded: what was recorded before the mark went with the context.
// errno is preserved across leaseguard's own work.
#include "hook_support.h"

using leaseguard::AllocationEvent;
using leaseguard::Api;
using leaseguard::ContextDestroyMark;
using leaseguard::Kind;
using leaseguard::Tracker;
using namespace leaseguard::interpose;

namespace leaseguard::interpose {
thread_local int ReentryGuard::t_depth __attribute__((tls_model("initial-exec"))) = 0;
}

namespace {

// Taken before the driver call: see Tracker::before_context_destroy.
ContextDestroyMark mark_context_destroy(Tracker *tracker) {
  return tracker != nullptr ? tracker->before_context_destroy() : ContextDestroyMark{};
}

void record_context_destroyed(Tracker *tracker, Api api, CUcontext context, int32_t device,
                              const ContextDestroyMark &mark) {
  ErrnoKeeper keep;
  tracker->on_context_destroyed(api, reinterpret_cast<uint64_t>(context), device, mark);
}

}  // namespace

#define LG_DEVICE_ALLOC_HOOK(name, kind)                                                       \
  LG_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize) {                                \
    LG_HOOK_PROLOGUE(name);                                                                    \
    CUresult status = real_fn(dptr, bytesize);                                                 \
    if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr)                       \
      record_alloc(tracker, Api::name, kind, *dptr, bytesize, reinterpret_cast<void *>(real_fn)); \
    return status;                                                                             \
  }

LG_DEVICE_ALLOC_HOOK(cuMemAlloc_v2, Kind::Device)

LG_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  LG_HOOK_PROLOGUE(cuMemAlloc);
  CUresult status = real_fn(dptr, bytesize);
  if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr)
    record_alloc(tracker, Api::cuMemAlloc, Kind::Device, *dptr, bytesize, reinterpret_cast<void *>(real_fn));
  return status;
}

LG_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                   unsigned int Height, unsigned int ElementSizeBytes) {
  LG_HOOK_PROLOGUE(cuMemAllocPitch);
  CUresult status = real_fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr && pPitch != nullptr)
    record_alloc(tracker, Api::cuMemAllocPitch, Kind::Pitched, *dptr, uint64_t{*pPitch} * Height,
                 reinterpret_cast<void *>(real_fn));
  return status;
}

LG_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                      unsigned int ElementSizeBytes) {
  LG_HOOK_PROLOGUE(cuMemAllocPitch_v2);
  CUresult status = real_fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr && pPitch != nullptr)
    record_alloc(tracker, Api::cuMemAllocPitch_v2, Kind::Pitched, *dptr, uint64_t{*pPitch} * Height,
                 reinterpret_cast<void *>(real_fn));
  return status;
}

LG_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  LG_HOOK_PROLOGUE(cuMemAllocManaged);
  CUresult status = real_fn(dptr, bytesize, flags);
  if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr)
    record_alloc(tracker, Api::cuMemAllocManaged, Kind::Managed, *dptr, bytesize, reinterpret_cast<void *>(real_fn));
  return status;
}

LG_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize) {
  LG_HOOK_PROLOGUE(cuMemAllocHost);
  CUresult status = real_fn(pp, bytesize);
  if (tracker != nullptr && status == CUDA_SUCCESS && pp != nullptr)
    record_alloc(tracker, Api::cuMemAllocHost, Kind::Host, reinterpret_cast<uintptr_t>(*pp), bytesize,
                 reinterpret_cast<void *>(real_fn));
  return status;
}

LG_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  LG_HOOK_PROLOGUE(cuMemAllocHost_v2);
  CUresult status = real_fn(pp, bytesize);
  if (tracker != nullptr && status == CUDA_SUCCESS && pp != nullptr)
    record_alloc(tracker, Api::cuMemAllocHost_v2, Kind::Host, reinterpret_cast<uintptr_t>(*pp), bytesize,
                 reinterpret_cast<void *>(real_fn));
  return status;
}

LG_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  LG_HOOK_PROLOGUE(cuMemHostAlloc);
  CUresult status = real_fn(pp, bytesize, Flags);
  if (tracker != nullptr && status == CUDA_SUCCESS && pp != nullptr)
    record_alloc(tracker, Api::cuMemHostAlloc, Kind::Host, reinterpret_cast<uintptr_t>(*pp), bytesize,
                 reinterpret_cast<void *>(real_fn));
  return status;
}

#define LG_ASYNC_ALLOC_HOOK(name)                                                                  \
  LG_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {                  \
    LG_HOOK_PROLOGUE(name);                                                                        \
    CUresult status = real_fn(dptr, bytesize, hStream);                                            \
    if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr)                           \
      record_alloc(tracker, Api::name, Kind::Async, *dptr, bytesize, reinterpret_cast<void *>(real_fn)); \
    return status;                                                                                 \
  }
LG_ASYNC_ALLOC_HOOK(cuMemAllocAsync)
LG_ASYNC_ALLOC_HOOK(cuMemAllocAsync_ptsz)

#define LG_POOL_ALLOC_HOOK(name)                                                                   \
  LG_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) { \
    LG_HOOK_PROLOGUE(name);                                                                        \
    CUresult status = real_fn(dptr, bytesize, pool, hStream);                                      \
    if (tracker != nullptr && status == CUDA_SUCCESS && dptr != nullptr)                           \
      record_alloc(tracker, Api::name, Kind::Async, *dptr, bytesize, reinterpret_cast<void *>(real_fn)); \
    return status;                                                                                 \
  }
LG_POOL_ALLOC_HOOK(cuMemAllocFromPoolAsync)
LG_POOL_ALLOC_HOOK(cuMemAllocFromPoolAsync_ptsz)

LG_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  LG_HOOK_PROLOGUE(cuMemFree);
  if (tracker != nullptr && dptr != 0 && already_reclaimed(tracker, Api::cuMemFree, dptr)) return CUDA_SUCCESS;
  return real_fn(dptr);
}

LG_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  LG_HOOK_PROLOGUE(cuMemFree_v2);
  if (tracker != nullptr && dptr != 0 && already_reclaimed(tracker, Api::cuMemFree_v2, dptr)) return CUDA_SUCCESS;
  return real_fn(dptr);
}

LG_EXPORT CUresult cuMemFreeHost(void *p) {
  LG_HOOK_PROLOGUE(cuMemFreeHost);
  if (tracker != nullptr && p != nullptr &&
      already_reclaimed(tracker, Api::cuMemFreeHost, reinterpret_cast<uintptr_t>(p)))
    return CUDA_SUCCESS;
  return real_fn(p);
}

#define LG_ASYNC_FREE_HOOK(name)                                              \
  LG_EXPORT CUresult name(CUdeviceptr dptr, CUstream hStream) {               \
    LG_HOOK_PROLOGUE(name);                                                   \
    if (tracker != nullptr && dptr != 0 && already_reclaimed(tracker, Api::name, dptr)) \
      return CUDA_SUCCESS;                                                    \
    return real_fn(dptr, hStream);                                            \
  }
LG_ASYNC_FREE_HOOK(cuMemFreeAsync)
LG_ASYNC_FREE_HOOK(cuMemFreeAsync_ptsz)

#define LG_CTX_DESTROY_HOOK(name)                                                   \
  LG_EXPORT CUresult name(CUcontext ctx) {                                          \
    LG_HOOK_PROLOGUE(name);                                                         \
    const ContextDestroyMark mark = mark_context_destroy(tracker);                  \
    context_handles_may_be_reused();                                                \
    CUresult status = real_fn(ctx);                                                 \
    context_handles_may_be_reused();                                                \
    if (tracker != nullptr && status == CUDA_SUCCESS && ctx != nullptr)             \
      record_context_destroyed(tracker, Api::name, ctx, -1, mark);                  \
    return status;                                                                  \
  }
LG_CTX_DESTROY_HOOK(cuCtxDestroy)
LG_CTX_DESTROY_HOOK(cuCtxDestroy_v2)

// Releasing the last reference destroys the primary context and its memory; whether this
// release was the last one is asked of the driver afterwards (primary_context_destroyed: by
// then another thread may have made it again).
#define LG_PRIMARY_RELEASE_HOOK(name)                                                         \
  LG_EXPORT CUresult name(CUdevice dev) {                                                     \
    LG_HOOK_PROLOGUE(name);                                                                   \
    void *anchor = reinterpret_cast<void *>(real_fn);                                         \
    CUcontext primary = nullptr;                                                              \
    uint64_t primary_id = 0;                                                                  \
    if (tracker != nullptr) {                                                                 \
      ErrnoKeeper keep;                                                                       \
      primary = active_primary_context(anchor, dev);                                          \
      primary_id = context_id(anchor, primary);                                               \
    }                                                                                         \
    const ContextDestroyMark mark = mark_context_destroy(primary != nullptr ? tracker : nullptr); \
    context_handles_may_be_reused();                                                          \
    CUresult status = real_fn(dev);                                                           \
    context_handles_may_be_reused();                                                          \
    if (tracker != nullptr && status == CUDA_SUCCESS && primary != nullptr) {                 \
      ErrnoKeeper keep;                                                                       \
      if (primary_context_destroyed(anchor, dev, primary, primary_id))                        \
        record_context_destroyed(tracker, Api::name, primary, dev, mark);                     \
    }                                                                                         \
    return status;                                                                            \
  }
LG_PRIMARY_RELEASE_HOOK(cuDevicePrimaryCtxRelease)
LG_PRIMARY_RELEASE_HOOK(cuDevicePrimaryCtxRelease_v2)

#define LG_PRIMARY_RESET_HOOK(name)                                                        \
  LG_EXPORT CUresult name(CUdevice dev) {                                                  \
    LG_HOOK_PROLOGUE(name);                                                                \
    CUcontext primary = nullptr;                                                           \
    if (tracker != nullptr) {                                                              \
      ErrnoKeeper keep;                                                                    \
      primary = active_primary_context(reinterpret_cast<void *>(real_fn), dev);            \
    }                                                                                      \
    const ContextDestroyMark mark = mark_context_destroy(primary != nullptr ? tracker : nullptr); \
    context_handles_may_be_reused();                                                       \
    CUresult status = real_fn(dev);                                                        \
    context_handles_may_be_reused();                                                       \
    if (tracker != nullptr && status == CUDA_SUCCESS && primary != nullptr)                \
      record_context_destroyed(tracker, Api::name, primary, dev, mark);                    \
    return status;                                                                         \
  }
LG_PRIMARY_RESET_HOOK(cuDevicePrimaryCtxReset)
LG_PRIMARY_RESET_HOOK(cuDevicePrimaryCtxReset_v2)
