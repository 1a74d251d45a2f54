// Vector addition with leaseguard's C++ API: device buffers as handles, arguments packed by
// KernelArgs, and nothing to free by hand. On the simulator the module is the simulator's
// host-implemented kernels; on a GPU, pass a cubin or HSA code object that has vector_add.
//
//   leaseguard run --sim -- build/examples/api_vector_add
#include <leaseguard/session.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

std::vector<std::byte> module_image(int argc, char **argv) {
  if (argc > 1) {  // a real module, e.g. built with nvcc -cubin or hipcc --genco
    std::ifstream file(argv[1], std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    auto view = std::as_bytes(std::span(bytes));
    return {view.begin(), view.end()};
  }
  static const char simulated[] = "leaseguard-sim-module:vector_add";
  auto view = std::as_bytes(std::span(simulated));
  return {view.begin(), view.end()};
}

}  // namespace

// Adds two vectors on the device; the buffers are freed when their handles go at the end.
bool add_vectors(leaseguard::GpuSession &session, std::span<const std::byte> module) {
  constexpr unsigned n = 1 << 16;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  leaseguard::GpuMemHandle da = session.mem_alloc(n * sizeof(float));
  leaseguard::GpuMemHandle db = session.mem_alloc(n * sizeof(float));
  leaseguard::GpuMemHandle dc = session.mem_alloc(n * sizeof(float));
  session.mem_write(da, 0, std::as_bytes(std::span(a)));
  session.mem_write(db, 0, std::as_bytes(std::span(b)));

  leaseguard::GpuFunction add = session.load_function(module, "vector_add");
  leaseguard::KernelArgs args;
  args.push_buffer(da).push_buffer(db).push_buffer(dc).push(n);
  session.launch(add, {(n + 255) / 256}, {256}, args);

  session.mem_read(dc, 0, std::as_writable_bytes(std::span(c)));
  std::printf("c[0] = %.1f, c[%u] = %.1f\n", c[0], n - 1, c[n - 1]);
  return c[0] == 3.0f && c[n - 1] == 3.0f;
}

int main(int argc, char **argv) {
  try {
    leaseguard::GpuSession session({.name = "vector-add"});
    std::printf("backend: %s\n", session.backend_name().c_str());
    bool correct = add_vectors(session, module_image(argc, argv));
    std::printf("leaked: %zu\n", session.end());  // 0: every buffer went with its handle
    return correct ? 0 : 1;
  } catch (const leaseguard::Error &error) {
    std::fprintf(stderr, "vector_add: %s\n", error.what());
    return 2;
  }
}
