// A CUDA runtime program as nvcc builds it by default, run on the simulator under leaseguard
// (tests/integration/runtime_test.cpp). Built twice: with the static runtime (nvcc's
// default) and with -cudart shared. Each mode prints what it checked; every leak is made in
// a function of its own, so the report can be checked to name it.
//
//   leaks    device, stream-ordered and pinned host memory leaked, one buffer held in a global
//            (reachable), one freed; the data written to the device read back
//   reset    device memory left allocated, then cudaDeviceReset (the driver frees it)
//   streams  stream-ordered allocation from the default and an explicit pool, events, trim;
//            nothing leaked
//   threads  four threads allocate and free; each leaks one buffer
//   fork     the child allocates and leaks; the parent frees what it allocated
//   shapes   pitched and 3D memory with 2D and 3D copies, managed memory, registered host
//            memory, an array, pointer attributes; the data read back, nothing leaked
//   devices  two devices (LEASEGUARD_SIM_DEVICES=2): cudaSetDevice back and forth, a leak on
//            each device after each switch, and a thread that leaks on the other device
//            than the main thread's; which device each leak is on is printed
//   kernels  vector_add, which the simulator has a host stand-in for, runs through the
//            runtime; scale, device code only, runs on the simulator's PTX interpreter;
//            __device__, __constant__ and __managed__ variables read and written through the
//            runtime
//   globals  device memory held only by a __device__ pointer (set with cudaMemcpyToSymbol)
//            and by a __managed__ one, and one buffer dropped
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t status_ = (call);                                                      \
    if (status_ != cudaSuccess) {                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(status_)); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

static void *g_workspace;  // held for the program's life on purpose

__attribute__((noinline)) static int leak_device_buffer() {
  void *buffer = nullptr;
  CHECK(cudaMalloc(&buffer, 1 << 20));
  return 0;
}

__attribute__((noinline)) static int leak_stream_ordered_buffer(cudaStream_t stream) {
  void *buffer = nullptr;
  CHECK(cudaMallocAsync(&buffer, 3 << 20, stream));
  CHECK(cudaStreamSynchronize(stream));
  return 0;
}

__attribute__((noinline)) static int leak_pinned_buffer() {
  void *buffer = nullptr;
  CHECK(cudaMallocHost(&buffer, 2 << 20));
  return 0;
}

static int round_trip() {
  int host[1024];
  for (int i = 0; i < 1024; ++i) host[i] = i * 7;
  int *device = nullptr;
  CHECK(cudaMalloc(&device, sizeof host));
  CHECK(cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(device, 0x5a, 16));
  int back[1024];
  CHECK(cudaMemcpy(back, device, sizeof back, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 4; ++i) host[i] = 0x5a5a5a5a;
  printf("data: %s\n", memcmp(host, back, sizeof host) == 0 ? "ok" : "WRONG");
  CHECK(cudaFree(device));
  return 0;
}

static int leaks() {
  cudaDeviceProp properties;
  CHECK(cudaGetDeviceProperties(&properties, 0));
  printf("device: %s, compute capability %d.%d\n", properties.name, properties.major, properties.minor);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMalloc(&g_workspace, 4 << 20));
  if (round_trip() != 0 || leak_device_buffer() != 0 || leak_stream_ordered_buffer(stream) != 0 ||
      leak_pinned_buffer() != 0)
    return 1;
  CHECK(cudaStreamDestroy(stream));
  return 0;
}

__attribute__((noinline)) static int allocate_before_reset() {
  void *buffer = nullptr;
  CHECK(cudaMalloc(&buffer, 5 << 20));
  return 0;
}

static int reset() {
  if (allocate_before_reset() != 0) return 1;
  CHECK(cudaDeviceReset());
  void *after = nullptr;  // the runtime starts again on the next call
  CHECK(cudaMalloc(&after, 4096));
  CHECK(cudaFree(after));
  printf("reset: ok\n");
  return 0;
}

static int streams() {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  void *first = nullptr;
  CHECK(cudaMallocAsync(&first, 1 << 16, stream));
  CHECK(cudaMemsetAsync(first, 1, 1 << 16, stream));
  cudaMemPool_t pool;
  cudaMemPoolProps properties = {};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.location.type = cudaMemLocationTypeDevice;
  properties.location.id = 0;
  CHECK(cudaMemPoolCreate(&pool, &properties));
  void *second = nullptr;
  CHECK(cudaMallocFromPoolAsync(&second, 1 << 17, pool, stream));
  CHECK(cudaMemcpyAsync(second, first, 1 << 16, cudaMemcpyDeviceToDevice, stream));
  unsigned char byte = 0;
  CHECK(cudaMemcpyAsync(&byte, static_cast<char *>(second) + 100, 1, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaFreeAsync(first, stream));
  CHECK(cudaFreeAsync(second, stream));
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float milliseconds = -1;
  CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
  CHECK(cudaMemPoolTrimTo(pool, 0));
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaDeviceSynchronize());
  printf("streams: byte %d, elapsed %s\n", byte, milliseconds >= 0 ? "measured" : "missing");
  return 0;
}

__attribute__((noinline)) static void *leak_from_a_thread(void *) {
  for (int i = 0; i < 50; ++i) {
    void *buffer = nullptr;
    if (cudaMalloc(&buffer, 4096) != cudaSuccess) return (void *)1;
    if (i != 49 && cudaFree(buffer) != cudaSuccess) return (void *)1;
  }
  return nullptr;
}

static int threads() {
  pthread_t workers[4];
  for (pthread_t &worker : workers) pthread_create(&worker, nullptr, leak_from_a_thread, nullptr);
  int failed = 0;
  for (pthread_t worker : workers) {
    void *result = nullptr;
    pthread_join(worker, &result);
    failed |= result != nullptr;
  }
  printf("threads: %s\n", failed ? "FAILED" : "ok");
  return failed;
}

// One function per leak, so the report names each; `device` is where it should be.
#define LEAK_ON(name, bytes)                          \
  __attribute__((noinline)) static int name() {       \
    void *buffer = nullptr;                           \
    CHECK(cudaMalloc(&buffer, bytes));                \
    cudaPointerAttributes attributes{};               \
    CHECK(cudaPointerGetAttributes(&attributes, buffer)); \
    printf(#name " on device %d\n", attributes.device); \
    return 0;                                         \
  }
LEAK_ON(leak_first_on_device_0, 2001)
LEAK_ON(leak_after_switching_to_device_1, 2002)
LEAK_ON(leak_after_switching_back_to_device_0, 2003)
LEAK_ON(leak_from_a_thread_on_device_1, 2004)
LEAK_ON(leak_after_the_thread_still_on_device_0, 2005)

static void *switch_to_device_1_and_leak(void *) {
  if (cudaSetDevice(1) != cudaSuccess) return (void *)1;
  return leak_from_a_thread_on_device_1() == 0 ? nullptr : (void *)1;
}

static int devices() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    fprintf(stderr, "devices: %d device(s), 2 needed\n", count);
    return 1;
  }
  CHECK(cudaSetDevice(0));
  if (leak_first_on_device_0() != 0) return 1;
  CHECK(cudaSetDevice(1));
  if (leak_after_switching_to_device_1() != 0) return 1;
  CHECK(cudaSetDevice(0));
  if (leak_after_switching_back_to_device_0() != 0) return 1;
  pthread_t thread;
  void *result = nullptr;
  if (pthread_create(&thread, nullptr, switch_to_device_1_and_leak, nullptr) != 0) return 1;
  pthread_join(thread, &result);
  if (result != nullptr || leak_after_the_thread_still_on_device_0() != 0) return 1;
  return 0;
}

__attribute__((noinline)) static int leak_in_the_child() {
  void *buffer = nullptr;
  CHECK(cudaMalloc(&buffer, 6 << 20));
  return 0;
}

static int fork_mode() {
  void *parent = nullptr;
  CHECK(cudaMalloc(&parent, 4096));
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) exit(leak_in_the_child());  // exit, not _exit: the child ends as a program does
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(cudaFree(parent));
  printf("fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

static int shapes() {
  int failures = 0;
  char rows[10][100];
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 100; ++x) rows[y][x] = static_cast<char>(y * 7 + x);
  void *pitched = nullptr;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(&pitched, &pitch, 100, 10));
  CHECK(cudaMemcpy2D(pitched, pitch, rows, 100, 100, 10, cudaMemcpyHostToDevice));
  char back[10][100] = {};
  CHECK(cudaMemcpy2D(back, 100, pitched, pitch, 100, 10, cudaMemcpyDeviceToHost));
  failures += memcmp(rows, back, sizeof rows) != 0;

  cudaPitchedPtr volume;
  CHECK(cudaMalloc3D(&volume, make_cudaExtent(100, 5, 2)));
  cudaMemcpy3DParms to = {};
  to.srcPtr = make_cudaPitchedPtr(rows, 100, 100, 5);
  to.dstPtr = volume;
  to.extent = make_cudaExtent(100, 5, 2);
  to.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&to));
  char volume_back[10][100] = {};
  cudaMemcpy3DParms from = {};
  from.srcPtr = volume;
  from.dstPtr = make_cudaPitchedPtr(volume_back, 100, 100, 5);
  from.extent = make_cudaExtent(100, 5, 2);
  from.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&from));
  failures += memcmp(rows, volume_back, sizeof rows) != 0;

  int *managed = nullptr;
  CHECK(cudaMallocManaged(&managed, 64 * sizeof(int)));
  managed[3] = 42;  // one address space: the host writes it directly
  cudaPointerAttributes attributes;
  CHECK(cudaPointerGetAttributes(&attributes, pitched));
  failures += attributes.type != cudaMemoryTypeDevice || attributes.device != 0;
  CHECK(cudaPointerGetAttributes(&attributes, managed));
  failures += attributes.type != cudaMemoryTypeManaged || managed[3] != 42;

  static char registered[1 << 16] __attribute__((aligned(4096)));
  CHECK(cudaHostRegister(registered, sizeof registered, cudaHostRegisterDefault));
  CHECK(cudaPointerGetAttributes(&attributes, registered));
  failures += attributes.type != cudaMemoryTypeHost;
  CHECK(cudaHostUnregister(registered));

  cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &format, 64, 64));
  CHECK(cudaFreeArray(array));
  CHECK(cudaFree(managed));
  CHECK(cudaFree(volume.ptr));
  CHECK(cudaFree(pitched));
  printf("shapes: %s\n", failures == 0 ? "ok" : "WRONG");
  return 0;
}

// The simulator's stand-in runs this one (sim/sim_kernels.cpp): c[i] = a[i] + b[i].
__global__ void vector_add(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Device code only: the simulator runs its PTX.
__global__ void scale(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
}

// Variables of device code: the runtime reads and writes them through the driver's
// cuLibraryGetGlobal, which the simulator answers from the fat binary's cubin.
__device__ int launches_seen = 41;
__constant__ float coefficients[4] = {0.5f, 1.5f, 2.5f, 3.5f};
__managed__ int managed_total = 5;  // unified memory: the host reads and writes it directly

static int variables() {
  int seen = 0;
  float read_back[4] = {};
  CHECK(cudaMemcpyFromSymbol(&seen, launches_seen, sizeof seen));
  CHECK(cudaMemcpyFromSymbol(read_back, coefficients, sizeof read_back));
  const int next = seen + 1;
  CHECK(cudaMemcpyToSymbol(launches_seen, &next, sizeof next));
  CHECK(cudaMemcpyFromSymbol(&seen, launches_seen, sizeof seen));
  size_t size = 0;
  CHECK(cudaGetSymbolSize(&size, coefficients));
  const int managed_before = managed_total;
  managed_total = 9;
  int managed_read = 0;
  CHECK(cudaMemcpyFromSymbol(&managed_read, managed_total, sizeof managed_read));
  const bool ok = seen == 42 && read_back[0] == 0.5f && read_back[3] == 3.5f && size == sizeof read_back &&
                  managed_before == 5 && managed_read == 9;
  printf("variables: %s\n", ok ? "ok" : "WRONG");
  return 0;
}

static int kernels() {
  const unsigned n = 1000;
  float host_a[n], host_b[n], host_c[n];
  for (unsigned i = 0; i < n; ++i) {
    host_a[i] = static_cast<float>(i);
    host_b[i] = 0.5f;
  }
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaMalloc(&a, sizeof host_a));
  CHECK(cudaMalloc(&b, sizeof host_b));
  CHECK(cudaMalloc(&c, sizeof host_c));
  CHECK(cudaMemcpy(a, host_a, sizeof host_a, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, host_b, sizeof host_b, cudaMemcpyHostToDevice));
  vector_add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host_c, c, sizeof host_c, cudaMemcpyDeviceToHost));
  printf("vector_add: %s\n", host_c[0] == 0.5f && host_c[999] == 999.5f ? "ok" : "WRONG");
  scale<<<4, 256>>>(c, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host_c, c, sizeof host_c, cudaMemcpyDeviceToHost));
  printf("scale: %s\n", host_c[0] == 1.0f && host_c[999] == 1999.0f ? "ok" : "WRONG");
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return variables();
}

__device__ void *g_device_table;    // device memory a kernel would follow
__managed__ void *g_managed_table;  // the same, in a managed variable

__attribute__((noinline)) static int hold_in_device_globals() {
  void *table = nullptr, *managed = nullptr, *dropped = nullptr;
  CHECK(cudaMalloc(&table, 1301));
  CHECK(cudaMemcpyToSymbol(g_device_table, &table, sizeof table));
  CHECK(cudaMalloc(&managed, 1302));
  g_managed_table = managed;
  CHECK(cudaMalloc(&dropped, 3301));
  void *back = nullptr;
  CHECK(cudaMemcpyFromSymbol(&back, g_device_table, sizeof back));
  printf("globals: %s\n", back == table ? "ok" : "WRONG");
  return 0;
}

__attribute__((noinline)) static void scrub_stack() {
  volatile char area[16384];
  for (size_t i = 0; i < sizeof area; ++i) area[i] = 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "leaks";
  if (strcmp(mode, "leaks") == 0) return leaks();
  if (strcmp(mode, "reset") == 0) return reset();
  if (strcmp(mode, "streams") == 0) return streams();
  if (strcmp(mode, "threads") == 0) return threads();
  if (strcmp(mode, "fork") == 0) return fork_mode();
  if (strcmp(mode, "shapes") == 0) return shapes();
  if (strcmp(mode, "kernels") == 0) return kernels();
  if (strcmp(mode, "devices") == 0) return devices();
  if (strcmp(mode, "globals") == 0) {
    const int status = hold_in_device_globals();
    scrub_stack();
    return status;
  }
  fprintf(stderr, "usage: %s leaks|reset|streams|threads|fork|shapes|kernels|devices|globals\n", argv[0]);
  return 2;
}
