#include "sim_ptx_launch.h"

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ptx/ptx_machine.h"
#include "sim_device.h"

namespace leaseguard::sim {
namespace {

// The limits of a Hopper GPU (compute capability 9.0), as the simulated device reports them.
constexpr unsigned kMaxBlockThreads = 1024;
constexpr unsigned kMaxBlock[3] = {1024, 1024, 64};
constexpr unsigned kMaxGrid[3] = {2147483647u, 65535u, 65535u};
constexpr unsigned kMaxSharedPerBlock = 227 * 1024;

std::string readable_name(const std::string &name) {
  int status = -1;
  char *demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string readable = status == 0 ? demangled : name;
  std::free(demangled);
  return readable;
}

// Says once per kernel why it does not run.
void refuse_once(LibraryKernel &kernel, const std::string &why) {
  if (kernel.refused.exchange(true)) return;
  std::fprintf(stderr, "leaseguard-sim: kernel %s cannot run on the simulator: %s\n",
               readable_name(kernel.name).c_str(), why.c_str());
}

std::string architectures(const DeviceCode &code) {
  std::string names;
  for (unsigned sm : code.machine_code) names += (names.empty() ? "sm_" : ", sm_") + std::to_string(sm);
  return names.empty() ? "no architecture named" : names;
}

// The launch's argument buffer: from kernelParams (a pointer per parameter) or from `extra`
// (the buffer packed as the parameters are laid out).
CUresult arguments_of(const ptx::Kernel &kernel, void **params, void **extra, std::vector<unsigned char> &out) {
  out.assign(kernel.arguments_size, 0);
  if ((params == nullptr) == (extra == nullptr) && !kernel.parameters.empty()) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr) {
    for (size_t i = 0; i < kernel.parameters.size(); ++i) {
      if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out.data() + kernel.parameters[i].offset, params[i], kernel.parameters[i].size);
    }
    return CUDA_SUCCESS;
  }
  if (extra == nullptr) return CUDA_SUCCESS;
  const void *buffer = nullptr;
  size_t size = 0;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr)
      size = *static_cast<size_t *>(extra[i + 1]);
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (buffer == nullptr || size < kernel.arguments_size) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(out.data(), buffer, kernel.arguments_size);
  return CUDA_SUCCESS;
}

// LEASEGUARD_SIM_KERNEL_STATS=1: a line on stderr for each launch, with its speed (bench/).
bool kernel_statistics() {
  static const bool wanted = [] {
    const char *value = std::getenv("LEASEGUARD_SIM_KERNEL_STATS");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return wanted;
}

bool range_of(uint64_t address, uint64_t *base, uint64_t *size) {
  size_t bytes = 0;
  if (SimDriver::instance().address_range(address, base, &bytes) != CUDA_SUCCESS) return false;
  *size = bytes;
  return true;
}

}  // namespace

CUresult launch_device_code(LibraryKernel &kernel, const unsigned grid[3], const unsigned block[3],
                            unsigned dynamic_shared, void **kernel_params, void **extra) {
  SimDriver &driver = SimDriver::instance();
  if (CUresult sticky = driver.sticky_error(); sticky != CUDA_SUCCESS) return sticky;
  SimLibrary *library = kernel.library;
  if (!library_valid(library)) return CUDA_ERROR_INVALID_HANDLE;
  if (kernel.device_code == nullptr) {
    if (library->code.ptx.empty()) {
      refuse_once(kernel, "its code is machine code only (" + architectures(library->code) +
                              "); the simulator runs PTX (nvcc embeds it unless -gencode names only sm_ targets)");
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    refuse_once(kernel, library->ptx_error.empty() ? "its PTX does not define it"
                                                   : "its PTX does not decode: " + library->ptx_error);
    return CUDA_ERROR_INVALID_PTX;
  }
  const ptx::Kernel &code = *kernel.device_code;
  if (!code.refusal.empty()) {
    refuse_once(kernel, "it uses " + code.refusal);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
  for (int i = 0; i < 3; ++i)
    if (grid[i] == 0 || block[i] == 0 || grid[i] > kMaxGrid[i] || block[i] > kMaxBlock[i])
      return CUDA_ERROR_INVALID_VALUE;
  if (threads > kMaxBlockThreads) return CUDA_ERROR_INVALID_VALUE;
  if (uint64_t{code.static_shared} + dynamic_shared > kMaxSharedPerBlock) return CUDA_ERROR_INVALID_VALUE;

  std::vector<unsigned char> arguments;
  if (CUresult status = arguments_of(code, kernel_params, extra, arguments); status != CUDA_SUCCESS) return status;
  ptx::LaunchSymbols symbols;
  for (const std::string &name : library->program->globals) {
    uint64_t address = 0;
    size_t size = 0;
    (void)library_variable(library, name.c_str(), &address, &size);  // 0 where it has none: a fault if used
    symbols.globals.push_back(address);
  }
  ptx::LaunchShape shape;
  for (int i = 0; i < 3; ++i) shape.grid[i] = grid[i], shape.block[i] = block[i];
  shape.dynamic_shared = dynamic_shared;
  ptx::DeviceMemory memory;
  memory.range_of = &range_of;
  const auto started = std::chrono::steady_clock::now();
  const ptx::LaunchOutcome outcome = ptx::run_kernel(*library->program, code, shape, arguments, symbols, memory);
  if (kernel_statistics()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const unsigned long long blocks = uint64_t{grid[0]} * grid[1] * grid[2];
    std::fprintf(stderr,
                 "leaseguard-sim: kernel %s: %llu block(s) on %u thread(s), %llu thread-instructions in %.6f s: %.1f "
                 "million a second a thread\n",
                 readable_name(kernel.name).c_str(), blocks, outcome.workers,
                 static_cast<unsigned long long>(outcome.thread_instructions), seconds,
                 outcome.thread_instructions / seconds / 1e6 / std::max(outcome.workers, 1u));
  }
  if (!outcome.printed.empty()) std::fwrite(outcome.printed.data(), 1, outcome.printed.size(), stdout);
  CUresult status = CUDA_SUCCESS;
  switch (outcome.status) {
    case ptx::LaunchStatus::Done: return CUDA_SUCCESS;
    case ptx::LaunchStatus::IllegalAddress: status = CUDA_ERROR_ILLEGAL_ADDRESS; break;
    case ptx::LaunchStatus::MisalignedAddress: status = CUDA_ERROR_MISALIGNED_ADDRESS; break;
    case ptx::LaunchStatus::Trap: status = CUDA_ERROR_LAUNCH_FAILED; break;
    case ptx::LaunchStatus::Assert: status = CUDA_ERROR_ASSERT; break;
  }
  std::fprintf(stderr, "leaseguard-sim: kernel %s: %s\n", readable_name(kernel.name).c_str(), outcome.message.c_str());
  // As on a device, the launch itself was accepted: the fault is what the context's next
  // synchronization, copy or launch reports.
  driver.set_sticky_error(status);
  return CUDA_SUCCESS;
}

}  // namespace leaseguard::sim
