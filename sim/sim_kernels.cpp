// The simulator's host-implemented kernels (see sim_kernels.h).
#include "sim_kernels.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "lg_cuda.h"
#include "sim_device.h"

namespace leaseguard::sim {
namespace {

constexpr char kImagePrefix[] = "leaseguard-sim-module:";

template <typename T>
T argument(const KernelLaunch &launch, size_t index) {
  T value;
  std::memcpy(&value, launch.arguments[index], sizeof value);
  return value;
}

bool device_range(const void *pointer, size_t bytes) {
  return SimDriver::instance().range_valid(reinterpret_cast<uint64_t>(pointer), bytes);
}

int vector_add(const KernelLaunch &launch) {
  auto *a = argument<const float *>(launch, 0);
  auto *b = argument<const float *>(launch, 1);
  auto *c = argument<float *>(launch, 2);
  unsigned n = std::min(argument<unsigned>(launch, 3), launch.threads);
  if (n == 0) return CUDA_SUCCESS;
  if (!device_range(a, n * sizeof(float)) || !device_range(b, n * sizeof(float)) || !device_range(c, n * sizeof(float)))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  for (unsigned i = 0; i < n; ++i) c[i] = a[i] + b[i];
  return CUDA_SUCCESS;
}

int fill_u32(const KernelLaunch &launch) {
  auto *out = argument<unsigned *>(launch, 0);
  auto value = argument<unsigned>(launch, 1);
  unsigned n = std::min(argument<unsigned>(launch, 2), launch.threads);
  if (n == 0) return CUDA_SUCCESS;
  if (!device_range(out, n * sizeof(unsigned))) return CUDA_ERROR_ILLEGAL_ADDRESS;
  for (unsigned i = 0; i < n; ++i) out[i] = value;
  return CUDA_SUCCESS;
}

struct alignas(16) Float4 {
  float x, y, z, w;
};

int mixed_args(const KernelLaunch &launch) {
  auto c = argument<char>(launch, 0);
  auto d = argument<double>(launch, 1);
  auto f = argument<Float4>(launch, 2);
  auto c2 = argument<char>(launch, 3);
  auto *out = argument<uint64_t *>(launch, 4);
  if (!device_range(out, 7 * sizeof(uint64_t))) return CUDA_ERROR_ILLEGAL_ADDRESS;
  out[0] = static_cast<uint64_t>(static_cast<unsigned char>(c));
  std::memcpy(&out[1], &d, sizeof d);
  const float floats[4] = {f.x, f.y, f.z, f.w};
  for (int i = 0; i < 4; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &floats[i], sizeof bits);
    out[2 + i] = bits;
  }
  out[6] = static_cast<uint64_t>(static_cast<unsigned char>(c2));
  return CUDA_SUCCESS;
}

const SimKernel kKernels[] = {
    {"vector_add", {{8, 8}, {8, 8}, {8, 8}, {4, 4}}, vector_add},
    {"fill_u32", {{8, 8}, {4, 4}, {4, 4}}, fill_u32},
    {"mixed_args", {{1, 1}, {8, 8}, {16, 16}, {1, 1}, {8, 8}}, mixed_args},
};

std::mutex g_modules_mutex;
std::set<const SimModule *> &modules() {
  static auto *live = new std::set<const SimModule *>;  // never destroyed: late unloads at exit
  return *live;
}

size_t align_up(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

SimModule *load_module(const void *image) {
  if (image == nullptr) return nullptr;
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, kImagePrefix, sizeof kImagePrefix - 1) != 0) return nullptr;
  auto *module = new SimModule;
  std::string names(text + sizeof kImagePrefix - 1);
  size_t start = 0;
  while (start <= names.size()) {
    size_t end = names.find(',', start);
    if (end == std::string::npos) end = names.size();
    std::string name = names.substr(start, end - start);
    for (const SimKernel &kernel : kKernels)
      if (name == kernel.name) module->kernels.push_back(&kernel);
    start = end + 1;
  }
  std::lock_guard lock(g_modules_mutex);
  modules().insert(module);
  return module;
}

bool module_valid(const SimModule *module) {
  std::lock_guard lock(g_modules_mutex);
  return modules().count(module) != 0;
}

void unload_module(SimModule *module) {
  {
    std::lock_guard lock(g_modules_mutex);
    modules().erase(module);
  }
  delete module;
}

const SimKernel *find_kernel(const SimModule *module, const char *name) {
  if (name == nullptr) return nullptr;
  for (const SimKernel *kernel : module->kernels)
    if (std::strcmp(kernel->name, name) == 0) return kernel;
  return nullptr;
}

bool kernel_valid(const SimKernel *kernel) {
  for (const SimKernel &known : kKernels)
    if (&known == kernel) return true;
  return false;
}

int resolve_arguments(const SimKernel &kernel, void **params, void **extra, void *buffer_pointer_marker,
                      void *buffer_size_marker, void *end_marker, KernelLaunch &launch) {
  if ((params == nullptr) == (extra == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  launch.arguments.clear();
  if (params != nullptr) {
    for (size_t i = 0; i < kernel.parameters.size(); ++i) {
      if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      launch.arguments.push_back(params[i]);
    }
    return CUDA_SUCCESS;
  }
  const unsigned char *buffer = nullptr;
  const size_t *buffer_size = nullptr;
  for (size_t i = 0; extra[i] != end_marker; i += 2) {
    if (i > 16) return CUDA_ERROR_INVALID_VALUE;  // no END in sight
    if (extra[i] == buffer_pointer_marker) buffer = static_cast<const unsigned char *>(extra[i + 1]);
    else if (extra[i] == buffer_size_marker) buffer_size = static_cast<const size_t *>(extra[i + 1]);
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (buffer == nullptr || buffer_size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t offset = 0;
  for (const KernelParameter &parameter : kernel.parameters) {
    offset = align_up(offset, parameter.alignment);
    launch.arguments.push_back(buffer + offset);
    offset += parameter.size;
  }
  return offset == *buffer_size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace leaseguard::sim

namespace leaseguard::sim {
namespace {

// The name a C++ kernel was declared with, from its Itanium mangling: _Z<length><name>...
std::string unmangled_base(const char *name) {
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  const char *digits = name + 2;
  size_t length = 0;
  while (*digits >= '0' && *digits <= '9') length = length * 10 + static_cast<size_t>(*digits++ - '0');
  if (length == 0 || std::strlen(digits) < length) return name;
  return std::string(digits, length);
}

}  // namespace

const SimKernel *stand_in_for(const char *name) {
  if (name == nullptr) return nullptr;
  const std::string base = unmangled_base(name);
  for (const SimKernel &kernel : kKernels)
    if (base == kernel.name) return &kernel;
  return nullptr;
}

}  // namespace leaseguard::sim
