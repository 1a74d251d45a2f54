// The preload's definitions of the CUDA driver's memory entry points and context ends.
//
// Each hook passes its arguments to the template for its shape (hook_support.h says what
// every hook does around the driver's call). A context's end is marked before the driver
// call and recorded after the driver succeeded: what was recorded before the mark went with
// the context.
#include "hook_support.h"

using leaseguard::Api;
using leaseguard::ContextDestroyMark;
using leaseguard::Tracker;
using namespace leaseguard::interpose;

namespace leaseguard::interpose {
thread_local int ReentryGuard::t_depth __attribute__((tls_model("initial-exec"))) = 0;
thread_local uintptr_t ReentryGuard::t_outermost_frame __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace leaseguard::interpose

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

// A context destroy: every allocation the context held goes with it.
template <Api A>
LG_ALWAYS_INLINE CUresult context_destroy(CUcontext ctx) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  const ContextDestroyMark mark = mark_context_destroy(tracker);
  context_handles_may_be_reused();
  const CUresult status = real_fn(ctx);
  context_handles_may_be_reused();
  if (tracker != nullptr && status == CUDA_SUCCESS && ctx != nullptr)
    record_context_destroyed(tracker, A, ctx, -1, mark);
  return status;
}

// Releasing the last reference destroys the primary context and its memory; whether this
// release was the last one is asked of the driver afterwards (primary_context_destroyed: by
// then another thread may have made it again).
template <Api A>
LG_ALWAYS_INLINE CUresult primary_release(CUdevice dev) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  void *anchor = reinterpret_cast<void *>(real_fn);
  CUcontext primary = nullptr;
  uint64_t primary_id = 0;
  if (tracker != nullptr) {
    ErrnoKeeper keep;
    primary = active_primary_context(anchor, dev, real_fn);
    primary_id = context_id(anchor, primary);
  }
  const ContextDestroyMark mark = mark_context_destroy(primary != nullptr ? tracker : nullptr);
  context_handles_may_be_reused();
  const CUresult status = real_fn(dev);
  context_handles_may_be_reused();
  if (tracker != nullptr && status == CUDA_SUCCESS && primary != nullptr) {
    ErrnoKeeper keep;
    if (primary_context_destroyed(anchor, dev, primary, primary_id))
      record_context_destroyed(tracker, A, primary, dev, mark);
  }
  return status;
}

// A reset destroys the primary context, whatever its references, if it is active.
template <Api A>
LG_ALWAYS_INLINE CUresult primary_reset(CUdevice dev) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  CUcontext primary = nullptr;
  if (tracker != nullptr) {
    ErrnoKeeper keep;
    // The release as the program resolved it, else the driver's own: the CUDA runtime
    // resolves only the variant it calls.
    void *anchor = reinterpret_cast<void *>(real_fn);
    void *release = forwarded_function(Api::cuDevicePrimaryCtxRelease_v2);
    if (release == nullptr)
      release = driver_symbol(anchor, entry_point(Api::cuDevicePrimaryCtxRelease_v2)->name.data());
    primary = active_primary_context(anchor, dev, reinterpret_cast<lg_pfn_cuDevicePrimaryCtxRelease_v2>(release));
  }
  const ContextDestroyMark mark = mark_context_destroy(primary != nullptr ? tracker : nullptr);
  context_handles_may_be_reused();
  const CUresult status = real_fn(dev);
  context_handles_may_be_reused();
  if (tracker != nullptr && status == CUDA_SUCCESS && primary != nullptr)
    record_context_destroyed(tracker, A, primary, dev, mark);
  return status;
}

// Pitched memory: the size is the pitch the driver chose times the rows.
template <Api A, typename Pointer, typename Size, typename Element>
LG_ALWAYS_INLINE CUresult pitched(Pointer *dptr, Size *pitch, Size width, Size height, Element element_bytes) {
  return allocating_call<A>(
      [&] { return dptr != nullptr && pitch != nullptr ? made(*dptr, uint64_t{*pitch} * height) : Made{}; }, dptr,
      pitch, width, height, element_bytes);
}

}  // namespace

// --- Device, managed, pinned host and stream-ordered memory ----------------------------------

LG_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  return allocation<Api::cuMemAlloc>(dptr, bytesize);
}
LG_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  return allocation<Api::cuMemAlloc_v2>(dptr, bytesize);
}
LG_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                   unsigned int Height, unsigned int ElementSizeBytes) {
  return pitched<Api::cuMemAllocPitch>(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}
LG_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                      unsigned int ElementSizeBytes) {
  return pitched<Api::cuMemAllocPitch_v2>(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}
LG_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  return allocation<Api::cuMemAllocManaged>(dptr, bytesize, flags);
}
LG_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize) {
  return allocation<Api::cuMemAllocHost>(pp, bytesize);
}
LG_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  return allocation<Api::cuMemAllocHost_v2>(pp, bytesize);
}
LG_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  return allocation<Api::cuMemHostAlloc>(pp, bytesize, Flags);
}
LG_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return allocation<Api::cuMemAllocAsync>(dptr, bytesize, hStream);
}
LG_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return allocation<Api::cuMemAllocAsync_ptsz>(dptr, bytesize, hStream);
}
LG_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return allocation<Api::cuMemAllocFromPoolAsync>(dptr, bytesize, pool, hStream);
}
LG_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                CUstream hStream) {
  return allocation<Api::cuMemAllocFromPoolAsync_ptsz>(dptr, bytesize, pool, hStream);
}

LG_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) { return release<Api::cuMemFree>(dptr); }
LG_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { return release<Api::cuMemFree_v2>(dptr); }
LG_EXPORT CUresult cuMemFreeHost(void *p) { return release<Api::cuMemFreeHost>(p); }
LG_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return release<Api::cuMemFreeAsync>(dptr, hStream);
}
LG_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return release<Api::cuMemFreeAsync_ptsz>(dptr, hStream);
}

// Changes the calling thread's current context: the context kept for the thread is asked
// for again at its next allocation, whatever the driver answered (a failed push may still
// have changed nothing, or something).
template <Api A, typename... Args>
LG_ALWAYS_INLINE CUresult context_change(Args... args) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult status = real_fn(args...);
  current_context_changed();
  return status;
}

// --- The ends of contexts --------------------------------------------------------------------

LG_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return context_destroy<Api::cuCtxDestroy>(ctx); }
LG_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) { return context_destroy<Api::cuCtxDestroy_v2>(ctx); }
LG_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return primary_release<Api::cuDevicePrimaryCtxRelease>(dev);
}
LG_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return primary_release<Api::cuDevicePrimaryCtxRelease_v2>(dev);
}
LG_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return primary_reset<Api::cuDevicePrimaryCtxReset>(dev); }
LG_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return primary_reset<Api::cuDevicePrimaryCtxReset_v2>(dev);
}

// --- Changes of the calling thread's current context -------------------------------------------

LG_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice_v1 dev) {
  return context_change<Api::cuCtxCreate>(pctx, flags, dev);
}
LG_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  return context_change<Api::cuCtxCreate_v2>(pctx, flags, dev);
}
LG_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
                                  CUdevice dev) {
  return context_change<Api::cuCtxCreate_v3>(pctx, paramsArray, numParams, flags, dev);
}
LG_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                  CUdevice dev) {
  return context_change<Api::cuCtxCreate_v4>(pctx, ctxCreateParams, flags, dev);
}
LG_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) { return context_change<Api::cuCtxSetCurrent>(ctx); }
LG_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { return context_change<Api::cuCtxPushCurrent>(ctx); }
LG_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return context_change<Api::cuCtxPushCurrent_v2>(ctx); }
LG_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx) { return context_change<Api::cuCtxPopCurrent>(pctx); }
LG_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) { return context_change<Api::cuCtxPopCurrent_v2>(pctx); }
