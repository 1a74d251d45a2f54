// The classifier (core/reachability/reachability.h) over hand-built snapshots: each case names the class
// every node must get.
#include "reachability.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace leaseguard::reachability {
namespace {

// Memory that plays host blocks, device buffers and roots: words the test writes pointers into.
struct Memory {
  std::vector<uint64_t> words = std::vector<uint64_t>(64);
  uint64_t at(size_t word) const { return reinterpret_cast<uint64_t>(&words[word]); }
  MemoryRange range() const {
    return {reinterpret_cast<uintptr_t>(words.data()), reinterpret_cast<uintptr_t>(words.data() + words.size())};
  }
};

Node host_block(const Memory &memory) {
  Node node;
  node.address = memory.at(0);
  node.bytes = memory.words.size() * 8;
  node.contents = memory.words.data();
  node.contents_bytes = node.bytes;
  return node;
}

Node device(const Memory &memory, uint64_t id) {
  Node node = host_block(memory);
  node.allocation_id = id;
  return node;
}

struct Case {
  std::vector<MemoryRange> program_roots, owner_roots;
  std::vector<Node> nodes;
  std::vector<MemoryRange> own_roots = {};        // leaseguard's
  std::vector<MemoryRange> readable = {};         // empty: everywhere
  std::vector<MemoryRange> allocator_roots = {};  // the C library's (Snapshot::allocator_roots)

  // The class of the node with `id` (device) or at `address` (host) after classifying.
  std::vector<Node> classify() {
    Snapshot snapshot{program_roots.data(), program_roots.size(), owner_roots.data(), owner_roots.size(),
                      nodes.data(),         nodes.size(),         own_roots.data(),   own_roots.size()};
    std::sort(readable.begin(), readable.end(),
              [](const MemoryRange &a, const MemoryRange &b) { return a.begin < b.begin; });
    snapshot.allocator_roots = allocator_roots.data();
    snapshot.allocator_root_count = allocator_roots.size();
    snapshot.readable = readable.empty() ? nullptr : readable.data();
    snapshot.readable_count = readable.size();
    std::vector<uint64_t> scratch(scratch_bytes(nodes.size()) / 8 + 1);
    reachability::classify(snapshot, scratch.data());
    return nodes;
  }
  Class of(uint64_t id) const {
    for (const Node &node : nodes)
      if (node.allocation_id == id) return node.result;
    ADD_FAILURE() << "no node " << id;
    return Class::Unchecked;
  }
};

TEST(Reachability, APointerInARootMakesAnAllocationReachableEvenInsideIt) {
  Memory root, a, b;
  root.words[3] = a.at(0);
  root.words[9] = b.at(17);  // interior
  Case c{{root.range()}, {}, {device(a, 1), device(b, 2)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
  EXPECT_EQ(c.of(2), Class::Reachable);
}

// The first `words` words of `memory`, as a readable range.
MemoryRange first_words(const Memory &memory, size_t words) { return {memory.at(0), memory.at(words)}; }

// Memory outside the readable ranges (a page never touched, a guard page, memory unmapped) is
// read as holding no pointers, wherever it is read: in a root, in a block the program reaches,
// in a lost block, in a lost cycle.
TEST(Reachability, OnlyTheReadablePartsOfRootsAndBlocksAreRead) {
  Memory root, heap, lost_heap, seen, unseen_from_root, unseen_from_heap, hung, hidden_tail, devices[3];
  root.words[10] = seen.at(0);
  root.words[40] = unseen_from_root.at(0);  // past the readable part
  seen.words[2] = heap.at(0);
  heap.words[20] = hung.at(0);
  heap.words[50] = unseen_from_heap.at(0);
  lost_heap.words[3] = devices[0].at(0);   // a lost block's readable word: devices[0] hangs from it
  lost_heap.words[60] = devices[1].at(0);  // unreadable: devices[1] is lost on its own
  devices[2].words[1] = lost_heap.at(0);
  devices[2].words[62] = hidden_tail.at(0);  // unreadable: hidden_tail is lost on its own
  Case c{{root.range()},
         {},
         {device(seen, 1), host_block(heap), device(unseen_from_root, 2), device(unseen_from_heap, 3), device(hung, 4),
          host_block(lost_heap), device(devices[0], 5), device(devices[1], 6), device(devices[2], 7),
          device(hidden_tail, 8)}};
  c.readable = {first_words(root, 32),    seen.range(),       first_words(heap, 32),       first_words(lost_heap, 32),
                devices[0].range(),       devices[1].range(), first_words(devices[2], 32), unseen_from_root.range(),
                unseen_from_heap.range(), hung.range(),       hidden_tail.range()};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
  EXPECT_EQ(c.of(4), Class::Reachable);
  EXPECT_EQ(c.of(2), Class::Direct);
  EXPECT_EQ(c.of(3), Class::Direct);
  EXPECT_EQ(c.of(7), Class::Direct);
  EXPECT_EQ(c.of(5), Class::Indirect);
  EXPECT_EQ(c.of(6), Class::Direct);
  EXPECT_EQ(c.of(8), Class::Direct);
}

// glibc's malloc state in libc's globals points at the headers of free chunks; the header of
// the chunk after a live block lies in that block's last 8 bytes (glibc lends them to it).
// Such a word in the allocator's roots says nothing of the block: what only it points into
// stays lost. The same word in the program's own roots, or any other word into the block in
// the allocator's, still counts.
TEST(Reachability, TheAllocatorsPointerToTheNextFreeChunkDoesNotHoldTheBlockBefore) {
  Memory heap, device_memory, other_device, libc_globals, program_globals;
  // A 56-byte block at words[2..9): its header (word 1) says a 64-byte chunk in use, so the
  // next chunk's header is at words[2] + 64 - 16 = words[8].
  const size_t block = 2;
  heap.words[block - 1] = 64 | 1;
  heap.words[block] = device_memory.at(0);  // the block holds a device buffer
  Node holder;
  holder.address = heap.at(block);
  holder.bytes = 56;
  holder.contents = &heap.words[block];
  holder.contents_bytes = 56;
  libc_globals.words[4] = heap.at(block + 6);  // a bin's list head: the next chunk's header
  Case lost{{}, {}, {holder, device(device_memory, 1)}};
  lost.allocator_roots = {libc_globals.range()};
  lost.classify();
  EXPECT_NE(lost.of(1), Class::Reachable);
  // The same word as the program's own: a pointer to the block's last field.
  Case program{{libc_globals.range()}, {}, {holder, device(device_memory, 1)}};
  program.classify();
  EXPECT_EQ(program.of(1), Class::Reachable);
  // Another word of libc's into the block (a stdio buffer the program handed it, say).
  libc_globals.words[5] = heap.at(block + 1);
  Case held{{}, {}, {holder, device(device_memory, 1)}};
  held.allocator_roots = {libc_globals.range()};
  held.classify();
  EXPECT_EQ(held.of(1), Class::Reachable);
  // libc keeps no device pointer of the program's: a word of its into device memory (a bin's,
  // where the device memory is in the host heap) holds nothing. The program's does.
  Memory direct_root;
  direct_root.words[0] = other_device.at(3);
  Case device_root{{}, {}, {device(other_device, 2)}};
  device_root.allocator_roots = {direct_root.range()};
  device_root.classify();
  EXPECT_NE(device_root.of(2), Class::Reachable);
  Case programs{{direct_root.range()}, {}, {device(other_device, 2)}};
  programs.classify();
  EXPECT_EQ(programs.of(2), Class::Reachable);
}

TEST(Reachability, ReachableHostBlocksAndDeviceMemoryAreFollowed) {
  Memory root, heap, table, target;
  root.words[0] = heap.at(0);
  heap.words[5] = table.at(0);
  table.words[2] = target.at(0);  // a table of device pointers in device memory
  Case c{{root.range()}, {}, {host_block(heap), device(table, 1), device(target, 2)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
  EXPECT_EQ(c.of(2), Class::Reachable);
}

TEST(Reachability, NothingPointingIsDirectAndLostMemoryPointingIsIndirect) {
  Memory root, lost_heap, lost_device, a, b, c_memory;
  lost_heap.words[1] = a.at(0);
  lost_device.words[7] = b.at(8);
  root.words[0] = 0x1234;
  Case c{{root.range()},
         {},
         {host_block(lost_heap), device(lost_device, 1), device(a, 2), device(b, 3), device(c_memory, 4)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Direct);
  EXPECT_EQ(c.of(2), Class::Indirect);  // only from lost host memory
  EXPECT_EQ(c.of(3), Class::Indirect);  // only from lost device memory
  EXPECT_EQ(c.of(4), Class::Direct);
}

TEST(Reachability, ALostCycleHasOneDirectMemberItsEarliest) {
  Memory a, b, d, tail;
  a.words[0] = b.at(0);
  b.words[0] = d.at(0);
  d.words[0] = a.at(0);
  d.words[1] = tail.at(0);
  Case c{{}, {}, {device(b, 7), device(d, 9), device(a, 5), device(tail, 2)}};
  c.classify();
  EXPECT_EQ(c.of(5), Class::Direct);
  EXPECT_EQ(c.of(7), Class::Indirect);
  EXPECT_EQ(c.of(9), Class::Indirect);
  EXPECT_EQ(c.of(2), Class::Indirect);  // earlier, but hangs from the cycle
}

TEST(Reachability, ACycleHangingFromALostAllocationIsIndirect) {
  Memory head, a, b;
  head.words[0] = a.at(0);
  a.words[0] = b.at(0);
  b.words[0] = a.at(0);
  Case c{{}, {}, {device(a, 1), device(b, 2), device(head, 3)}};
  c.classify();
  EXPECT_EQ(c.of(3), Class::Direct);
  EXPECT_EQ(c.of(1), Class::Indirect);
  EXPECT_EQ(c.of(2), Class::Indirect);
}

TEST(Reachability, TheDriversTablesNeverCountEvenReachedFromTheProgram) {
  // The program holds the context handle; the driver's context lists the allocations.
  Memory program_global, driver_global, context, list, a;
  program_global.words[0] = context.at(0);
  driver_global.words[0] = context.at(0);
  context.words[4] = list.at(0);
  list.words[0] = a.at(0);
  Case c{{program_global.range()}, {driver_global.range()}, {host_block(context), host_block(list), device(a, 1)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Direct);
}

// leaseguard's roots reach only the blocks it allocated itself: its handle of another
// library's object, or a stale word in its memory, never makes the program's block its own
// (and the device memory only that block holds lost). Its own blocks still hide their copies
// of device pointers.
TEST(Reachability, LeaseguardsRootsOwnOnlyTheBlocksItAllocated) {
  Memory program_global, leaseguard_global, program_block, own_table, held, only_in_own_table;
  program_global.words[0] = program_block.at(0);
  program_block.words[2] = held.at(0);
  leaseguard_global.words[0] = program_block.at(8);  // a stale word, or another library's object
  leaseguard_global.words[1] = own_table.at(0);
  program_global.words[1] = own_table.at(0);  // a stale copy on the program's side
  own_table.words[0] = only_in_own_table.at(0);
  Node table = host_block(own_table);
  table.leaseguard_own = true;
  Case c{
      {program_global.range()}, {}, {host_block(program_block), table, device(held, 1), device(only_in_own_table, 2)}};
  c.own_roots = {leaseguard_global.range()};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
  EXPECT_EQ(c.of(2), Class::Direct);
}

TEST(Reachability, DisguisedPointersAndUnscannedDeviceMemoryHoldNoPointers) {
  Memory root, big, a, b;
  root.words[0] = a.at(0) ^ 0x5555555555555555ull;
  root.words[1] = big.at(0);
  big.words[0] = b.at(0);
  Node beyond_bound = device(big, 1);
  beyond_bound.contents = nullptr;
  Case c{{root.range()}, {}, {beyond_bound, device(a, 2), device(b, 3)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
  EXPECT_EQ(c.of(2), Class::Direct);
  EXPECT_EQ(c.of(3), Class::Direct);
}

TEST(Reachability, DeviceMemoryInsideADriversHostBlockStandsForThatMemory) {
  Memory root, heap_block;
  root.words[0] = heap_block.at(8);
  Node block = host_block(heap_block);
  Node inside = device(heap_block, 1);
  inside.address = heap_block.at(8);
  inside.bytes = 64;
  Case c{{root.range()}, {}, {block, inside}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
}

// A mapping the program made that holds heap blocks is an allocator's arena (one preloaded
// after leaseguard, which maps its own): its blocks, known one by one, stand for it, and
// what the rest of the arena holds (freed blocks' stale words) is never read.
TEST(Reachability, HeapBlocksInsideAProgramsMappingStandForIt) {
  Memory root, arena, held, stale;
  Node mapping = host_block(arena);
  mapping.program_mapping = true;
  Node block = host_block(arena);
  block.address = arena.at(8);
  block.bytes = block.contents_bytes = 8 * 8;
  block.contents = &arena.words[8];
  root.words[0] = arena.at(8);
  arena.words[10] = held.at(0);   // inside the live block
  arena.words[40] = stale.at(0);  // in the arena, outside every block
  Case c{{root.range()}, {}, {mapping, block, device(held, 1), device(stale, 2)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
  EXPECT_EQ(c.of(2), Class::Direct);
}

// With no heap block inside, the mapping is a block of its own: reachable through a pointer
// into it, and what it holds with it.
TEST(Reachability, AProgramsMappingIsABlockOfItsOwn) {
  Memory root, slab, held;
  Node mapping = host_block(slab);
  mapping.program_mapping = true;
  root.words[0] = slab.at(0);
  slab.words[33] = held.at(0);
  Case c{{root.range()}, {}, {mapping, device(held, 1)}};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Reachable);
}

TEST(Reachability, AMillionLostBlocksInAChainNeedNoRecursion) {
  std::vector<uint64_t> memory(1'000'000 * 2);
  std::vector<Node> nodes(1'000'000);
  for (size_t i = 0; i < nodes.size(); ++i) {
    memory[2 * i] = i + 1 < nodes.size() ? reinterpret_cast<uint64_t>(&memory[2 * (i + 1)]) : 0;
    nodes[i].address = reinterpret_cast<uint64_t>(&memory[2 * i]);
    nodes[i].bytes = 16;
    nodes[i].contents = &memory[2 * i];
    nodes[i].contents_bytes = 16;
    nodes[i].allocation_id = i + 1;
  }
  Case c{{}, {}, std::move(nodes)};
  c.classify();
  EXPECT_EQ(c.of(1), Class::Direct);
  EXPECT_EQ(c.of(500'000), Class::Indirect);
  EXPECT_EQ(c.of(1'000'000), Class::Indirect);
}

// A random graph large enough for every path of the lookups (coarse samples, the last stretch,
// the ring of pending words), checked against a plain search: exactly the nodes a breadth-
// first walk from the roots reaches are reachable, and of the rest, one with no lost
// predecessor is direct and one that is indirect has one.
TEST(Reachability, ARandomGraphGetsTheClassesOfAPlainSearch) {
  constexpr size_t kNodes = 20000, kRootWords = 600;
  std::mt19937_64 random(7);
  std::vector<uint64_t> memory(kNodes * 10);
  std::vector<Node> nodes(kNodes);
  std::vector<size_t> first_word(kNodes), word_count(kNodes);
  for (size_t i = 0; i < kNodes; ++i) {
    first_word[i] = i * 10 + random() % 2;  // gaps between nodes
    word_count[i] = 1 + random() % 8;
    nodes[i].address = reinterpret_cast<uint64_t>(&memory[first_word[i]]);
    nodes[i].bytes = word_count[i] * 8;
    nodes[i].contents = &memory[first_word[i]];
    nodes[i].contents_bytes = nodes[i].bytes;
    nodes[i].allocation_id = i + 1;
  }
  // A word: a pointer into a random node (sometimes inside it), or a value that points nowhere.
  auto random_word = [&](std::vector<size_t> *edges) -> uint64_t {
    if (random() % 3 == 0) return random() | (uint64_t{1} << 63);
    const size_t target = random() % kNodes;
    edges->push_back(target);
    return nodes[target].address + (random() % word_count[target]) * 8 + random() % 8;
  };
  std::vector<std::vector<size_t>> edges(kNodes);
  for (size_t i = 0; i < kNodes; ++i)
    for (size_t w = 0; w < word_count[i]; ++w)
      memory[first_word[i] + w] = random() % 4 == 0 ? random_word(&edges[i]) : 0;
  std::vector<uint64_t> roots(kRootWords);
  std::vector<size_t> from_roots;
  for (uint64_t &word : roots) word = random_word(&from_roots);

  std::vector<char> reached(kNodes, 0);
  std::vector<size_t> queue(from_roots);
  for (size_t at = 0; at < queue.size(); ++at) {
    if (reached[queue[at]] != 0) continue;
    reached[queue[at]] = 1;
    for (size_t next : edges[queue[at]]) queue.push_back(next);
  }
  std::vector<std::set<size_t>> lost_predecessors(kNodes);
  for (size_t i = 0; i < kNodes; ++i)
    if (reached[i] == 0)
      for (size_t next : edges[i])
        if (next != i) lost_predecessors[next].insert(i);

  Case c{{{reinterpret_cast<uintptr_t>(roots.data()), reinterpret_cast<uintptr_t>(roots.data() + roots.size())}},
         {},
         nodes};
  const std::vector<Node> classified = c.classify();
  size_t reachable = 0, direct = 0;
  for (size_t i = 0; i < kNodes; ++i) {
    const Class result = classified[i].result;
    if (reached[i] != 0) {
      ASSERT_EQ(result, Class::Reachable) << "node " << i;
      ++reachable;
      continue;
    }
    ASSERT_TRUE(result == Class::Direct || result == Class::Indirect) << "node " << i;
    if (lost_predecessors[i].empty()) {
      ASSERT_EQ(result, Class::Direct) << "node " << i;
    }
    if (result == Class::Indirect) {
      ASSERT_FALSE(lost_predecessors[i].empty()) << "node " << i;
    }
    direct += result == Class::Direct ? 1 : 0;
  }
  // Both kinds occur, so the checks above were not vacuous.
  EXPECT_GT(reachable, kNodes / 20);
  EXPECT_GT(direct, 0u);
  EXPECT_LT(reachable, kNodes);
}

}  // namespace
}  // namespace leaseguard::reachability
