#!/usr/bin/env bash
# Installs the build into a temporary prefix and checks the contract's layout, then runs
# the installed CLI (no environment) on the simulated GPU, and a find_package consumer.
set -euo pipefail
build=$1
example=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for file in bin/leaseguard lib/libleaseguard_preload.so lib/leaseguard/sim/libcuda.so.1 \
            include/leaseguard/leaseguard.h include/leaseguard/annotate.h include/leaseguard/session.hpp \
            lib/libleaseguard_api.so lib/leaseguard/sim/libamdhip64.so.5 \
            lib/cmake/leaseguard/leaseguardConfig.cmake lib/pkgconfig/leaseguard.pc; do
  [ -e "$prefix/$file" ] || { echo "missing after install: $file"; exit 1; }
done
# The systemd units start the leaseguard of the prefix they were installed under (not the one
# the build was configured with), and systemd finds nothing wrong in them.
for unit in system user; do
  grep -qx "ExecStart=$prefix/bin/leaseguard daemon.*" "$prefix/lib/systemd/$unit/leaseguard.service" ||
    { echo "the $unit unit does not start $prefix/bin/leaseguard:"; cat "$prefix/lib/systemd/$unit/leaseguard.service"; exit 1; }
done
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify "$prefix/lib/systemd/system/leaseguard.service"
  mkdir -m 0700 "$prefix/runtime"
  XDG_RUNTIME_DIR="$prefix/runtime" systemd-analyze --user verify "$prefix/lib/systemd/user/leaseguard.service"
else
  echo "note: no systemd-analyze here: the units were not verified"
fi
out=$("$prefix/bin/leaseguard" run --sim --out "$prefix/out" -- "$example" 2>&1)
echo "$out" | grep -q "SUMMARY: leaseguard: 14336 byte(s) leaked in 4 allocation(s)." || { echo "$out"; exit 1; }
echo "$out" | grep -q "in blur " || { echo "$out"; exit 1; }

# A consumer project finds the package and its imported targets.
mkdir -p "$prefix/consumer"
cat > "$prefix/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(leaseguard CONFIG REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE leaseguard::annotate)
enable_testing()
leaseguard_add_test(NAME leaky COMMAND "$example" OPTIONS --sim --quiet)
leaseguard_add_test(NAME clean COMMAND /bin/true OPTIONS --sim --quiet)
CMAKE
cat > "$prefix/consumer/main.c" <<'C'
#include <leaseguard/annotate.h>
int main(void) { return (int)LEASEGUARD_LEASE_BEGIN("x", 0, LEASEGUARD_REPORT); }
C
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer/build" >/dev/null
"$prefix/consumer/build/consumer"   # without the preload every annotation is a no-op: exit 0
# leaseguard_add_test: the leaky program's test fails with 23, in its own output directory.
(cd "$prefix/consumer/build" && ctest -R clean >/dev/null) || { echo "clean test failed"; exit 1; }
if (cd "$prefix/consumer/build" && ctest -R leaky --output-on-failure > "$prefix/leaky.log" 2>&1); then
  echo "the leaky test passed under leaseguard_add_test"; cat "$prefix/leaky.log"; exit 1
fi
ls "$prefix/consumer/build/leaseguard/leaky/latest/"*.journal >/dev/null || { echo "no per-test output directory"; exit 1; }

# A C++ consumer of leaseguard::api, written from docs/api.md: a session, handles,
# KernelArgs and a launch, on the installed simulator under the installed CLI.
mkdir -p "$prefix/api_consumer"
cat > "$prefix/api_consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(api_consumer CXX)
find_package(leaseguard CONFIG REQUIRED)
add_executable(api_consumer main.cpp)
target_link_libraries(api_consumer PRIVATE leaseguard::api)
CMAKE
cat > "$prefix/api_consumer/main.cpp" <<'CPP'
#include <leaseguard/session.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char **) {
  leaseguard::GpuSession session({.name = "consumer"});
  std::vector<unsigned> host(256, 0);
  {  // the handles go at the end of this block, before the session ends
    leaseguard::GpuMemHandle out = session.mem_alloc(host.size() * sizeof(unsigned));
    static const char module[] = "leaseguard-sim-module:fill_u32";
    leaseguard::GpuFunction fill = session.load_function(std::as_bytes(std::span(module)), "fill_u32");
    leaseguard::KernelArgs args;
    args.push_buffer(out).push(7u).push(static_cast<unsigned>(host.size()));
    session.launch(fill, {1}, {256}, args);
    session.mem_read(out, 0, std::as_writable_bytes(std::span(host)));
  }
  if (argc > 1) static leaseguard::GpuMemHandle kept = session.mem_alloc(4242);  // still held at end()
  std::printf("host[255] = %u, leaked %zu\n", host[255], session.end());
  return host[255] == 7 ? 0 : 1;
}
CPP
cmake -S "$prefix/api_consumer" -B "$prefix/api_consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/api_consumer/build" >/dev/null
"$prefix/bin/leaseguard" run --sim --quiet --fail-on-leak --out "$prefix/api-clean" -- "$prefix/api_consumer/build/api_consumer" \
  || { echo "the API consumer failed"; exit 1; }
if "$prefix/bin/leaseguard" run --sim --fail-on-leak --out "$prefix/api-leaky" \
     -- "$prefix/api_consumer/build/api_consumer" leak > "$prefix/api-leaky.log" 2>&1; then
  echo "the API consumer's leak was not reported"; cat "$prefix/api-leaky.log"; exit 1
fi
grep -q "Leak of 4242 byte(s)" "$prefix/api-leaky.log" || { echo "no 4242-byte leak"; cat "$prefix/api-leaky.log"; exit 1; }
# docs/ci.md's CMake recipe, taken from the page and built as written (tests/install_test.sh
# is given the source root): a GoogleTest test that leaks fails with exit status 23 under
# ctest, its SARIF is relative to the project, and a suppression makes it pass.
docs=$3
mkdir -p "$prefix/recipe"
awk '/^```cmake$/ {inside = 1; next} inside && /^```$/ {exit} inside {print}' "$docs/ci.md" > "$prefix/recipe/CMakeLists.txt"
grep -q "leaseguard_add_test(NAME kernels_test COMMAND kernels_test" "$prefix/recipe/CMakeLists.txt" \
  || { echo "docs/ci.md has no CMake recipe"; exit 1; }
cat > "$prefix/recipe/kernels_test.cpp" <<'CPP'
#include <dlfcn.h>
#include <gtest/gtest.h>

// The driver, found at run time (the simulator's under --sim).
template <typename F>
F driver(const char *name) {
  static void *library = dlopen("libcuda.so.1", RTLD_NOW);
  return library == nullptr ? nullptr : reinterpret_cast<F>(dlsym(library, name));
}

TEST(Kernels, ScratchBufferIsFreed) {
  int context[8], *current = context;
  unsigned long long scratch = 0;
  ASSERT_EQ(driver<int (*)(unsigned)>("cuInit")(0), 0);
  ASSERT_EQ(driver<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(reinterpret_cast<void **>(&current), 0), 0);
  ASSERT_EQ(driver<int (*)(void *)>("cuCtxSetCurrent")(current), 0);
  ASSERT_EQ(driver<int (*)(unsigned long long *, size_t)>("cuMemAlloc_v2")(&scratch, 4096), 0);
  scratch = 0;  // the error path forgets to free it
}
CPP
echo "# known leaks" > "$prefix/recipe/leaks.supp"
cmake -S "$prefix/recipe" -B "$prefix/recipe/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/recipe/build" >/dev/null
if (cd "$prefix/recipe/build" && ctest --output-on-failure > "$prefix/recipe.log" 2>&1); then
  echo "the recipe's leaky test passed"; cat "$prefix/recipe.log"; exit 1
fi
grep -q "Direct leak of 4096 byte(s)" "$prefix/recipe.log" || { echo "no leak in the recipe's test"; cat "$prefix/recipe.log"; exit 1; }
sarif="$prefix/recipe/build/leaseguard/kernels_test/leaseguard-report.sarif"
# Locations relative to the project's source directory (not the build tree, where the test
# runs), at the test's own line: the recipe's build type keeps debug information.
grep -q "\"uri\": \"file://$prefix/recipe/\"" "$sarif" && grep -q '"uri": "kernels_test.cpp"' "$sarif" \
  || { echo "SARIF not relative to the project, or without the test's file"; cat "$sarif"; exit 1; }
[ -s "$prefix/recipe/build/leaseguard/kernels_test/leaseguard-report.junit.xml" ] || { echo "no JUnit"; exit 1; }
# The page's steps for one set of reports, as written: the suite's leak in both files.
awk '/^<!-- doctest: skip: run against the CMake recipe above/ {found = 1; next}
     found && /^```sh$/ {inside = 1; next} inside && /^```$/ {exit} inside {print}' "$docs/ci.md" > "$prefix/recipe/gather.sh"
grep -q "leaseguard report build/leaseguard/" "$prefix/recipe/gather.sh" || { echo "docs/ci.md has no gathering steps"; exit 1; }
status=0
(cd "$prefix/recipe" && PATH="$prefix/bin:$PATH" bash -e gather.sh > "$prefix/gather.log" 2>&1) || status=$?
[ "$status" -ne 0 ] || { echo "the gathering steps hid the failed test"; cat "$prefix/gather.log"; exit 1; }
grep -q '"ruleId": "leaseguard/device-memory-leak"' "$prefix/recipe/leaseguard.sarif" \
  || { echo "the gathered SARIF has no result"; cat "$prefix/gather.log"; exit 1; }
grep -q 'testsuites name="leaseguard" tests="[1-9][0-9]*" failures="[1-9]' "$prefix/recipe/leaseguard-junit.xml" \
  || { echo "the gathered JUnit has no failed case"; cat "$prefix/recipe/leaseguard-junit.xml"; exit 1; }
echo "leak:^Kernels_ScratchBufferIsFreed_Test::TestBody()$" >> "$prefix/recipe/leaks.supp"
(cd "$prefix/recipe/build" && ctest > "$prefix/recipe-suppressed.log" 2>&1) \
  || { echo "the suppressed leak still failed"; cat "$prefix/recipe-suppressed.log"; exit 1; }

# pkg-config: a C program that links the lease C ABI instead of being preloaded, and the C++
# API consumer above, both built with nothing but `pkg-config --cflags --libs leaseguard`.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cat > "$prefix/c_abi.c" <<'C'
#include <leaseguard/leaseguard.h>
#include <stdio.h>
int main(void) {
  leaseguard_lease_t lease = leaseguard_lease_begin("linked", 0, LEASEGUARD_REPORT);
  if (lease == 0 || leaseguard_lease_enter(lease) != 0 || leaseguard_lease_leave() != 0) return 1;
  if (leaseguard_lease_leave() != -1) return 2; /* nothing entered any more */
  printf("leaked %d\n", leaseguard_lease_end(lease));
  return 0;
}
C
# shellcheck disable=SC2046  # pkg-config's words are meant to split
cc -o "$prefix/c_abi" "$prefix/c_abi.c" $(pkg-config --cflags --libs leaseguard) || { echo "the C ABI did not link"; exit 1; }
[ "$("$prefix/c_abi")" = "leaked 0" ] || { echo "the linked C ABI did not run its own core"; exit 1; }
"$prefix/bin/leaseguard" run --sim --quiet --fail-on-leak --out "$prefix/c-abi-run" -- "$prefix/c_abi" >/dev/null \
  || { echo "the linked C ABI failed under the preload"; exit 1; }
# shellcheck disable=SC2046
c++ -std=c++20 -o "$prefix/api_pkgconfig" "$prefix/api_consumer/main.cpp" $(pkg-config --cflags --libs leaseguard) \
  || { echo "the C++ API did not link through pkg-config"; exit 1; }
"$prefix/bin/leaseguard" run --sim --quiet --fail-on-leak --out "$prefix/api-pkgconfig" -- "$prefix/api_pkgconfig" \
  || { echo "the pkg-config API consumer failed"; exit 1; }
echo "install layout ok"
