// The simulated driver's stream memory operations (wait/write value, batches), managed
// memory prefetches, stream capture and graphs.
//
// NVIDIA's libraries look these up at start (cuBLAS 13's cublasLt resolves them from
// libcuda.so.1 with dlsym during cublasCreate and refuses to start if one is missing), so the
// simulator answers every one of them, and answers as a driver would what it can decide:
//   - it runs stream work when it is issued, so a wait whose condition already holds
//     completes, and one that does not yet hold (it would wait for later work) cannot be
//     simulated: CUDA_ERROR_NOT_SUPPORTED, said once on stderr;
//   - prefetching managed memory has nothing to move: checked and accepted;
//   - stream capture is not simulated (nothing is recorded into a graph): beginning one
//     fails with CUDA_ERROR_NOT_SUPPORTED, said once on stderr; every stream reads as not
//     capturing; so no graph ever exists, and every graph handle is invalid.
// docs/simulator.md lists these limits.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "lg_cuda.h"
#include "sim_device.h"
#include "sim_entry.h"

using leaseguard::sim::MemoryKind;
using leaseguard::sim::SimDriver;

namespace {

SimDriver &driver() { return SimDriver::instance(); }

CUresult check_context() {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return driver().sticky_error();
}

void say_once(std::atomic<bool> &said, const char *what) {
  if (!said.exchange(true)) std::fprintf(stderr, "leaseguard-sim: %s\n", what);
}

// A stream memory operation's word: device memory or registered host memory.
CUresult check_word(CUdeviceptr address, size_t bytes) {
  if (address == 0 || address % bytes != 0) return CUDA_ERROR_INVALID_VALUE;
  SimDriver::PointerInfo info;
  if (driver().describe(address, &info) != CUDA_SUCCESS || address - info.base + bytes > info.size)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// The driver's wait conditions, at the word's width (GEQ compares cyclically, as documented).
template <typename Word>
bool condition_holds(Word current, Word value, unsigned flags) {
  using Signed = std::make_signed_t<Word>;
  switch (flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH)) {
    case CU_STREAM_WAIT_VALUE_GEQ: return static_cast<Signed>(static_cast<Word>(current - value)) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return current == value;
    case CU_STREAM_WAIT_VALUE_AND: return (current & value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: return static_cast<Word>(~(current | value)) != 0;
    default: return false;
  }
}

std::atomic<bool> g_said_wait{false};

template <typename Word>
CUresult wait_value(CUdeviceptr address, Word value, unsigned flags) {
  if (CUresult status = check_word(address, sizeof(Word)); status != CUDA_SUCCESS) return status;
  if ((flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH)) > CU_STREAM_WAIT_VALUE_NOR)
    return CUDA_ERROR_INVALID_VALUE;
  Word current;
  std::memcpy(&current, reinterpret_cast<const void *>(address), sizeof current);
  if (condition_holds<Word>(current, value, flags)) return CUDA_SUCCESS;
  say_once(g_said_wait,
           "a stream wait on a value that does not hold yet cannot be simulated (stream work runs when issued): "
           "CUDA_ERROR_NOT_SUPPORTED");
  return CUDA_ERROR_NOT_SUPPORTED;
}

template <typename Word>
CUresult write_value(CUdeviceptr address, Word value) {
  if (CUresult status = check_word(address, sizeof(Word)); status != CUDA_SUCCESS) return status;
  std::memcpy(reinterpret_cast<void *>(address), &value, sizeof value);
  return CUDA_SUCCESS;
}

std::atomic<bool> g_said_capture{false};
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

}  // namespace

LG_SIM_EXPORT CUresult cuStreamWaitValue32(CUstream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  LG_SIM_ENTRY(cuStreamWaitValue32);
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  return wait_value<uint32_t>(addr, value, flags);
}

LG_SIM_EXPORT CUresult cuStreamBatchMemOp(CUstream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                                          unsigned int flags) {
  LG_SIM_ENTRY(cuStreamBatchMemOp);
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  if (flags != 0 || (count != 0 && paramArray == nullptr) || count > 256) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams &op = paramArray[i];
    CUresult status = CUDA_SUCCESS;
    switch (op.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        status = wait_value<uint32_t>(op.waitValue.address, op.waitValue.value, op.waitValue.flags);
        break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        status = wait_value<uint64_t>(op.waitValue.address, op.waitValue.value64, op.waitValue.flags);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        status = write_value<uint32_t>(op.writeValue.address, op.writeValue.value);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        status = write_value<uint64_t>(op.writeValue.address, op.writeValue.value64);
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      case CU_STREAM_MEM_OP_BARRIER: break;  // every earlier write is already visible
      default: status = CUDA_ERROR_INVALID_VALUE; break;
    }
    if (status != CUDA_SUCCESS) return status;
  }
  return CUDA_SUCCESS;
}

// Managed memory is host memory here: nothing moves, the range is checked.
LG_SIM_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream) {
  LG_SIM_ENTRY(cuMemPrefetchAsync);
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  if (dstDevice != CU_DEVICE_CPU && (dstDevice < 0 || dstDevice >= driver().device_count()))
    return CUDA_ERROR_INVALID_DEVICE;
  SimDriver::PointerInfo info;
  if (count == 0 || driver().describe(devPtr, &info) != CUDA_SUCCESS || info.kind != MemoryKind::Managed ||
      devPtr - info.base + count > info.size)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// ---- Stream capture ----

LG_SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode mode) {
  LG_SIM_ENTRY(cuStreamBeginCapture_v2);
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  say_once(g_said_capture,
           "stream capture (CUDA graphs) is not simulated: cuStreamBeginCapture fails with "
           "CUDA_ERROR_NOT_SUPPORTED");
  return CUDA_ERROR_NOT_SUPPORTED;
}

LG_SIM_EXPORT CUresult cuStreamEndCapture(CUstream, CUgraph *phGraph) {
  LG_SIM_ENTRY(cuStreamEndCapture);
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  return CUDA_ERROR_ILLEGAL_STATE;  // the stream is not capturing
}

LG_SIM_EXPORT CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *captureStatus) {
  LG_SIM_ENTRY(cuStreamIsCapturing);
  if (captureStatus == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                                                 CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                                 size_t *numDependencies_out) {
  LG_SIM_ENTRY(cuStreamGetCaptureInfo_v2);
  if (captureStatus_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_context(); status != CUDA_SUCCESS) return status;
  *captureStatus_out = CU_STREAM_CAPTURE_STATUS_NONE;
  // The other outputs are defined only while capturing; cleared so that nothing stale is read.
  if (id_out != nullptr) *id_out = 0;
  if (graph_out != nullptr) *graph_out = nullptr;
  if (dependencies_out != nullptr) *dependencies_out = nullptr;
  if (numDependencies_out != nullptr) *numDependencies_out = 0;
  return CUDA_SUCCESS;
}

// The calling thread's capture interaction mode, swapped (a per-thread setting the driver keeps).
LG_SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  LG_SIM_ENTRY(cuThreadExchangeStreamCaptureMode);
  if (mode == nullptr || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  const CUstreamCaptureMode previous = t_capture_mode;
  t_capture_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

// ---- Graphs: none can exist (no capture, no cuGraphCreate), so every handle is invalid ----

LG_SIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph, CUgraphNode *, char *, size_t) {
  LG_SIM_ENTRY(cuGraphInstantiate);
  if (phGraphExec != nullptr) *phGraphExec = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec, CUstream) {
  LG_SIM_ENTRY(cuGraphLaunch);
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec) {
  LG_SIM_ENTRY(cuGraphExecDestroy);
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphDestroy(CUgraph) {
  LG_SIM_ENTRY(cuGraphDestroy);
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphGetNodes(CUgraph, CUgraphNode *, size_t *) {
  LG_SIM_ENTRY(cuGraphGetNodes);
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphNodeGetType(CUgraphNode, CUgraphNodeType *) {
  LG_SIM_ENTRY(cuGraphNodeGetType);
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *) {
  LG_SIM_ENTRY(cuGraphKernelNodeGetParams);
  return CUDA_ERROR_INVALID_VALUE;
}

LG_SIM_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1 *) {
  LG_SIM_ENTRY(cuGraphExecKernelNodeSetParams);
  return CUDA_ERROR_INVALID_VALUE;
}

// ---- Per-thread default stream variants: the same, as every stream is idle here ----

LG_SIM_EXPORT CUresult cuStreamWaitValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                unsigned int flags) {
  return cuStreamWaitValue32(stream, addr, value, flags);
}
LG_SIM_EXPORT CUresult cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count,
                                               CUstreamBatchMemOpParams *paramArray, unsigned int flags) {
  return cuStreamBatchMemOp(stream, count, paramArray, flags);
}
LG_SIM_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream stream) {
  return cuMemPrefetchAsync(devPtr, count, dstDevice, stream);
}
LG_SIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  return cuStreamBeginCapture_v2(stream, mode);
}
LG_SIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph *phGraph) {
  return cuStreamEndCapture(stream, phGraph);
}
LG_SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus *captureStatus) {
  return cuStreamIsCapturing(stream, captureStatus);
}
LG_SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream stream, CUstreamCaptureStatus *captureStatus_out,
                                                      cuuint64_t *id_out, CUgraph *graph_out,
                                                      const CUgraphNode **dependencies_out,
                                                      size_t *numDependencies_out) {
  return cuStreamGetCaptureInfo_v2(stream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out);
}
LG_SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) { return cuGraphLaunch(graph, stream); }
