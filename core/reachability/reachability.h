// Which of the program's live memory it can still reach: the classification of device
// allocations at a lease's end as reachable, indirectly lost or directly lost, the way
// LeakSanitizer classifies the host heap.
//
// Pure logic over a snapshot that the preload takes (interpose/reachability_scan.cpp): the
// program's roots (globals, thread stacks, registers, TLS), leaseguard's and the driver's
// own roots, and the nodes: live host heap blocks and live device allocations, each with
// where its words can be read. The snapshot is taken with every other thread stopped, so
// the classifier allocates nothing: the caller hands it scratch memory of scratch_bytes().
//
//   1. Owned: host blocks reachable from leaseguard's and the driver's roots are theirs (a
//      driver's table of the context's allocations, leaseguard's handle table). They are
//      never entered from the program's side, so their copies of device pointers never
//      count. Device allocations are never owned: they are the program's. From leaseguard's
//      roots only blocks it allocated itself are followed (Node::leaseguard_own): a handle
//      it keeps of another library's (the loader's record of the driver), or a stale word,
//      never makes the program's memory its own.
//   2. Reachable: everything reachable from the program's roots through nodes not owned.
//   3. The rest is lost. Within it, a node that another lost node points to is `indirect`,
//      unless the two are in one cycle that nothing else lost points to: each such cycle
//      (a strongly connected component with no lost predecessor) has one `direct` member,
//      its earliest device allocation, so a lost cycle never hides behind `indirect`.
//
// A word is a pointer to a node if it lies anywhere inside it (interior pointers count, as
// in LeakSanitizer); only 8-byte aligned words are read, and only inside the snapshot's
// readable ranges.
#pragma once

#include <cstddef>
#include <cstdint>

#include "python_ints.h"

namespace leaseguard::reachability {

enum class Class : uint8_t { Unchecked = 0, Direct = 1, Indirect = 2, Reachable = 3 };
const char *class_name(Class value) noexcept;  // "unchecked", "direct", "indirect", "reachable"

struct MemoryRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;
};

struct Node {
  uint64_t address = 0;
  uint64_t bytes = 0;
  // Where the node's words are read: the memory itself (host blocks), a copy (device memory
  // read back), or nullptr: treated as holding no pointers (beyond the device bound).
  const void *contents = nullptr;
  uint64_t contents_bytes = 0;
  uint64_t allocation_id = 0;   // the device allocation's id; 0 for a host heap block
  bool leaseguard_own = false;  // a host block leaseguard allocated for itself
  // Memory the program mapped itself. A heap block inside it (an allocator's arena: its
  // blocks are known one by one) stands for it, which is then left out.
  bool program_mapping = false;
  Class result = Class::Unchecked;
};

struct Snapshot {
  const MemoryRange *program_roots = nullptr;
  size_t program_root_count = 0;
  const MemoryRange *owner_roots = nullptr;  // leaseguard's and the driver's
  size_t owner_root_count = 0;
  Node *nodes = nullptr;  // in any order; a host block overlapped by another node is left out
  size_t node_count = 0;
  const MemoryRange *own_roots = nullptr;  // leaseguard's: they reach only its own blocks
  size_t own_root_count = 0;
  // The program's roots that hold the C library's malloc state (libc's globals): read as the
  // program's, save a word that is the header of the free chunk after a live block (a bin's
  // list pointer: it points into that block's last 8 bytes, which glibc lends the next
  // chunk's header, and says nothing of the block) or that points into device memory (libc
  // keeps none of the program's device pointers; the simulator's device memory lies in the
  // host heap, where the bins point into it as into any block).
  const MemoryRange *allocator_roots = nullptr;
  size_t allocator_root_count = 0;
  // Where memory may be read at all: sorted, disjoint ranges (the pages that can be read
  // without a fault that does work: interpose/scan/resident_pages.h). Roots and node contents
  // outside them are read as holding no pointers. nullptr: everywhere.
  const MemoryRange *readable = nullptr;
  size_t readable_count = 0;
  // A Python interpreter's int type object and its ints' layout (python_ints.h): a host node
  // that is such an int has its value read as one more word of it.
  uint64_t python_int_type = 0;
  PythonIntLayout python_int_layout = PythonIntLayout::None;
  uint64_t python_object_offset = 0;  // where objects begin in their blocks: 16 under debug hooks
};

struct Statistics {
  uint64_t scanned_bytes = 0;  // roots and node contents read
  uint64_t sort_ns = 0;        // ordering the nodes by address
  uint64_t flood_ns = 0;       // following pointers from the roots (owners' and program's)
  uint64_t lost_ns = 0;        // the components of what is lost
  uint64_t owned_blocks = 0;
  uint64_t lost_components = 0;
};

// Scratch memory classify() needs for `node_count` nodes.
size_t scratch_bytes(size_t node_count) noexcept;

// Sets every node's `result`. `scratch` must hold scratch_bytes(node_count) bytes, 8-aligned.
Statistics classify(Snapshot &snapshot, void *scratch) noexcept;

}  // namespace leaseguard::reachability
