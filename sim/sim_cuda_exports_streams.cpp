// The simulated driver's entry points for streams, events and stream-ordered copies and
// memsets: what the CUDA runtime calls for cudaMemcpyAsync, cudaMemsetAsync, cudaEvent* and
// cudaStream*. The simulator runs every operation when it is issued, on the calling thread,
// so a stream is always idle, an event is complete when it is recorded, and a host function
// or callback enqueued on a stream runs before the enqueueing call returns.
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "lg_cuda.h"
#include "sim_device.h"
#include "sim_entry.h"

using leaseguard::sim::SimDriver;
using leaseguard::sim::SimStream;

namespace {

SimDriver &driver() { return SimDriver::instance(); }

CUresult check_context() {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return driver().sticky_error();  // a faulted kernel's context copies nothing
}

// One side of a copy or memset: device memory must lie inside one live allocation; with a
// unified address (cuMemcpy, cuMemcpyAsync) a pointer outside every allocation is host memory.
CUresult check_side(uint64_t address, size_t bytes, bool may_be_host) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (address == 0) return CUDA_ERROR_INVALID_VALUE;
  if (driver().range_valid(address, bytes)) return CUDA_SUCCESS;
  if (!may_be_host) return CUDA_ERROR_INVALID_VALUE;
  uint64_t base = 0;
  size_t size = 0;
  // Inside an allocation but running past its end: refused, as the driver refuses it.
  return driver().address_range(address, &base, &size) == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult copy(uint64_t dst, uint64_t src, size_t bytes, bool dst_host_ok, bool src_host_ok) {
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  if (CUresult status = check_side(dst, bytes, dst_host_ok); status != CUDA_SUCCESS) return status;
  if (CUresult status = check_side(src, bytes, src_host_ok); status != CUDA_SUCCESS) return status;
  if (bytes != 0) std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult fill(CUdeviceptr dst, T value, size_t count) {
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  if (count > SIZE_MAX / sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_side(dst, count * sizeof(T), false); status != CUDA_SUCCESS) return status;
  auto *out = reinterpret_cast<T *>(dst);
  for (size_t i = 0; i < count; ++i) out[i] = value;
  return CUDA_SUCCESS;
}

uint64_t host(const void *pointer) { return reinterpret_cast<uint64_t>(pointer); }

// An event: when it was last recorded (monotonic nanoseconds), 0 if never.
struct SimEvent {
  unsigned flags = 0;
  std::atomic<int64_t> recorded_ns{0};
};
constexpr unsigned kEventDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING

int64_t now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

CUresult record(CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  reinterpret_cast<SimEvent *>(event)->recorded_ns.store(now_ns(), std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult elapsed(float *milliseconds, CUevent start, CUevent end) {
  if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto *first = reinterpret_cast<SimEvent *>(start);
  auto *last = reinterpret_cast<SimEvent *>(end);
  if (((first->flags | last->flags) & kEventDisableTiming) != 0) return CUDA_ERROR_INVALID_HANDLE;
  const int64_t from = first->recorded_ns.load(std::memory_order_acquire);
  const int64_t to = last->recorded_ns.load(std::memory_order_acquire);
  if (from == 0 || to == 0) return CUDA_ERROR_INVALID_HANDLE;
  *milliseconds = static_cast<float>(static_cast<double>(to - from) / 1e6);
  return CUDA_SUCCESS;
}

// Streams hand out their own address as their id; the legacy (0) and per-thread (2) default
// streams answer their handle values.
unsigned long long stream_id(CUstream stream) { return reinterpret_cast<uintptr_t>(stream); }

SimStream *created(CUstream stream) {
  const auto value = reinterpret_cast<uintptr_t>(stream);
  return value > 2 ? reinterpret_cast<SimStream *>(stream) : nullptr;  // 0, 1, 2: the default streams
}

}  // namespace

// ---- Stream-ordered copies and memsets (and cuMemcpy, the unified-address copy) ----

#define LG_SIM_UNIFIED_COPY(name, stream_parameter)                                                  \
  LG_SIM_EXPORT CUresult name(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount stream_parameter) { \
    LG_SIM_ENTRY(name);                                                                              \
    return copy(dst, src, ByteCount, true, true);                                                    \
  }
#define LG_SIM_STREAM_PARAMETER , CUstream
LG_SIM_UNIFIED_COPY(cuMemcpy, )
LG_SIM_UNIFIED_COPY(cuMemcpy_ptds, )
LG_SIM_UNIFIED_COPY(cuMemcpyAsync, LG_SIM_STREAM_PARAMETER)
LG_SIM_UNIFIED_COPY(cuMemcpyAsync_ptsz, LG_SIM_STREAM_PARAMETER)

#define LG_SIM_ASYNC_COPIES(suffix)                                                                                   \
  LG_SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2##suffix(CUdeviceptr dst, const void *src, size_t ByteCount, CUstream) { \
    LG_SIM_ENTRY(cuMemcpyHtoDAsync_v2##suffix);                                                                       \
    return copy(dst, host(src), ByteCount, false, true);                                                              \
  }                                                                                                                   \
  LG_SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2##suffix(void *dst, CUdeviceptr src, size_t ByteCount, CUstream) {       \
    LG_SIM_ENTRY(cuMemcpyDtoHAsync_v2##suffix);                                                                       \
    return copy(host(dst), src, ByteCount, true, false);                                                              \
  }                                                                                                                   \
  LG_SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2##suffix(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream) { \
    LG_SIM_ENTRY(cuMemcpyDtoDAsync_v2##suffix);                                                                       \
    return copy(dst, src, ByteCount, false, false);                                                                   \
  }                                                                                                                   \
  LG_SIM_EXPORT CUresult cuMemsetD8Async##suffix(CUdeviceptr dst, unsigned char value, size_t N, CUstream) {          \
    LG_SIM_ENTRY(cuMemsetD8Async##suffix);                                                                            \
    return fill(dst, value, N);                                                                                       \
  }                                                                                                                   \
  LG_SIM_EXPORT CUresult cuMemsetD16Async##suffix(CUdeviceptr dst, unsigned short value, size_t N, CUstream) {        \
    LG_SIM_ENTRY(cuMemsetD16Async##suffix);                                                                           \
    return fill(dst, value, N);                                                                                       \
  }                                                                                                                   \
  LG_SIM_EXPORT CUresult cuMemsetD32Async##suffix(CUdeviceptr dst, unsigned int value, size_t N, CUstream) {          \
    LG_SIM_ENTRY(cuMemsetD32Async##suffix);                                                                           \
    return fill(dst, value, N);                                                                                       \
  }
LG_SIM_ASYNC_COPIES()
LG_SIM_ASYNC_COPIES(_ptsz)

LG_SIM_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t N) {
  LG_SIM_ENTRY(cuMemsetD16_v2);
  return fill(dst, value, N);
}

// ---- 2D and 3D copies (cudaMemcpy2D, cudaMemcpy3D and their async forms) ----

namespace {

// One side of a 3D copy: where its rows are. Array memory is not simulated.
struct Side {
  uint64_t base = 0;
  size_t pitch = 0;
  size_t height = 0;  // rows in a slice
  bool may_be_host = false;
};

CUresult side_of(CUmemorytype type, const void *host_pointer, CUdeviceptr device, size_t x, size_t y, size_t z,
                 size_t pitch, size_t height, Side *side) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      side->base = host(host_pointer);
      side->may_be_host = true;
      break;
    case CU_MEMORYTYPE_DEVICE: side->base = device; break;
    case CU_MEMORYTYPE_UNIFIED:
      side->base = device;
      side->may_be_host = true;
      break;
    default: return CUDA_ERROR_NOT_SUPPORTED;  // CU_MEMORYTYPE_ARRAY
  }
  side->pitch = pitch;
  side->height = height;
  side->base += (z * height + y) * pitch + x;
  return CUDA_SUCCESS;
}

CUresult copy_3d(const Side &dst, const Side &src, size_t width, size_t height, size_t depth) {
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  if (width == 0 || height == 0 || depth == 0) return CUDA_SUCCESS;
  if ((height > 1 || depth > 1) && (width > dst.pitch || width > src.pitch)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t z = 0; z < depth; ++z) {
    for (size_t y = 0; y < height; ++y) {
      const uint64_t to = dst.base + (z * dst.height + y) * dst.pitch;
      const uint64_t from = src.base + (z * src.height + y) * src.pitch;
      if (CUresult status = copy(to, from, width, dst.may_be_host, src.may_be_host); status != CUDA_SUCCESS)
        return status;
    }
  }
  return CUDA_SUCCESS;
}

CUresult copy_2d(const CUDA_MEMCPY2D *c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Side src, dst;
  if (CUresult status =
          side_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, 0, c->srcPitch, 0, &src);
      status != CUDA_SUCCESS)
    return status;
  if (CUresult status =
          side_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, 0, c->dstPitch, 0, &dst);
      status != CUDA_SUCCESS)
    return status;
  return copy_3d(dst, src, c->WidthInBytes, c->Height, 1);
}

CUresult copy_3d(const CUDA_MEMCPY3D *c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcLOD != 0 || c->dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
  Side src, dst;
  if (CUresult status = side_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ,
                                c->srcPitch, c->srcHeight, &src);
      status != CUDA_SUCCESS)
    return status;
  if (CUresult status = side_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ,
                                c->dstPitch, c->dstHeight, &dst);
      status != CUDA_SUCCESS)
    return status;
  if (c->Depth > 1 && (c->Height > src.height || c->Height > dst.height)) return CUDA_ERROR_INVALID_VALUE;
  return copy_3d(dst, src, c->WidthInBytes, c->Height, c->Depth);
}

}  // namespace

#define LG_SIM_COPY_2D_3D(name, copier, type, ...)             \
  LG_SIM_EXPORT CUresult name(const type *pCopy __VA_ARGS__) { \
    LG_SIM_ENTRY(name);                                        \
    return copier(pCopy);                                      \
  }
LG_SIM_COPY_2D_3D(cuMemcpy2D_v2, copy_2d, CUDA_MEMCPY2D)
LG_SIM_COPY_2D_3D(cuMemcpy2D_v2_ptds, copy_2d, CUDA_MEMCPY2D)
LG_SIM_COPY_2D_3D(cuMemcpy2DUnaligned_v2, copy_2d, CUDA_MEMCPY2D)
LG_SIM_COPY_2D_3D(cuMemcpy2DUnaligned_v2_ptds, copy_2d, CUDA_MEMCPY2D)
LG_SIM_COPY_2D_3D(cuMemcpy2DAsync_v2, copy_2d, CUDA_MEMCPY2D, , CUstream)
LG_SIM_COPY_2D_3D(cuMemcpy2DAsync_v2_ptsz, copy_2d, CUDA_MEMCPY2D, , CUstream)
LG_SIM_COPY_2D_3D(cuMemcpy3D_v2, copy_3d, CUDA_MEMCPY3D)
LG_SIM_COPY_2D_3D(cuMemcpy3D_v2_ptds, copy_3d, CUDA_MEMCPY3D)
LG_SIM_COPY_2D_3D(cuMemcpy3DAsync_v2, copy_3d, CUDA_MEMCPY3D, , CUstream)
LG_SIM_COPY_2D_3D(cuMemcpy3DAsync_v2_ptsz, copy_3d, CUDA_MEMCPY3D, , CUstream)

// ---- Streams ----

LG_SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
  LG_SIM_ENTRY(cuStreamCreateWithPriority);
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  // Clamped into the context's range, 0 (least) to -5 (greatest), as the driver clamps it.
  const int clamped = priority > 0 ? 0 : priority < -5 ? -5 : priority;
  *phStream = reinterpret_cast<CUstream>(new SimStream{flags, clamped});
  return CUDA_SUCCESS;
}

#define LG_SIM_STREAM_QUERIES(suffix)                                                                        \
  LG_SIM_EXPORT CUresult cuStreamQuery##suffix(CUstream) {                                                   \
    LG_SIM_ENTRY(cuStreamQuery##suffix);                                                                     \
    return check_context();                                                                                  \
  }                                                                                                          \
  LG_SIM_EXPORT CUresult cuStreamWaitEvent##suffix(CUstream, CUevent event, unsigned) {                      \
    LG_SIM_ENTRY(cuStreamWaitEvent##suffix);                                                                 \
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;                                                  \
    return check_context();                                                                                  \
  }                                                                                                          \
  LG_SIM_EXPORT CUresult cuStreamGetFlags##suffix(CUstream stream, unsigned *flags) {                        \
    LG_SIM_ENTRY(cuStreamGetFlags##suffix);                                                                  \
    if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;                                                   \
    const SimStream *made = created(stream);                                                                 \
    *flags = made != nullptr ? made->flags : 0;                                                              \
    return CUDA_SUCCESS;                                                                                     \
  }                                                                                                          \
  LG_SIM_EXPORT CUresult cuStreamGetPriority##suffix(CUstream stream, int *priority) {                       \
    LG_SIM_ENTRY(cuStreamGetPriority##suffix);                                                               \
    if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;                                                \
    const SimStream *made = created(stream);                                                                 \
    *priority = made != nullptr ? made->priority : 0;                                                        \
    return CUDA_SUCCESS;                                                                                     \
  }                                                                                                          \
  LG_SIM_EXPORT CUresult cuStreamGetId##suffix(CUstream stream, unsigned long long *id) {                    \
    LG_SIM_ENTRY(cuStreamGetId##suffix);                                                                     \
    if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;                                                      \
    *id = stream_id(stream);                                                                                 \
    return CUDA_SUCCESS;                                                                                     \
  }                                                                                                          \
  LG_SIM_EXPORT CUresult cuLaunchHostFunc##suffix(CUstream, CUhostFn fn, void *data) {                       \
    LG_SIM_ENTRY(cuLaunchHostFunc##suffix);                                                                  \
    if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;                                                      \
    if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;                            \
    fn(data);                                                                                                \
    return CUDA_SUCCESS;                                                                                     \
  }                                                                                                          \
  LG_SIM_EXPORT CUresult cuStreamAddCallback##suffix(CUstream stream, CUstreamCallback callback, void *data, \
                                                     unsigned flags) {                                       \
    LG_SIM_ENTRY(cuStreamAddCallback##suffix);                                                               \
    if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;                                  \
    if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;                            \
    callback(stream, CUDA_SUCCESS, data);                                                                    \
    return CUDA_SUCCESS;                                                                                     \
  }
LG_SIM_STREAM_QUERIES()
LG_SIM_STREAM_QUERIES(_ptsz)

LG_SIM_EXPORT CUresult cuStreamGetCtx(CUstream, CUcontext *pctx) {
  LG_SIM_ENTRY(cuStreamGetCtx);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  *pctx = driver().current();
  return CUDA_SUCCESS;
}

// ---- Events ----

LG_SIM_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  LG_SIM_ENTRY(cuEventCreate);
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  auto *event = new SimEvent;
  event->flags = Flags;
  *phEvent = reinterpret_cast<CUevent>(event);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  LG_SIM_ENTRY(cuEventDestroy_v2);
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<SimEvent *>(hEvent);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream) {
  LG_SIM_ENTRY(cuEventRecord);
  return record(hEvent);
}

LG_SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream) {
  LG_SIM_ENTRY(cuEventRecord_ptsz);
  return record(hEvent);
}

LG_SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream, unsigned int) {
  LG_SIM_ENTRY(cuEventRecordWithFlags);
  return record(hEvent);
}

LG_SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream, unsigned int) {
  LG_SIM_ENTRY(cuEventRecordWithFlags_ptsz);
  return record(hEvent);
}

LG_SIM_EXPORT CUresult cuEventQuery(CUevent hEvent) {
  LG_SIM_ENTRY(cuEventQuery);
  return hEvent != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

LG_SIM_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  LG_SIM_ENTRY(cuEventSynchronize);
  return hEvent != nullptr ? driver().sticky_error() : CUDA_ERROR_INVALID_HANDLE;
}

LG_SIM_EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  LG_SIM_ENTRY(cuEventElapsedTime);
  return elapsed(pMilliseconds, hStart, hEnd);
}

LG_SIM_EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  LG_SIM_ENTRY(cuEventElapsedTime_v2);
  return elapsed(pMilliseconds, hStart, hEnd);
}
