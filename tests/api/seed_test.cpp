// One test per sentence of the seed document (shared/seed/GpuMemHandle.md), in its order.
// The sentence each test holds is quoted above it.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>
#include <unordered_set>
#include <vector>

#include "api_test_support.h"
#include "leaseguard/session.hpp"

namespace leaseguard::testing {
namespace {

std::vector<std::byte> bytes_of(const std::string &text) {
  auto view = std::as_bytes(std::span(text.data(), text.size()));
  return {view.begin(), view.end()};
}

// "RAII handle to a device memory allocation within a GPU session."
TEST(Seed, AHandleIsADeviceAllocationOfItsSession) {
  GpuSession session({.name = "seed-1"});
  GpuMemHandle handle = session.mem_alloc(1024);
  EXPECT_NE(handle.raw(), 0u);
  EXPECT_EQ(handle.size(), 1024u);
  EXPECT_FALSE(handle.freed());
  GpuSession other({.name = "seed-1-other"});
  std::vector<std::byte> data(16);
  EXPECT_THROW(other.mem_write(handle, 0, data), Error);  // not that session's memory
}

// "GpuMemHandle is a RAII handle. It is Clone but not Copy."
TEST(Seed, CopyingIsSharingNeverABitCopy) {
  static_assert(std::is_copy_constructible_v<GpuMemHandle> && std::is_copy_assignable_v<GpuMemHandle>);
  static_assert(!std::is_trivially_copyable_v<GpuMemHandle>, "a bit copy would not count the new owner");
  static_assert(std::is_nothrow_destructible_v<GpuMemHandle>);
  GpuSession session({.name = "seed-2"});
  GpuMemHandle first = session.mem_alloc(64);
  GpuMemHandle second = first;  // a clone: one more owner of the same allocation
  EXPECT_EQ(first, second);
  EXPECT_EQ(first.raw(), second.raw());
}

// "When the last clone is dropped it automatically calls gpu_session_mem_free for the
// underlying device allocation, unless you explicitly freed it first via GpuSession::mem_free."
TEST(Seed, TheLastCopyDroppedFreesTheAllocationOnce) {
  GpuSession session({.name = "seed-3"});
  const uint64_t frees_before = sim_calls("cuMemFree_v2");
  {
    GpuMemHandle first = session.mem_alloc(64);
    std::vector<GpuMemHandle> copies(5, first);
    copies.clear();
    EXPECT_EQ(sim_calls("cuMemFree_v2"), frees_before);  // `first` still holds it
  }
  EXPECT_EQ(sim_calls("cuMemFree_v2"), frees_before + 1);
  EXPECT_EQ(session.end(), 0u);  // nothing left for the lease to report
}

TEST(Seed, AnExplicitFreeFirstLeavesNothingForTheDrops) {
  GpuSession session({.name = "seed-3b"});
  const uint64_t frees_before = sim_calls("cuMemFree_v2");
  {
    GpuMemHandle handle = session.mem_alloc(64);
    GpuMemHandle copy = handle;
    session.mem_free(std::move(handle));
    EXPECT_EQ(sim_calls("cuMemFree_v2"), frees_before + 1);
  }
  EXPECT_EQ(sim_calls("cuMemFree_v2"), frees_before + 1);  // the copy's drop did nothing
}

// "The intended pattern is: mem_alloc, mem_write, then either explicitly free with
// mem_free, or just let `h` go out of scope; Drop frees it."
TEST(Seed, TheIntendedPatternEitherWay) {
  GpuSession session({.name = "seed-4"});
  const auto data = bytes_of("intended pattern");
  {
    GpuMemHandle h = session.mem_alloc(1024);
    session.mem_write(h, 0, data);
    session.mem_free(std::move(h));
  }
  {
    GpuMemHandle h = session.mem_alloc(1024);
    session.mem_write(h, 0, data);
  }
  EXPECT_EQ(session.end(), 0u);
}

// "prior to the SDK polish wave this type was Copy, which meant a ? between mem_alloc and
// mem_free could silently leak the device allocation until lease expiry. Removing Copy is
// what makes the RAII guarantee work"
TEST(Seed, AnEarlyExitBetweenAllocAndFreeDoesNotLeak) {
  GpuSession session({.name = "seed-5"});
  auto step = [&] {
    GpuMemHandle h = session.mem_alloc(4096);
    std::vector<std::byte> too_big(8192);
    session.mem_write(h, 0, too_big);  // throws: the early exit
    session.mem_free(std::move(h));    // never reached
  };
  EXPECT_THROW(step(), Error);
  EXPECT_EQ(session.end(), 0u);
}

// "if you previously relied on copying handles around, clone them explicitly. Cloned handles
// share the same underlying allocation and the same freed state"
TEST(Seed, CopiesShareTheFreedState) {
  GpuSession session({.name = "seed-6"});
  GpuMemHandle handle = session.mem_alloc(64);
  GpuMemHandle copy = handle;
  session.mem_free(handle);
  EXPECT_TRUE(copy.freed());
  EXPECT_TRUE(handle.freed());
  std::vector<std::byte> out(8);
  try {
    session.mem_read(copy, 0, out);
    ADD_FAILURE() << "reading freed memory did not throw";
  } catch (const Error &error) {
    EXPECT_EQ(error.kind(), ErrorKind::HandleFreed);
  }
  EXPECT_THROW(session.mem_free(copy), Error);  // no double free through a copy either
}

// "only the last clone to drop will issue the mem_free."
TEST(Seed, OnlyTheLastOfManyCopiesFrees) {
  GpuSession session({.name = "seed-7"});
  const uint64_t frees_before = sim_calls("cuMemFree_v2");
  auto *copies = new std::vector<GpuMemHandle>(100, session.mem_alloc(64));
  for (size_t i = 0; i + 1 < copies->size(); ++i) {
    (*copies)[i] = GpuMemHandle();
    EXPECT_EQ(sim_calls("cuMemFree_v2"), frees_before);
  }
  delete copies;
  EXPECT_EQ(sim_calls("cuMemFree_v2"), frees_before + 1);
}

// "Drop is best-effort: it silently swallows hostcall errors and never panics."
TEST(Seed, DropSwallowsDriverErrors) {
  GpuSession session({.name = "seed-8"});
  GpuMemHandle handle = session.mem_alloc(64);
  GpuMemHandle copy = handle;
  const uint64_t frees = sim_calls("cuMemFree_v2");
  sim_fail("cuMemFree_v2:1=1");  // the next free fails (N counts from now)
  handle = GpuMemHandle();       // noexcept: a throw here would terminate the test
  copy = GpuMemHandle();         // the last copy: the drop tries the free, which fails
  EXPECT_EQ(sim_calls("cuMemFree_v2"), frees + 1);
  EXPECT_TRUE(copy.freed());
  EXPECT_NO_THROW(session.mem_alloc(64));  // the session carries on
}

TEST(Seed, ContextDestroyedOrDriverUnloadingCountAsFreed) {
  GpuSession session({.name = "seed-8b"});
  for (int status : {4 /* CUDA_ERROR_DEINITIALIZED */, 709 /* CUDA_ERROR_CONTEXT_IS_DESTROYED */}) {
    GpuMemHandle handle = session.mem_alloc(64);
    sim_fail("cuMemFree_v2:1=" + std::to_string(status));
    EXPECT_NO_THROW(session.mem_free(std::move(handle))) << status;
  }
  GpuMemHandle handle = session.mem_alloc(64);
  sim_fail("cuMemFree_v2:1=1");
  try {
    session.mem_free(handle);
    ADD_FAILURE() << "an explicit free the driver refused did not throw";
  } catch (const Error &error) {
    EXPECT_EQ(error.kind(), ErrorKind::Driver);
    EXPECT_EQ(error.code(), 1);
    EXPECT_EQ(error.name(), "CUDA_ERROR_INVALID_VALUE");
  }
}

// "If the lease has already expired, the daemon's lease-expiry teardown chain has already
// freed the device memory, so Drop suppresses the call entirely in that case."
TEST(Seed, ADropAfterTheLeaseExpiredAndReclaimedCallsNothing) {
  std::optional<GpuSession> lease;
  const uint64_t frees_before = sim_calls("cuMemFree_v2");
  GpuMemHandle handle = allocate_before_expiry(lease, {.name = "seed-9", .ttl = std::chrono::milliseconds(100)}, 4096);
  GpuSession &session = *lease;
  ASSERT_TRUE(wait_for_expiry(session));
  const uint64_t after_reclaim = sim_calls("cuMemFree_v2");
  EXPECT_EQ(after_reclaim, frees_before + 1);  // the teardown freed it
  EXPECT_TRUE(handle.freed());                 // reclaimed counts as freed
  handle = GpuMemHandle();
  EXPECT_EQ(sim_calls("cuMemFree_v2"), after_reclaim);  // the drop did not call the driver
}

// "The raw u64 device pointer is exposed via GpuMemHandle::raw for callers who need to pack
// it into kernel argument buffers manually. Prefer KernelArgs::push_buffer which handles the
// marshalling."
TEST(Seed, RawIsTheDevicePointerThatPushBufferMarshals) {
  GpuSession session({.name = "seed-10"});
  GpuMemHandle handle = session.mem_alloc(64);
  KernelArgs args;
  args.push_buffer(handle);
  uint64_t packed = 0;
  std::memcpy(&packed, args.buffer().data(), sizeof packed);
  EXPECT_EQ(packed, handle.raw());
  KernelArgs manual;
  manual.push(handle.raw());
  EXPECT_TRUE(std::equal(manual.buffer().begin(), manual.buffer().end(), args.buffer().begin()));
}

// "pub fn raw(&self) -> u64: Raw device pointer value as returned by the bridge (cuMemAlloc
// on CUDA, hipMalloc on HIP)."
TEST(Seed, RawIsWhatTheBackendReturned) {
  for (Backend backend : {Backend::Cuda, Backend::Hip}) {
    GpuSession session({.name = "seed-11", .backend = backend});
    EXPECT_EQ(session.backend(), backend);
    const char *allocate = backend == Backend::Cuda ? "cuMemAlloc_v2" : "hipMalloc";
    const char *library = backend == Backend::Cuda ? "libcuda.so.1" : "libamdhip64.so.5";
    const uint64_t before = sim_calls(allocate, library);
    GpuMemHandle handle = session.mem_alloc(256);
    EXPECT_EQ(sim_calls(allocate, library), before + 1);
    EXPECT_EQ(handle.raw() % 256, 0u);  // a device allocation's alignment
    const auto data = bytes_of("backend bytes");
    session.mem_write(handle, 0, data);
    std::vector<std::byte> back(data.size());
    std::memcpy(back.data(), reinterpret_cast<const void *>(handle.raw()), back.size());  // the simulator's memory
    EXPECT_EQ(back, data);
  }
}

// "impl Clone for GpuMemHandle: fn clone_from(&mut self, source: &Self): Performs
// copy-assignment from source."
TEST(Seed, CopyAssignmentReleasesWhatTheTargetHeld) {
  GpuSession session({.name = "seed-12"});
  GpuMemHandle a = session.mem_alloc(64);
  GpuMemHandle b = session.mem_alloc(64);
  const uint64_t before = sim_calls("cuMemFree_v2");
  a = b;  // a was the last owner of its allocation
  EXPECT_EQ(sim_calls("cuMemFree_v2"), before + 1);
  EXPECT_EQ(a, b);
}

// "impl Debug for GpuMemHandle: Formats the value using the given formatter."
TEST(Seed, PrintingSaysPointerSizeBackendAndState) {
  GpuSession session({.name = "seed-13"});
  GpuMemHandle handle = session.mem_alloc(100);
  std::ostringstream live, freed, empty;
  live << handle;
  std::ostringstream hex;
  hex << std::hex << handle.raw();
  EXPECT_NE(live.str().find("0x" + hex.str()), std::string::npos) << live.str();
  EXPECT_NE(live.str().find("100 bytes"), std::string::npos);
  EXPECT_NE(live.str().find("cuda device 0"), std::string::npos);
  session.mem_free(handle);
  freed << handle;
  EXPECT_NE(freed.str().find("freed"), std::string::npos);
  empty << GpuMemHandle();
  EXPECT_EQ(empty.str(), "GpuMemHandle(empty)");
}

// "impl Drop for GpuMemHandle: Executes the destructor for this type."
TEST(Seed, TheDestructorIsTheDrop) {
  GpuSession session({.name = "seed-14"});
  const uint64_t before = sim_calls("cuMemFree_v2");
  { GpuMemHandle handle = session.mem_alloc(64); }
  EXPECT_EQ(sim_calls("cuMemFree_v2"), before + 1);
}

// "impl PartialEq / Eq for GpuMemHandle: Tests for self and other values to be equal, and is
// used by ==. fn ne: Tests for !=."
TEST(Seed, EqualityIsTheSameAllocation) {
  GpuSession session({.name = "seed-15"});
  GpuMemHandle a = session.mem_alloc(64);
  GpuMemHandle b = session.mem_alloc(64);
  GpuMemHandle a2 = a;
  EXPECT_TRUE(a == a2);
  EXPECT_TRUE(a != b);
  EXPECT_EQ(GpuMemHandle(), GpuMemHandle());
  std::unordered_set<GpuMemHandle> set{a, a2, b};
  EXPECT_EQ(set.size(), 2u);
}

}  // namespace
}  // namespace leaseguard::testing
