// Kernels that exercise each family of PTX instructions the simulator's interpreter runs
// (sim/ptx/), each checked on the host against what the CUDA programming guide says it
// computes. Built by nvcc as users build (tests/CMakeLists.txt); tests/integration/
// device_code_test.cpp runs it on the simulator with and without leaseguard.
//
// Usage: device_code [CHECK]   (no CHECK: all of them). Prints "CHECK ok" or "CHECK FAILED:
// ..." for each, and exits 1 if any failed. `device_code fault` runs a kernel that writes out
// of bounds and prints what the runtime says then; `device_code table` keeps four buffers only
// in a table of pointers a kernel wrote, and drops a fifth; `device_code tensor` launches a
// tensor-core (wmma) kernel, which the simulator refuses, and prints what the launch said.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <fenv.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK_CUDA(call)                                                          \
  do {                                                                            \
    cudaError_t status_ = (call);                                                 \
    if (status_ != cudaSuccess) {                                                 \
      std::printf("%s: %s (line %d)\n", #call, cudaGetErrorString(status_), __LINE__); \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

static int g_failures = 0;

static void report(const char *name, bool ok, const std::string &detail = "") {
  if (ok) std::printf("%s ok\n", name);
  else std::printf("%s FAILED: %s\n", name, detail.c_str());
  if (!ok) ++g_failures;
}

template <typename T>
struct Device {
  T *p = nullptr;
  size_t n = 0;
  explicit Device(size_t count) : n(count) {
    CHECK_CUDA(cudaMalloc(&p, count * sizeof(T)));
    CHECK_CUDA(cudaMemset(p, 0, count * sizeof(T)));
  }
  ~Device() { cudaFree(p); }
  void put(const T *host) { CHECK_CUDA(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice)); }
  void get(T *host) const { CHECK_CUDA(cudaMemcpy(host, p, n * sizeof(T), cudaMemcpyDeviceToHost)); }
};

// ---- State spaces: global, shared (static and dynamic), local, const, param ----

__constant__ int c_table[8] = {3, 1, 4, 1, 5, 9, 2, 6};

struct Pair {
  int a;
  double b;
  char c;
};

__global__ void spaces(int *out, Pair pair, int pick) {
  __shared__ int s_static[64];
  extern __shared__ int s_dynamic[];
  int local[16];
  const int t = threadIdx.x;
  s_static[t] = t * 2;
  s_dynamic[t] = t * 3;
  for (int i = 0; i < 16; ++i) local[i] = i * t;
  __syncthreads();
  out[t] = s_static[63 - t] + s_dynamic[(t + 1) % 64] + local[(t + pick) % 16] + c_table[t % 8] + pair.a +
           static_cast<int>(pair.b) + pair.c;
}

static void check_spaces() {
  Device<int> out(64);
  Pair pair{5, 2.75, 7};
  spaces<<<1, 64, 64 * sizeof(int)>>>(out.p, pair, 3);
  CHECK_CUDA(cudaGetLastError());
  int host[64];
  out.get(host);
  const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  bool ok = true;
  std::string detail;
  for (int t = 0; t < 64; ++t) {
    const int want = (63 - t) * 2 + ((t + 1) % 64) * 3 + ((t + 3) % 16) * t + table[t % 8] + 5 + 2 + 7;
    if (host[t] != want) {
      ok = false;
      detail = "thread " + std::to_string(t) + ": " + std::to_string(host[t]) + " != " + std::to_string(want);
      break;
    }
  }
  report("spaces", ok, detail);
}

// ---- Integer arithmetic and bits ----

__global__ void integers(const int *in, long long *out) {
  const int a = in[0], b = in[1];
  const unsigned ua = static_cast<unsigned>(a), ub = static_cast<unsigned>(b);
  const long long wa = in[2];
  int i = 0;
  out[i++] = a + b;
  out[i++] = a - b;
  out[i++] = a * b;
  out[i++] = __mulhi(a, b);
  out[i++] = __umulhi(ua, ub);
  out[i++] = static_cast<long long>(a) * b;
  out[i++] = a / b;
  out[i++] = a % b;
  out[i++] = ua / ub;
  out[i++] = ua % ub;
  out[i++] = min(a, b);
  out[i++] = max(a, b);
  out[i++] = min(ua, ub);
  out[i++] = a >> 3;
  out[i++] = ua >> 3;
  out[i++] = a << 5;
  out[i++] = __popc(ua);
  out[i++] = __clz(a);
  out[i++] = __brev(ua);
  out[i++] = __byte_perm(ua, ub, 0x5140);
  out[i++] = __funnelshift_l(ua, ub, 7);
  out[i++] = __funnelshift_r(ua, ub, 9);
  out[i++] = __ffs(a);
  out[i++] = abs(b);
  out[i++] = wa * wa / 7;
  out[i++] = __popcll(static_cast<unsigned long long>(wa) * 0x9E3779B97F4A7C15ull);
  out[i++] = __clzll(wa);
  out[i++] = (ua & 0xff0f) | (ub ^ 0x5a5a) | ~ua;
  out[i++] = __sad(a, b, 11u);
  out[i++] = (wa << 24) >> 25;
  out[i++] = __mul24(a, b);
  out[i++] = __usad(ua, ub, 3u);
}

static void check_integers() {
  const int in_host[3] = {-123457, 1789, 987654321};
  Device<int> in(3);
  in.put(in_host);
  Device<long long> out(32);
  integers<<<1, 1>>>(in.p, out.p);
  CHECK_CUDA(cudaGetLastError());
  long long got[32];
  out.get(got);
  const int a = in_host[0], b = in_host[1];
  const unsigned ua = static_cast<unsigned>(a), ub = static_cast<unsigned>(b);
  const long long wa = in_host[2];
  auto brev = [](unsigned v) {
    unsigned r = 0;
    for (int k = 0; k < 32; ++k) r |= ((v >> k) & 1u) << (31 - k);
    return r;
  };
  auto perm = [](unsigned x, unsigned y, unsigned s) {
    const unsigned long long both = (static_cast<unsigned long long>(y) << 32) | x;
    unsigned r = 0;
    for (int k = 0; k < 4; ++k) r |= static_cast<unsigned>((both >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
    return r;
  };
  const unsigned long long funnel = (static_cast<unsigned long long>(ub) << 32) | ua;
  const long long want[32] = {a + b,
                              a - b,
                              static_cast<int>(static_cast<unsigned>(a) * static_cast<unsigned>(b)),
                              static_cast<int>((static_cast<long long>(a) * b) >> 32),
                              static_cast<unsigned>((static_cast<unsigned long long>(ua) * ub) >> 32),
                              static_cast<long long>(a) * b,
                              a / b,
                              a % b,
                              ua / ub,
                              ua % ub,
                              a < b ? a : b,
                              a > b ? a : b,
                              ua < ub ? ua : ub,
                              a >> 3,
                              ua >> 3,
                              static_cast<int>(static_cast<unsigned>(a) << 5),
                              __builtin_popcount(ua),
                              a == 0 ? 32 : __builtin_clz(static_cast<unsigned>(a)),
                              brev(ua),
                              perm(ua, ub, 0x5140),
                              static_cast<unsigned>((funnel << 7) >> 32),
                              static_cast<unsigned>(funnel >> 9),
                              __builtin_ffs(a),
                              b < 0 ? -b : b,
                              wa * wa / 7,
                              __builtin_popcountll(static_cast<unsigned long long>(wa) * 0x9E3779B97F4A7C15ull),
                              __builtin_clzll(static_cast<unsigned long long>(wa)),
                              static_cast<int>((ua & 0xff0f) | (ub ^ 0x5a5a) | ~ua),
                              static_cast<unsigned>((a > b ? a - b : b - a) + 11u),
                              (wa << 24) >> 25,
                              static_cast<int>(static_cast<unsigned>((a << 8) >> 8) * static_cast<unsigned>((b << 8) >> 8)),
                              static_cast<unsigned>((ua > ub ? ua - ub : ub - ua) + 3u)};
  std::string detail;
  for (int k = 0; k < 32; ++k)
    if (got[k] != want[k]) {
      detail = "result " + std::to_string(k) + ": " + std::to_string(got[k]) + " != " + std::to_string(want[k]);
      break;
    }
  report("integers", detail.empty(), detail);
}

// ---- Floating point: rounding modes, conversions, comparisons ----

__global__ void floats(const float *f, const double *d, unsigned *out32, unsigned long long *out64) {
  const float x = f[0], y = f[1];
  const double u = d[0], v = d[1];
  int i = 0;
  out32[i++] = __float_as_uint(__fadd_rn(x, y));
  out32[i++] = __float_as_uint(__fadd_rz(x, y));
  out32[i++] = __float_as_uint(__fadd_ru(x, y));
  out32[i++] = __float_as_uint(__fadd_rd(x, y));
  out32[i++] = __float_as_uint(__fmul_rz(x, y));
  out32[i++] = __float_as_uint(__fmul_ru(x, y));
  out32[i++] = __float_as_uint(__fdiv_rn(x, y));
  out32[i++] = __float_as_uint(__fdiv_rz(x, y));
  out32[i++] = __float_as_uint(__fmaf_rn(x, y, x));
  out32[i++] = __float_as_uint(__fmaf_rd(x, y, -x));
  out32[i++] = __float_as_uint(__fsqrt_rn(y));
  out32[i++] = __float_as_uint(__fsqrt_ru(y));
  out32[i++] = __float_as_uint(__frcp_rn(x));
  out32[i++] = static_cast<unsigned>(__float2int_rn(x * 1000.5f));
  out32[i++] = static_cast<unsigned>(__float2int_rz(-x * 1000.5f));
  out32[i++] = static_cast<unsigned>(__float2int_rd(-x * 1000.5f));
  out32[i++] = static_cast<unsigned>(__float2int_ru(x * 1000.5f));
  out32[i++] = static_cast<unsigned>(__float2int_rn(1e20f));
  out32[i++] = static_cast<unsigned>(__float2int_rn(-1e20f));
  out32[i++] = static_cast<unsigned>(__float2int_rn(__int_as_float(0x7fc00000)));
  out32[i++] = __float2uint_rn(-5.0f);
  out32[i++] = __float_as_uint(__int2float_rz(16777217 + static_cast<int>(x)));
  out32[i++] = __float_as_uint(__int2float_ru(16777217 + static_cast<int>(x)));
  out32[i++] = __float_as_uint(__double2float_rz(u));
  out32[i++] = __float_as_uint(__double2float_ru(u));
  out32[i++] = __half_as_ushort(__float2half_rn(x));
  out32[i++] = __float_as_uint(__half2float(__float2half_rn(y)));
  out32[i++] = (x < y) | ((x == y) << 1) | ((isnan((x - x) / (y - y))) << 2) | ((y >= x) << 3);
  out32[i++] = __float_as_uint(fminf(x, __int_as_float(0x7fc00000)));
  out32[i++] = __float_as_uint(__saturatef(y));
  out32[i++] = __float_as_uint(copysignf(x, -y));
  out32[i++] = __float_as_uint(truncf(-x * 3.3f) + floorf(x * 3.3f) + ceilf(y) + rintf(2.5f));
  int k = 0;
  out64[k++] = __double_as_longlong(__dadd_rn(u, v));
  out64[k++] = __double_as_longlong(__dadd_rz(u, v));
  out64[k++] = __double_as_longlong(__dmul_ru(u, v));
  out64[k++] = __double_as_longlong(__ddiv_rd(u, v));
  out64[k++] = __double_as_longlong(__fma_rz(u, v, u));
  out64[k++] = __double_as_longlong(sqrt(v));
  out64[k++] = __double_as_longlong(static_cast<double>(static_cast<long long>(u * 1e9)));
  out64[k++] = static_cast<unsigned long long>(__double2ll_rz(-u * 1e12));
  out64[k++] = __double_as_longlong(__ll2double_rz(0x7fffffffffffff11ll));
  out64[k++] = __double_as_longlong(static_cast<double>(x) * v);
}

static unsigned bits(float f) {
  unsigned b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
static unsigned long long bits(double f) {
  unsigned long long b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The host's arithmetic, out of line so that the compiler evaluates it where it is called:
// after fesetround, not folded or moved before it.
#define HOST_OP __attribute__((noipa))
static HOST_OP float h_add(float a, float b) { return a + b; }
static HOST_OP float h_mul(float a, float b) { return a * b; }
static HOST_OP float h_div(float a, float b) { return a / b; }
static HOST_OP float h_fma(float a, float b, float c) { return std::fma(a, b, c); }
static HOST_OP float h_sqrt(float a) { return std::sqrt(a); }
static HOST_OP float h_from_int(int a) { return static_cast<float>(a); }
static HOST_OP float h_narrow(double a) { return static_cast<float>(a); }
static HOST_OP double h_dadd(double a, double b) { return a + b; }
static HOST_OP double h_dmul(double a, double b) { return a * b; }
static HOST_OP double h_ddiv(double a, double b) { return a / b; }
static HOST_OP double h_dfma(double a, double b, double c) { return std::fma(a, b, c); }
static HOST_OP double h_from_long(long long a) { return static_cast<double>(a); }

// The host's answer under rounding mode `mode`.
template <typename F>
static auto rounded(int mode, F f) {
  fesetround(mode);
  const auto r = f();
  fesetround(FE_TONEAREST);
  return r;
}

static void check_floats() {
  const float host_f[2] = {1.1f, 0.3f};
  const double host_d[2] = {1.0 / 3.0, 2.0 / 7.0};
  Device<float> f(2);
  Device<double> d(2);
  f.put(host_f);
  d.put(host_d);
  Device<unsigned> out32(32);
  Device<unsigned long long> out64(10);
  floats<<<1, 1>>>(f.p, d.p, out32.p, out64.p);
  CHECK_CUDA(cudaGetLastError());
  unsigned got32[32];
  unsigned long long got64[10];
  out32.get(got32);
  out64.get(got64);
  volatile float x = host_f[0], y = host_f[1];
  volatile double u = host_d[0], v = host_d[1];
  const unsigned want32[32] = {
      bits(x + y),
      rounded(FE_TOWARDZERO, [&] { return bits(h_add(x, y)); }),
      rounded(FE_UPWARD, [&] { return bits(h_add(x, y)); }),
      rounded(FE_DOWNWARD, [&] { return bits(h_add(x, y)); }),
      rounded(FE_TOWARDZERO, [&] { return bits(h_mul(x, y)); }),
      rounded(FE_UPWARD, [&] { return bits(h_mul(x, y)); }),
      bits(x / y),
      rounded(FE_TOWARDZERO, [&] { return bits(h_div(x, y)); }),
      bits(std::fma(x, y, x)),
      rounded(FE_DOWNWARD, [&] { return bits(h_fma(x, y, -x)); }),
      bits(std::sqrt(static_cast<float>(y))),
      rounded(FE_UPWARD, [&] { return bits(h_sqrt(y)); }),
      bits(1.0f / x),
      static_cast<unsigned>(static_cast<int>(std::nearbyint(x * 1000.5f))),
      static_cast<unsigned>(static_cast<int>(std::trunc(-x * 1000.5f))),
      static_cast<unsigned>(static_cast<int>(std::floor(-x * 1000.5f))),
      static_cast<unsigned>(static_cast<int>(std::ceil(x * 1000.5f))),
      0x7fffffffu,
      0x80000000u,
      0u,
      0u,
      rounded(FE_TOWARDZERO, [&] { return bits(h_from_int(16777217 + static_cast<int>(x))); }),
      rounded(FE_UPWARD, [&] { return bits(h_from_int(16777217 + static_cast<int>(x))); }),
      rounded(FE_TOWARDZERO, [&] { return bits(h_narrow(u)); }),
      rounded(FE_UPWARD, [&] { return bits(h_narrow(u)); }),
      0x3c66u,  // 1.1 as a half, rounded to nearest
      bits(0.300048828125f),
      static_cast<unsigned>((x < y) | ((x == y) << 1) | (1 << 2) | ((y >= x) << 3)),
      bits(static_cast<float>(x)),
      bits(static_cast<float>(y)),
      bits(std::copysign(static_cast<float>(x), -y)),
      bits(std::trunc(-x * 3.3f) + std::floor(x * 3.3f) + std::ceil(static_cast<float>(y)) + 2.0f),
  };
  const unsigned long long want64[10] = {
      bits(u + v),
      rounded(FE_TOWARDZERO, [&] { return bits(h_dadd(u, v)); }),
      rounded(FE_UPWARD, [&] { return bits(h_dmul(u, v)); }),
      rounded(FE_DOWNWARD, [&] { return bits(h_ddiv(u, v)); }),
      rounded(FE_TOWARDZERO, [&] { return bits(h_dfma(u, v, u)); }),
      bits(std::sqrt(static_cast<double>(v))),
      bits(static_cast<double>(static_cast<long long>(u * 1e9))),
      static_cast<unsigned long long>(static_cast<long long>(std::trunc(-u * 1e12))),
      rounded(FE_TOWARDZERO, [&] { return bits(h_from_long(0x7fffffffffffff11ll)); }),
      bits(static_cast<double>(static_cast<float>(x)) * v),
  };
  std::string detail;
  char line[160];
  for (int k = 0; k < 32 && detail.empty(); ++k)
    if (got32[k] != want32[k]) std::snprintf(line, sizeof line, "f32 result %d: %08x != %08x", k, got32[k], want32[k]), detail = line;
  for (int k = 0; k < 10 && detail.empty(); ++k)
    if (got64[k] != want64[k])
      std::snprintf(line, sizeof line, "f64 result %d: %016llx != %016llx", k, got64[k], want64[k]), detail = line;
  report("floats", detail.empty(), detail);
}

// ---- Math approximations, within the programming guide's error bounds ----

__global__ void approximations(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  out[6 * i + 0] = __sinf(x);
  out[6 * i + 1] = __cosf(x);
  out[6 * i + 2] = __expf(x / 4);
  out[6 * i + 3] = __log2f(x + 2);
  out[6 * i + 4] = rsqrtf(x + 2);
  out[6 * i + 5] = __fdividef(x, 3.0f) + tanhf(x / 8);
}

static void check_approximations() {
  const int n = 256;
  float host[n];
  for (int i = 0; i < n; ++i) host[i] = -3.0f + 6.0f * i / n;
  Device<float> in(n), out(6 * n);
  in.put(host);
  approximations<<<2, 128>>>(in.p, out.p, n);
  CHECK_CUDA(cudaGetLastError());
  static float got[6 * n];
  out.get(got);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const double x = host[i];
    const double want[6] = {std::sin(x), std::cos(x), std::exp(x / 4), std::log2(x + 2), 1 / std::sqrt(x + 2),
                            x / 3 + std::tanh(x / 8)};
    for (int k = 0; k < 6; ++k) worst = std::fmax(worst, std::fabs(got[6 * i + k] - want[k]) / std::fmax(1.0, std::fabs(want[k])));
  }
  report("approximations", worst < 2e-5, "relative error " + std::to_string(worst));
}

// ---- Branches, divergence, device functions, special registers ----

__device__ __noinline__ int collatz_steps(int v) {
  int steps = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++steps;
  }
  return steps;
}

__device__ __noinline__ void record(int *out, int index, int value) { out[index] = value; }

__global__ void divergence(int *out) {
  const int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const int g = block * blockDim.x * blockDim.y * blockDim.z + t;
  int value;
  if (t % 3 == 0) value = collatz_steps(g + 1);
  else if (t % 3 == 1) value = -g;
  else value = g * 2;
  // Reconverged: every lane of the warp takes part in the shuffle.
  const int neighbour = __shfl_xor_sync(0xffffffffu, value, 1);
  record(out, g, value + neighbour * 1000);
}

static int host_collatz(int v) {
  int steps = 0;
  while (v != 1) v = (v & 1) ? 3 * v + 1 : v / 2, ++steps;
  return steps;
}

static void check_divergence() {
  const dim3 grid(2, 3, 2), block(4, 4, 4);
  const int threads = 2 * 3 * 2 * 64;
  Device<int> out(threads);
  divergence<<<grid, block>>>(out.p);
  CHECK_CUDA(cudaGetLastError());
  int *got = new int[threads];
  out.get(got);
  auto value = [](int g) {
    const int t = g % 64;
    return t % 3 == 0 ? host_collatz(g + 1) : t % 3 == 1 ? -g : g * 2;
  };
  std::string detail;
  for (int g = 0; g < threads && detail.empty(); ++g) {
    const int want = value(g) + value(g ^ 1) * 1000;
    if (got[g] != want) detail = "thread " + std::to_string(g) + ": " + std::to_string(got[g]) + " != " + std::to_string(want);
  }
  delete[] got;
  report("divergence", detail.empty(), detail);
}

// ---- Barriers in loops, and the counting barriers ----

__global__ void barriers(int *out, int rounds) {
  __shared__ int ring[256];
  const int t = threadIdx.x;
  ring[t] = t;
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    const int next = ring[(t + 1) % blockDim.x];
    __syncthreads();
    ring[t] = next + r;
    __syncthreads();
  }
  const int count = __syncthreads_count(ring[t] % 2 == 0);
  const int all = __syncthreads_and(ring[t] >= 0);
  const int any = __syncthreads_or(ring[t] == 12345);
  out[t] = ring[t];
  if (t == 0) out[blockDim.x] = count, out[blockDim.x + 1] = all, out[blockDim.x + 2] = any;
}

static void check_barriers() {
  const int n = 256, rounds = 37;
  Device<int> out(n + 3);
  barriers<<<1, n>>>(out.p, rounds);
  CHECK_CUDA(cudaGetLastError());
  int got[n + 3];
  out.get(got);
  int ring[n];
  for (int t = 0; t < n; ++t) ring[t] = t;
  for (int r = 0; r < rounds; ++r) {
    int next[n];
    for (int t = 0; t < n; ++t) next[t] = ring[(t + 1) % n] + r;
    std::memcpy(ring, next, sizeof ring);
  }
  int even = 0;
  for (int t = 0; t < n; ++t) even += ring[t] % 2 == 0;
  bool ok = std::memcmp(got, ring, sizeof ring) == 0 && got[n] == even && got[n + 1] == 1 && got[n + 2] == 0;
  report("barriers", ok, "count " + std::to_string(got[n]) + " want " + std::to_string(even));
}

// ---- Atomics under contention, on global and shared memory ----

__global__ void atomics(int *counters, unsigned *uc, float *fsum, double *dsum, unsigned long long *wide) {
  __shared__ int shared_sum;
  __shared__ unsigned shared_bits;
  if (threadIdx.x == 0) shared_sum = 0, shared_bits = 0;
  __syncthreads();
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&counters[0], 1);
  atomicAdd(&counters[1], g);
  atomicMax(&counters[2], g * 7 % 1000);
  atomicMin(&counters[3], -(g % 500));
  atomicInc(&uc[0], 99u);
  atomicDec(&uc[1], 1000u);
  atomicOr(&uc[2], 1u << (g % 32));
  atomicAnd(&uc[3], ~(1u << (g % 31)));
  atomicXor(&uc[4], static_cast<unsigned>(g));
  atomicAdd(fsum, 0.5f);
  atomicAdd(dsum, 0.25);
  atomicAdd(&wide[0], 1ull << 33);
  atomicAdd(&shared_sum, 2);
  atomicOr(&shared_bits, 1u << (threadIdx.x % 32));
  // A lock taken by compare-and-swap, one thread of each block at a time.
  if (threadIdx.x == 0) {
    while (atomicCAS(&counters[4], 0, 1) != 0) {
    }
    counters[5] += 1;
    __threadfence();
    atomicExch(&counters[4], 0);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&counters[6], shared_sum);
    atomicOr(&uc[5], shared_bits);
  }
}

static void check_atomics() {
  const int blocks = 64, threads = 128, n = blocks * threads;
  Device<int> counters(8);
  Device<unsigned> uc(6);
  Device<float> fsum(1);
  Device<double> dsum(1);
  Device<unsigned long long> wide(1);
  const unsigned start[6] = {0, 500, 0, 0xffffffffu, 0, 0};
  uc.put(start);
  atomics<<<blocks, threads>>>(counters.p, uc.p, fsum.p, dsum.p, wide.p);
  CHECK_CUDA(cudaGetLastError());
  int c[8];
  unsigned u[6];
  float f;
  double d;
  unsigned long long w;
  counters.get(c);
  uc.get(u);
  fsum.get(&f);
  dsum.get(&d);
  wide.get(&w);
  long long sum = 0;
  int max7 = 0;
  unsigned x = 0, dec = 500;
  for (int g = 0; g < n; ++g) sum += g, max7 = std::max(max7, g * 7 % 1000), x ^= static_cast<unsigned>(g);
  for (int k = 0; k < n; ++k) dec = (dec == 0 || dec > 1000u) ? 1000u : dec - 1;
  const bool ok = c[0] == n && c[1] == static_cast<int>(sum) && c[2] == max7 && c[3] == -499 && c[4] == 0 &&
                  c[5] == blocks && c[6] == 2 * n && u[0] == static_cast<unsigned>(n % 100) && u[1] == dec &&
                  u[2] == 0xffffffffu && u[3] == 0x80000000u && u[4] == x && u[5] == 0xffffffffu && f == 0.5f * n &&
                  d == 0.25 * n && w == (static_cast<unsigned long long>(n) << 33);
  char detail[200];
  std::snprintf(detail, sizeof detail, "%d %d %d %d %d %d %d / %u %u %x %x %x %x / %g %g %llx", c[0], c[1], c[2], c[3], c[4],
                c[5], c[6], u[0], u[1], u[2], u[3], u[4], u[5], f, d, w);
  report("atomics", ok, detail);
}

// ---- Warp-wide: shuffles, votes, ballots, matches ----

__global__ void warps(const int *in, int *out) {
  const int lane = threadIdx.x % 32;
  const int v = in[threadIdx.x];
  int k = threadIdx.x * 13;
  out[k++] = __shfl_sync(0xffffffffu, v, (lane + 5) % 32);
  out[k++] = __shfl_up_sync(0xffffffffu, v, 3);
  out[k++] = __shfl_down_sync(0xffffffffu, v, 4, 16);
  out[k++] = __shfl_xor_sync(0xffffffffu, v, 6, 8);
  out[k++] = __shfl_sync(0xffffffffu, v, 2, 8);
  out[k++] = static_cast<int>(__ballot_sync(0xffffffffu, v > 50));
  out[k++] = __all_sync(0xffffffffu, v >= 0);
  out[k++] = __any_sync(0xffffffffu, v == 77);
  out[k++] = static_cast<int>(__match_any_sync(0xffffffffu, v % 4));
  // In divergent code: only the odd lanes ballot and scan.
  int scan = v;
  if (lane % 2 == 1) {
    const unsigned odd = __activemask();
    out[k] = static_cast<int>(odd);
    out[k + 1] = static_cast<int>(__ballot_sync(odd, v % 3 == 0));
  } else {
    out[k] = 0;
    out[k + 1] = 0;
  }
  k += 2;
  for (int offset = 1; offset < 32; offset *= 2) {
    const int other = __shfl_up_sync(0xffffffffu, scan, offset);
    if (lane >= offset) scan += other;
  }
  out[k++] = scan;
  // Warp reductions: redux.sync where the architecture has it (sm_80 on), shuffles before.
#if __CUDA_ARCH__ >= 800
  out[k++] = __reduce_add_sync(0xffffffffu, v) + __reduce_max_sync(0xffffffffu, v) * 1000 +
             static_cast<int>(__reduce_xor_sync(0xffffffffu, static_cast<unsigned>(v))) * 1000000;
#else
  int sum = v, largest = v;
  unsigned bits = static_cast<unsigned>(v);
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    largest = max(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
    bits ^= __shfl_xor_sync(0xffffffffu, bits, offset);
  }
  out[k++] = sum + largest * 1000 + static_cast<int>(bits) * 1000000;
#endif
}

static void check_warps() {
  const int n = 64;
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = (i * 37 + 11) % 101;
  Device<int> in(n), out(n * 13);
  in.put(host);
  warps<<<1, n>>>(in.p, out.p);
  CHECK_CUDA(cudaGetLastError());
  int got[n * 13];
  out.get(got);
  std::string detail;
  for (int t = 0; t < n && detail.empty(); ++t) {
    const int lane = t % 32, base = t - lane;
    auto at = [&](int l) { return host[base + l]; };
    unsigned ballot = 0, odd_ballot = 0, match = 0;
    bool all = true, any = false;
    for (int l = 0; l < 32; ++l) {
      ballot |= (at(l) > 50 ? 1u : 0u) << l;
      all = all && at(l) >= 0;
      any = any || at(l) == 77;
      if (at(l) % 4 == at(lane) % 4) match |= 1u << l;
      if (l % 2 == 1 && at(l) % 3 == 0) odd_ballot |= 1u << l;
    }
    int scan = 0;
    for (int l = 0; l <= lane; ++l) scan += at(l);
    const int seg16 = lane / 16 * 16, seg8 = lane / 8 * 8;
    int sum = 0, largest = 0;
    unsigned xored = 0;
    for (int l = 0; l < 32; ++l) sum += at(l), largest = std::max(largest, at(l)), xored ^= static_cast<unsigned>(at(l));
    const int want[13] = {at((lane + 5) % 32),
                          lane >= 3 ? at(lane - 3) : at(lane),
                          lane + 4 < seg16 + 16 ? at(lane + 4) : at(lane),
                          at(seg8 + ((lane ^ 6) & 7)),
                          at(seg8 + 2),
                          static_cast<int>(ballot),
                          all,
                          any,
                          static_cast<int>(match),
                          lane % 2 == 1 ? static_cast<int>(0xaaaaaaaau) : 0,
                          lane % 2 == 1 ? static_cast<int>(odd_ballot) : 0,
                          scan,
                          static_cast<int>(static_cast<unsigned>(sum) + static_cast<unsigned>(largest) * 1000u +
                                           xored * 1000000u)};
    for (int k = 0; k < 13; ++k)
      if (got[t * 13 + k] != want[k]) {
        detail = "thread " + std::to_string(t) + " result " + std::to_string(k) + ": " + std::to_string(got[t * 13 + k]) +
                 " != " + std::to_string(want[k]);
        break;
      }
  }
  report("warps", detail.empty(), detail);
}

// ---- Device printf ----

__global__ void greet(int value, double ratio) {
  printf("block %d thread %d: value %d, ratio %.3f, hex %x, long %lld, text %s, char %c\n", blockIdx.x, threadIdx.x,
         value + threadIdx.x, ratio, 255 + threadIdx.x, -1234567890123ll, "device", 'A' + threadIdx.x);
}

static void check_printf() {
  std::fflush(stdout);
  greet<<<2, 2>>>(40, 0.125);
  CHECK_CUDA(cudaDeviceSynchronize());
  report("printf", true);
}

// ---- Launch errors, as the runtime reports them ----

__global__ void nothing() {}

static void check_launch_errors() {
  nothing<<<1, 1025>>>();
  const cudaError_t too_many = cudaGetLastError();
  nothing<<<dim3(1, 70000), 1>>>();
  const cudaError_t grid = cudaGetLastError();
  nothing<<<1, dim3(1, 1, 65)>>>();
  const cudaError_t depth = cudaGetLastError();
  nothing<<<1, 1>>>();
  const cudaError_t fine = cudaGetLastError();
  // The driver refuses a bad configuration with CUDA_ERROR_INVALID_VALUE; the runtime says
  // cudaErrorInvalidConfiguration where it checks the configuration itself first.
  auto refused = [](cudaError_t e) { return e == cudaErrorInvalidConfiguration || e == cudaErrorInvalidValue; };
  const bool ok = refused(too_many) && refused(grid) && refused(depth) && fine == cudaSuccess;
  report("launch_errors", ok,
         std::string(cudaGetErrorName(too_many)) + " " + cudaGetErrorName(grid) + " " + cudaGetErrorName(depth) + " " +
             cudaGetErrorName(fine));
}

// ---- Streams and events: work in a stream runs in order ----

__global__ void scale(float *data, float by, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * by + 1.0f;
}

static void check_streams() {
  const int n = 1000;
  float host[n];
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  Device<float> data(n);
  cudaStream_t stream;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaMemcpyAsync(data.p, host, sizeof host, cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int k = 0; k < 3; ++k) scale<<<(n + 127) / 128, 128, 0, stream>>>(data.p, 2.0f, n);
  CHECK_CUDA(cudaEventRecord(stop, stream));
  float got[n];
  CHECK_CUDA(cudaMemcpyAsync(got, data.p, sizeof got, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  bool ok = true;
  for (int i = 0; i < n; ++i) ok = ok && got[i] == ((host[i] * 2 + 1) * 2 + 1) * 2 + 1;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  report("streams", ok);
}

// ---- A faulting kernel, and a table of device pointers built by a kernel ----

__global__ void write_far(int *p) { p[threadIdx.x * (1 << 22)] = 1; }

static int fault() {
  Device<int> small(16);
  write_far<<<1, 32>>>(small.p);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t synchronized = cudaDeviceSynchronize();
  int host = 0;
  const cudaError_t copied = cudaMemcpy(&host, small.p, sizeof host, cudaMemcpyDeviceToHost);
  std::printf("launch %s, synchronize %s, copy %s\n", cudaGetErrorName(launched), cudaGetErrorName(synchronized),
              cudaGetErrorName(copied));
  return synchronized == cudaErrorIllegalAddress && copied == cudaErrorIllegalAddress ? 0 : 1;
}

__global__ void fill_table(float **table, float *const *buffers, int count) {
  const int i = threadIdx.x;
  if (i < count) table[i] = buffers[i];
}

static float **g_table;  // device memory: a table of device pointers a kernel wrote

// Four buffers, kept only in the device table; a fifth dropped. The table stays reachable
// from g_table, so the four are reachable through it and only the fifth is lost.
static int table() {
  float *buffers[4];
  for (float *&buffer : buffers) CHECK_CUDA(cudaMalloc(&buffer, 4096));
  float **staging;
  CHECK_CUDA(cudaMalloc(&staging, sizeof buffers));
  CHECK_CUDA(cudaMemcpy(staging, buffers, sizeof buffers, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMalloc(&g_table, sizeof buffers));
  fill_table<<<1, 32>>>(g_table, staging, 4);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(staging));  // the only copy of the pointers now is what the kernel wrote
  float *dropped;
  CHECK_CUDA(cudaMalloc(&dropped, 1000));
  std::memset(buffers, 0, sizeof buffers);
  std::printf("table built\n");
  return 0;
}

__global__ void tensor_cores(const half *a, const half *b, float *c) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

static int tensor() {
  Device<half> a(256), b(256);
  Device<float> c(256);
  tensor_cores<<<1, 32>>>(a.p, b.p, c.p);
  const cudaError_t launched = cudaGetLastError();
  std::printf("tensor launch %s\n", cudaGetErrorName(launched));
  return launched == cudaSuccess ? 1 : 0;
}

int main(int argc, char **argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  if (only == "fault") return fault();
  if (only == "table") return table();
  if (only == "tensor") return tensor();
  const struct {
    const char *name;
    void (*run)();
  } checks[] = {{"spaces", check_spaces},       {"integers", check_integers}, {"floats", check_floats},
                {"approximations", check_approximations}, {"divergence", check_divergence}, {"barriers", check_barriers},
                {"atomics", check_atomics},     {"warps", check_warps},       {"printf", check_printf},
                {"launch_errors", check_launch_errors}, {"streams", check_streams}};
  for (const auto &check : checks)
    if (only.empty() || only == check.name) check.run();
  return g_failures == 0 ? 0 : 1;
}
