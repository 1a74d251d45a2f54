// The classification of reachability.h: two floods and a strongly connected components
// pass over what is lost, in scratch memory, with no allocation.
#include "reachability.h"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "lg_assert.h"

namespace leaseguard::reachability {

const char *class_name(Class value) noexcept {
  switch (value) {
    case Class::Direct: return "direct";
    case Class::Indirect: return "indirect";
    case Class::Reachable: return "reachable";
    case Class::Unchecked: break;
  }
  return "unchecked";
}

namespace {

constexpr uint32_t kNone = UINT32_MAX;
// Set in a node's contents_bytes (by sorted position) where its contents are not all inside
// one readable range: they are then read piece by piece.
constexpr uint64_t kPartlyReadable = uint64_t{1} << 63;
// Set there where the node is a Python int object: its value is read as one more word of it
// (python_ints.h).
constexpr uint64_t kPythonInt = uint64_t{1} << 62;
constexpr uint64_t kContentsFlags = kPartlyReadable | kPythonInt;

enum State : uint8_t { kLost = 0, kOwned = 1, kReachable = 2, kIgnored = 3 };
// What a node is (Scratch::device).
enum NodeKind : uint8_t { kHostNode = 0, kDeviceNode = 1, kOwnHostNode = 2 };

// Reads the words of memory the program may have poisoned for a sanitizer (stack redzones,
// freed-but-quarantined blocks it still points into): reading them is the point.
__attribute__((no_sanitize("address", "thread"))) inline uint64_t load_word(const uint64_t *at) noexcept {
  return *static_cast<const volatile uint64_t *>(at);
}

uint64_t now_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

// Every node's address with its place in the caller's array: what the radix sort orders.
struct Keyed {
  uint64_t address;
  uint64_t bytes;
  uint32_t node;
  uint32_t host;  // 1: a host block (0: a device allocation, which sorts first at one address)
};

// One sample per kSampleStride sorted starts, and one coarse sample per kSampleStride samples:
// a lookup searches the coarse samples (small enough to stay in the nearest cache), then one
// stretch of samples, then one stretch of starts, instead of a binary search over all starts
// whose every step misses the cache.
constexpr size_t kSampleStride = 64;

struct Scratch {
  uint64_t *starts;  // nodes' addresses, sorted: the lookup's keys, dense for the cache
  uint64_t *sizes;   // the same nodes' sizes
  uint64_t *samples;
  uint64_t *coarse;
  uint32_t *order;  // sorted position -> the node in the caller's array
  // What the floods read of each node, by sorted position: the caller's nodes lie apart
  // from each other, and every read of one there would miss the cache.
  const void **contents;
  uint64_t *contents_bytes;
  uint8_t *device;  // NodeKind
  uint8_t *state;
  uint8_t *has_lost_predecessor;  // by component
  // Used only after the sort; before it, the same memory holds the sort's two arrays.
  uint64_t *call_position;  // the next word of call_node's contents to read
  uint32_t *index;
  uint32_t *low;
  uint32_t *work;  // the floods' stack
  uint32_t *component;
  uint32_t *tarjan_stack;
  uint32_t *call_node;
  Keyed *keyed;
  Keyed *keyed_spare;

  static size_t bytes_for(size_t n) noexcept {
    // The sort's two arrays of 24-byte keys share the 40 bytes a node of the later passes takes.
    return n * (sizeof(uint64_t) * 5 + sizeof(uint32_t) * 7 + sizeof(uint8_t) * 3 + 16) +
           (n / kSampleStride + 1 + n / kSampleStride / kSampleStride + 1) * sizeof(uint64_t) + 256;
  }
  Scratch(void *memory, size_t n) noexcept {
    auto *at = static_cast<char *>(memory);
    auto take = [&](size_t bytes) {
      char *here = at;
      at += (bytes + 15) & ~size_t{15};
      return here;
    };
    starts = reinterpret_cast<uint64_t *>(take(n * 8));
    sizes = reinterpret_cast<uint64_t *>(take(n * 8));
    samples = reinterpret_cast<uint64_t *>(take((n / kSampleStride + 1) * 8));
    coarse = reinterpret_cast<uint64_t *>(take((n / kSampleStride / kSampleStride + 1) * 8));
    order = reinterpret_cast<uint32_t *>(take(n * 4));
    contents = reinterpret_cast<const void **>(take(n * 8));
    contents_bytes = reinterpret_cast<uint64_t *>(take(n * 8));
    device = reinterpret_cast<uint8_t *>(take(n));
    state = reinterpret_cast<uint8_t *>(take(n));
    has_lost_predecessor = reinterpret_cast<uint8_t *>(take(n));
    // Two arrays of n keys (24 bytes each): the later passes' arrays, and n * 16 bytes more.
    keyed = reinterpret_cast<Keyed *>(at);
    keyed_spare = keyed + n;
    call_position = reinterpret_cast<uint64_t *>(take(n * 8));
    index = reinterpret_cast<uint32_t *>(take(n * 4));
    low = reinterpret_cast<uint32_t *>(take(n * 4));
    work = reinterpret_cast<uint32_t *>(take(n * 4));
    component = reinterpret_cast<uint32_t *>(take(n * 4));
    tarjan_stack = reinterpret_cast<uint32_t *>(take(n * 4));
    call_node = reinterpret_cast<uint32_t *>(take(n * 4));
    take(n * 16);  // the rest of the keys' room
  }
};

// Sorts `keys` by address (stable: nodes sharing an address keep their order), 11 bits a
// pass, skipping the passes whose digit every address shares (most of an address's high
// bits, in one process). Returns where the sorted keys ended up.
// How many of the sorted `values` are at most `key`. A binary search without branches: the
// classifier looks up every word that might be a pointer, and a search whose every step is a
// coin-flip branch costs several times one whose steps are conditional moves.
inline size_t count_not_above(const uint64_t *values, size_t n, uint64_t key) noexcept {
  if (n == 0) return 0;
  const uint64_t *base = values;
  while (n > 1) {
    const size_t half = n / 2;
    base = base[half] <= key ? base + half : base;
    n -= half;
  }
  return static_cast<size_t>(base - values) + (*base <= key ? 1 : 0);
}

Keyed *radix_sort(Keyed *keys, Keyed *spare, size_t n) noexcept {
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (size_t i = 0; i < n; ++i) {
    all_or |= keys[i].address;
    all_and &= keys[i].address;
  }
  const uint64_t varying = all_or ^ all_and;
  size_t counts[kBuckets];
  for (int shift = 0; shift < 64; shift += kBits) {
    if (((varying >> shift) & (kBuckets - 1)) == 0) continue;
    std::memset(counts, 0, sizeof counts);
    for (size_t i = 0; i < n; ++i) ++counts[(keys[i].address >> shift) & (kBuckets - 1)];
    size_t total = 0;
    for (size_t &count : counts) {
      const size_t here = count;
      count = total;
      total += here;
    }
    for (size_t i = 0; i < n; ++i) spare[counts[(keys[i].address >> shift) & (kBuckets - 1)]++] = keys[i];
    std::swap(keys, spare);
  }
  return keys;
}

class Classifier {
 public:
  Classifier(Snapshot &snapshot, void *scratch) noexcept
      : nodes_(snapshot.nodes),
        count_(snapshot.node_count),
        s_(scratch, snapshot.node_count),
        readable_(snapshot.readable),
        readable_count_(snapshot.readable_count),
        python_int_type_(snapshot.python_int_type),
        python_int_layout_(snapshot.python_int_layout),
        python_object_offset_(snapshot.python_object_offset) {
    LG_ASSERT(readable_ranges_are_sorted());
    LG_ASSERT(count_ < kNone);  // positions fit 32 bits, with kNone apart
    LG_ASSERT(reinterpret_cast<uintptr_t>(scratch) % 8 == 0);
    LG_ASSERT(count_ == 0 || nodes_ != nullptr);
  }

  Statistics run(const Snapshot &snapshot) noexcept {
    const uint64_t started = now_ns();
    prepare();
    const uint64_t sorted = now_ns();
    // 1. What leaseguard and the driver reach from their own roots is theirs; leaseguard's
    // reach only the blocks it allocated.
    only_leaseguards_ = true;
    for (size_t i = 0; i < snapshot.own_root_count; ++i) scan_range(snapshot.own_roots[i], kOwned);
    flood(kOwned);
    only_leaseguards_ = false;
    for (size_t i = 0; i < snapshot.owner_root_count; ++i) scan_range(snapshot.owner_roots[i], kOwned);
    flood(kOwned);
    // 2. What the program reaches.
    for (size_t i = 0; i < snapshot.program_root_count; ++i) scan_range(snapshot.program_roots[i], kReachable);
    for (size_t i = 0; i < snapshot.allocator_root_count; ++i) scan_allocator_range(snapshot.allocator_roots[i]);
    flood(kReachable);
    const uint64_t flooded = now_ns();
    // 3. What is lost: direct or indirect.
    classify_lost();
    stats_.sort_ns = sorted - started;
    stats_.flood_ns = flooded - sorted;
    stats_.lost_ns = now_ns() - flooded;
    for (size_t i = 0; i < count_; ++i) {
      if (s_.state[i] == kReachable) node(i).result = Class::Reachable;
      else if (s_.state[i] == kOwned) ++stats_.owned_blocks;
      // Device memory is never owned: each kept device allocation has its class.
      LG_ASSERT(s_.device[i] != kDeviceNode || s_.state[i] == kIgnored || node(i).result != Class::Unchecked);
    }
    return stats_;
  }

  // The node at sorted position i.
  Node &node(size_t i) const noexcept { return nodes_[s_.order[i]]; }

 private:
  void prepare() noexcept {
    for (size_t i = 0; i < count_; ++i) {
      nodes_[i].result = Class::Unchecked;
      s_.keyed[i] =
          Keyed{nodes_[i].address, nodes_[i].bytes, static_cast<uint32_t>(i), nodes_[i].allocation_id != 0 ? 0u : 1u};
    }
    const Keyed *sorted = radix_sort(s_.keyed, s_.keyed_spare, count_);
    LG_ASSERT(sorted == s_.keyed || sorted == s_.keyed_spare);
    uint64_t covered_to = 0;
    size_t last_kept = kNone;
    for (size_t i = 0; i < count_; ++i) {
      const Keyed &here = sorted[i];
      LG_ASSERT(here.node < count_);
      LG_ASSERT(i == 0 || sorted[i - 1].address <= here.address);  // in address order
      // The caller's nodes are read in address order, which is not theirs: fetch ahead.
      if (i + 16 < count_) __builtin_prefetch(&nodes_[sorted[i + 16].node]);
      s_.order[i] = here.node;
      s_.starts[i] = here.address;
      s_.sizes[i] = here.bytes;
      s_.contents[i] = nodes_[here.node].contents;
      s_.contents_bytes[i] = nodes_[here.node].contents_bytes;
      if (!wholly_readable(s_.contents[i], s_.contents_bytes[i])) s_.contents_bytes[i] |= kPartlyReadable;
      else if (python_int_(here.host != 0, s_.contents[i], s_.contents_bytes[i]) != 0)
        s_.contents_bytes[i] |= kPythonInt;
      s_.device[i] = here.host == 0 ? kDeviceNode : nodes_[here.node].leaseguard_own ? kOwnHostNode : kHostNode;
      s_.state[i] = kLost;
      s_.has_lost_predecessor[i] = 0;
      // Nodes overlap where device memory lives in a host block of the driver's (a
      // simulator's device memory): the device allocation stands for that memory. And where
      // heap blocks lie in a mapping the program made (an allocator's arena): they stand for it.
      if (last_kept != kNone && here.address < covered_to) {
        const bool keep_this =
            (here.host == 0 && sorted[last_kept].host != 0) ||
            (here.host != 0 && !nodes_[here.node].program_mapping && nodes_[sorted[last_kept].node].program_mapping);
        if (!keep_this) {
          s_.state[i] = kIgnored;
          continue;
        }
        s_.state[last_kept] = kIgnored;
      }
      last_kept = i;
      covered_to = here.address + here.bytes;
    }
    LG_ASSERT(kept_nodes_are_disjoint());
    // The sort's memory is free now: what the component pass uses starts fresh.
    for (size_t i = 0; i < count_; ++i) {
      s_.index[i] = kNone;
      s_.component[i] = kNone;
    }
    for (size_t i = 0; i < count_; i += kSampleStride) s_.samples[i / kSampleStride] = s_.starts[i];
    sample_count_ = (count_ + kSampleStride - 1) / kSampleStride;
    for (size_t i = 0; i < sample_count_; i += kSampleStride) s_.coarse[i / kSampleStride] = s_.samples[i];
    coarse_count_ = (sample_count_ + kSampleStride - 1) / kSampleStride;
    low_ = UINT64_MAX;
    uint64_t high = 0;
    for (size_t i = 0; i < count_; ++i) {
      if (s_.state[i] == kIgnored) continue;
      low_ = std::min(low_, s_.starts[i]);
      high = std::max(high, s_.starts[i] + s_.sizes[i]);
    }
    span_ = high > low_ ? high - low_ : 0;
    LG_ASSERT(sample_count_ <= count_ / kSampleStride + 1 && coarse_count_ <= sample_count_ / kSampleStride + 1);
    LG_ASSERT(coarse_count_ * kSampleStride >= sample_count_);  // every sample under a coarse one
  }

  // The nodes kept (not ignored) lie apart, in address order: a word points into one at most.
  bool kept_nodes_are_disjoint() const noexcept {
    uint64_t kept_end = 0;
    for (size_t i = 0; i < count_; ++i) {
      if (s_.state[i] == kIgnored) continue;
      if (s_.starts[i] < kept_end) return false;
      kept_end = s_.starts[i] + s_.sizes[i];
    }
    return true;
  }

  // The node that `word` points into, or kNone.
  uint32_t find(uint64_t word) const noexcept {
    if (word - low_ >= span_) return kNone;
    const size_t sample = stretch_of(word);
    return sample == kNoStretch ? kNone : find_in_stretch(word, sample);
  }

  // The stretch of kSampleStride starts where `word`'s node would start (its sample's index),
  // or kNoStretch. Pointers read one after another often lead into one stretch (an array of
  // blocks allocated in turn): the last stretch is tried before the search of all samples.
  static constexpr size_t kNoStretch = SIZE_MAX;
  size_t stretch_of(uint64_t word) const noexcept {
    if (in_last_stretch(word)) return last_sample_;
    const size_t coarse = coarse_stretch_of(word);
    return coarse == kNoStretch ? kNoStretch : stretch_in(word, coarse);
  }

  bool in_last_stretch(uint64_t word) const noexcept {
    const size_t last = last_sample_;
    return word >= s_.samples[last] && (last + 1 == sample_count_ || word < s_.samples[last + 1]);
  }

  // The stretch of samples `word` is searched in (its coarse sample's index), or kNoStretch.
  size_t coarse_stretch_of(uint64_t word) const noexcept {
    const size_t not_above = count_not_above(s_.coarse, coarse_count_, word);
    return not_above == 0 ? kNoStretch : not_above - 1;
  }

  // The stretch of starts within the coarse stretch `coarse`, which holds `word`'s.
  size_t stretch_in(uint64_t word, size_t coarse) const noexcept {
    const size_t from = coarse * kSampleStride;
    last_sample_ = from + count_not_above(s_.samples + from, std::min(sample_count_ - from, kSampleStride), word) - 1;
    LG_ASSERT(last_sample_ < sample_count_ && s_.samples[last_sample_] <= word);
    return last_sample_;
  }

  uint32_t find_in_stretch(uint64_t word, size_t sample) const noexcept {
    const size_t from = sample * kSampleStride;
    auto i = static_cast<uint32_t>(from +
                                   count_not_above(s_.starts + from, std::min(count_ - from, kSampleStride), word) - 1);
    // Among nodes sharing a start (a host block and the device memory at its start), the
    // device allocation sorts first and the other is ignored.
    LG_ASSERT(i < count_ && s_.starts[i] <= word);  // the stretch holds the word's start
    while (i > 0 && s_.starts[i - 1] == s_.starts[i] && s_.state[i] == kIgnored) --i;
    if (s_.state[i] == kIgnored || word - s_.starts[i] >= s_.sizes[i]) return kNone;
    LG_ASSERT(word >= s_.starts[i] && word - s_.starts[i] < s_.sizes[i]);
    return i;
  }

  // Whether [memory, memory + bytes) lies in one readable range. Nodes come in address
  // order, so the range the last one lay in is tried first.
  bool wholly_readable(const void *memory, uint64_t bytes) const noexcept {
    if (readable_ == nullptr || memory == nullptr || bytes == 0) return true;
    if (readable_count_ == 0) return false;
    const auto begin = reinterpret_cast<uintptr_t>(memory);
    const MemoryRange *range = readable_ + last_readable_;
    if (!(range->begin <= begin && begin < range->end)) {
      range = readable_at_or_after(begin);
      if (range == readable_ + readable_count_ || range->begin > begin) return false;
      last_readable_ = static_cast<size_t>(range - readable_);
    }
    return bytes <= range->end - begin;
  }

  // The first readable range that ends past `address` (readable_ + readable_count_ if none).
  const MemoryRange *readable_at_or_after(uintptr_t address) const noexcept {
    return std::upper_bound(readable_, readable_ + readable_count_, address,
                            [](uintptr_t a, const MemoryRange &range) { return a < range.end; });
  }

  bool readable_ranges_are_sorted() const noexcept {
    for (size_t i = 0; i < readable_count_; ++i)
      if (readable_[i].end <= readable_[i].begin || (i > 0 && readable_[i].begin < readable_[i - 1].end)) return false;
    return true;
  }

  // The next readable piece of [at, end): its start (end if none) and, in `piece_end`, its end.
  uintptr_t next_readable(uintptr_t at, uintptr_t end, uintptr_t &piece_end) const noexcept {
    const MemoryRange *range = readable_at_or_after(at);
    if (range == readable_ + readable_count_ || range->begin >= end) {
      piece_end = end;
      return end;
    }
    piece_end = std::min<uintptr_t>(range->end, end);
    return std::max<uintptr_t>(range->begin, at);
  }

  template <typename Visit>
  void for_each_word(const void *memory, uint64_t bytes, Visit visit) noexcept {
    if ((bytes & kPythonInt) != 0) {  // wholly readable: its value, then its words
      const uint64_t value = python_int_(true, memory, bytes & ~kContentsFlags);
      if (value - low_ < span_) visit(value);
    }
    if ((bytes & kPartlyReadable) == 0 && wholly_readable(memory, bytes & ~kContentsFlags)) {
      for_each_word_in_place(memory, bytes & ~kContentsFlags, visit);
      return;
    }
    const auto begin = reinterpret_cast<uintptr_t>(memory);
    const uintptr_t end = begin + (bytes & ~kContentsFlags);
    for (uintptr_t at = begin, piece_end; (at = next_readable(at, end, piece_end)) < end; at = piece_end)
      for_each_word_in_place(reinterpret_cast<const void *>(at), piece_end - at, visit);
  }

  template <typename Visit>
  void for_each_word_in_place(const void *memory, uint64_t bytes, Visit visit) noexcept {
    auto begin = (reinterpret_cast<uintptr_t>(memory) + 7) & ~uintptr_t{7};
    uintptr_t end = (reinterpret_cast<uintptr_t>(memory) + bytes) & ~uintptr_t{7};
    if (memory == nullptr || end <= begin) return;
    stats_.scanned_bytes += end - begin;
    for (auto *word = reinterpret_cast<const uint64_t *>(begin); word < reinterpret_cast<const uint64_t *>(end);
         ++word) {
      const uint64_t value = load_word(word);
      if (value - low_ < span_) visit(value);
    }
  }

  // Words that may be pointers wait a few places in a ring while the stretch of starts each
  // is searched in (and their states) is fetched: in memory that points all over the heap,
  // each search would otherwise wait on a cache miss of its own, one after another.
  void mark(uint64_t word, State as) noexcept {
    const size_t sample = stretch_of(word);
    if (sample != kNoStretch) fetch_stretch(word, sample, as);
  }

  void fetch_stretch(uint64_t word, size_t sample, State as) noexcept {
    const uint64_t *stretch = s_.starts + sample * kSampleStride;
    for (size_t line = 0; line < kSampleStride; line += 8) __builtin_prefetch(stretch + line);
    __builtin_prefetch(s_.state + sample * kSampleStride);
    if (starts_fetched_.full()) {
      const Pending oldest = starts_fetched_.pop();
      mark_found(find_in_stretch(oldest.word, oldest.stretch), as);
    }
    starts_fetched_.push(Pending{word, sample});
  }

  // Marks what waits in the ring; returns whether anything did.
  bool mark_pending(State as) noexcept {
    if (starts_fetched_.empty()) return false;
    while (!starts_fetched_.empty()) {
      const Pending oldest = starts_fetched_.pop();
      mark_found(find_in_stretch(oldest.word, oldest.stretch), as);
    }
    return true;
  }

  void mark_found(uint32_t target, State as) noexcept {
    if (target == kNone || s_.state[target] != kLost) return;
    // Device memory is never owned; leaseguard's roots own only what it allocated.
    if (as == kOwned && (s_.device[target] == kDeviceNode || (only_leaseguards_ && s_.device[target] != kOwnHostNode)))
      return;
    LG_ASSERT(target < count_ && s_.state[target] == kLost && work_size_ < count_);  // each node pushed once
    s_.state[target] = as;
    s_.work[work_size_++] = target;
  }

  void scan_range(const MemoryRange &range, State as) noexcept {
    if (range.end <= range.begin) return;
    for_each_word(reinterpret_cast<const void *>(range.begin), range.end - range.begin,
                  [&](uint64_t word) { mark(word, as); });  // clipped to what is readable
  }

  // An allocator's roots (Snapshot::allocator_roots): each word found at once, and left out
  // where it is the header of the free chunk that follows a live block, or points into device
  // memory. The C library keeps no device pointer of the program's; where device memory lies
  // in the host heap (the simulator's), its bins point into it as into any block.
  void scan_allocator_range(const MemoryRange &range) noexcept {
    if (range.end <= range.begin) return;
    for_each_word(reinterpret_cast<const void *>(range.begin), range.end - range.begin, [&](uint64_t word) {
      const uint32_t target = find(word);
      if (target == kNone || s_.device[target] == kDeviceNode || next_chunk_header(target, word)) return;
      mark_found(target, kReachable);
    });
  }

  // Whether `word` is where glibc puts the header of the chunk after host node `index`: the
  // block's own header (its chunk's size, 8 bytes before it) gives the chunk's end, and the
  // next chunk's header starts 16 bytes before that. Only where the header is one glibc
  // writes for a block of this size (not mmapped, the size within one rounding of the block's).
  bool next_chunk_header(uint32_t index, uint64_t word) const noexcept {
    const Node &block = node(index);
    const uint64_t header_at = block.address - 8;
    if (block.address < 8 || !wholly_readable(reinterpret_cast<const void *>(header_at), 8)) return false;
    uint64_t size = 0;
    std::memcpy(&size, reinterpret_cast<const void *>(header_at), 8);
    if ((size & 2) != 0) return false;  // mmapped: no chunk follows
    size &= ~uint64_t{7};
    const bool glibc_size = size == std::max<uint64_t>(32, (block.bytes + 8 + 15) & ~uint64_t{15});
    return glibc_size && word == block.address - 16 + size;
  }

  void flood(State as) noexcept {
    do {
      while (work_size_ > 0) {
        prefetch_ahead();
        const uint32_t next = s_.work[--work_size_];
        LG_ASSERT(next < count_ && s_.state[next] == as);
        for_each_word(s_.contents[next], s_.contents_bytes[next], [&](uint64_t word) { mark(word, as); });
      }
    } while (mark_pending(as));
  }

  // The contents the flood reads next, fetched ahead: where a million small blocks lie
  // spread over the heap, each read of one misses the cache, and a flood that waits on each
  // in turn reads a few hundred MB/s. The stack's next entries are the likeliest next (a
  // node's own pointers push above them, and then these wait a little longer, still fetched).
  void prefetch_ahead() const noexcept {
    constexpr size_t kPlaceAhead = 16, kContentsAhead = 8;
    if (work_size_ > kPlaceAhead) __builtin_prefetch(&s_.contents[s_.work[work_size_ - kPlaceAhead]]);
    if (work_size_ > kContentsAhead) __builtin_prefetch(s_.contents[s_.work[work_size_ - kContentsAhead]]);
  }

  void classify_lost() noexcept {
    const uint32_t components = find_lost_components();
    stats_.lost_components = components;
    assign_lost_classes(components);
  }

  // Sets each lost node's component (Tarjan's strongly connected components, iterative: a
  // lost program may hold a million lost blocks in a chain); returns how many there are.
  uint32_t find_lost_components() noexcept {
    uint32_t next_index = 0, components = 0;
    size_t tarjan_size = 0;
    for (uint32_t root = 0; root < count_; ++root) {
      if (s_.state[root] != kLost || s_.index[root] != kNone) continue;
      size_t depth = 0;
      auto enter = [&](uint32_t v) {
        LG_ASSERT(v < count_ && s_.state[v] == kLost && s_.index[v] == kNone);
        LG_ASSERT(depth < count_ && tarjan_size < count_);  // each node entered once
        s_.index[v] = s_.low[v] = next_index++;
        s_.tarjan_stack[tarjan_size++] = v;
        s_.call_node[depth] = v;
        s_.call_position[depth] = 0;
        ++depth;
      };
      enter(root);
      while (depth > 0) {
        const uint32_t v = s_.call_node[depth - 1];
        uint32_t descend = kNone;
        uint64_t position = s_.call_position[depth - 1];
        const auto *words = static_cast<const uint64_t *>(s_.contents[v]);
        const bool partly = (s_.contents_bytes[v] & kPartlyReadable) != 0;
        const uint64_t word_count = words == nullptr ? 0 : (s_.contents_bytes[v] & ~kContentsFlags) / 8;
        uintptr_t piece_end = 0;  // partly readable: where the readable piece being read ends
        if ((s_.contents_bytes[v] & kPythonInt) != 0 && position == 0) {
          // A Python int: its value is its one pointer (its type is the interpreter's, no node).
          position = word_count;
          const uint64_t value = python_int_(true, words, s_.contents_bytes[v] & ~kContentsFlags);
          const uint32_t w = value - low_ < span_ ? find(value) : kNone;
          if (w != kNone && s_.state[w] == kLost && w != v) {
            if (s_.index[w] == kNone) descend = w;
            else if (s_.component[w] == kNone) s_.low[v] = std::min(s_.low[v], s_.index[w]);
          }
        }
        for (; position < word_count && descend == kNone; ++position) {
          if (partly && reinterpret_cast<uintptr_t>(words + position) >= piece_end) {
            const auto end = reinterpret_cast<uintptr_t>(words + word_count);
            const uintptr_t next = next_readable(reinterpret_cast<uintptr_t>(words + position), end, piece_end);
            position = (((next - reinterpret_cast<uintptr_t>(words)) + 7) / 8);
            if (position >= word_count) break;
          }
          const uint64_t value = load_word(words + position);
          if (value - low_ >= span_) continue;
          const uint32_t w = find(value);
          if (w == kNone || s_.state[w] != kLost || w == v) continue;
          if (s_.index[w] == kNone) descend = w;
          else if (s_.component[w] == kNone) s_.low[v] = std::min(s_.low[v], s_.index[w]);
        }
        s_.call_position[depth - 1] = position;
        if (descend != kNone) {
          enter(descend);
          continue;
        }
        --depth;
        if (s_.low[v] == s_.index[v]) {
          uint32_t member;
          do {
            LG_ASSERT(tarjan_size > 0);  // v is on the stack, above its component's other members
            member = s_.tarjan_stack[--tarjan_size];
            s_.component[member] = components;
          } while (member != v);
          ++components;
          LG_ASSERT(components <= count_);
        }
        if (depth > 0) {
          const uint32_t parent = s_.call_node[depth - 1];
          s_.low[parent] = std::min(s_.low[parent], s_.low[v]);
        }
      }
    }
    LG_ASSERT(tarjan_size == 0);  // every node entered was given a component
    return components;
  }

  // Direct or indirect, by the components (see reachability.h).
  void assign_lost_classes(uint32_t components) noexcept {
    // A component that another lost component points to is indirectly lost, all of it.
    for (uint32_t v = 0; v < count_; ++v) {
      if (s_.state[v] != kLost) continue;
      const uint32_t from = s_.component[v];
      for_each_word(s_.contents[v], s_.contents_bytes[v], [&](uint64_t word) {
        const uint32_t w = find(word);
        if (w != kNone && s_.state[w] == kLost && s_.component[w] != from) s_.has_lost_predecessor[s_.component[w]] = 1;
      });
    }
    // In one that nothing lost points to, its earliest device allocation is the direct leak;
    // the rest of it hangs from that one. `work` is free now: it holds each component's pick.
    for (uint32_t c = 0; c < components; ++c) s_.work[c] = kNone;
    for (uint32_t v = 0; v < count_; ++v) {
      if (s_.state[v] != kLost) continue;
      const uint32_t c = s_.component[v];
      LG_ASSERT(c < components);  // every lost node has its component
      if (s_.has_lost_predecessor[c] != 0 || node(v).allocation_id == 0) continue;
      if (s_.work[c] == kNone || node(v).allocation_id < node(s_.work[c]).allocation_id) s_.work[c] = v;
    }
    for (uint32_t v = 0; v < count_; ++v) {
      if (s_.state[v] != kLost) continue;
      const uint32_t c = s_.component[v];
      const bool pick = s_.work[c] == v || (s_.has_lost_predecessor[c] == 0 && s_.work[c] == kNone);
      node(v).result = pick ? Class::Direct : Class::Indirect;
    }
  }

  Node *nodes_;
  size_t count_;
  Scratch s_;
  const MemoryRange *readable_;  // nullptr: everywhere
  size_t readable_count_;
  uint64_t python_int_type_;
  PythonIntLayout python_int_layout_;
  uint64_t python_object_offset_;

  // The value of a host node that is a Python int, its contents wholly readable; else 0.
  uint64_t python_int_(bool host, const void *contents, uint64_t bytes) const noexcept {
    if (!host || python_int_layout_ == PythonIntLayout::None || contents == nullptr || bytes < python_object_offset_)
      return 0;
    return python_int_value(static_cast<const uint64_t *>(contents) + python_object_offset_ / 8,
                            bytes - python_object_offset_, python_int_type_, python_int_layout_);
  }
  mutable size_t last_readable_ = 0;  // wholly_readable()'s last range
  size_t work_size_ = 0;
  bool only_leaseguards_ = false;  // marking from leaseguard's roots: its own blocks only
  uint64_t low_ = 0, span_ = 0;
  size_t sample_count_ = 0;
  mutable size_t last_sample_ = 0;  // stretch_of()'s last answer
  size_t coarse_count_ = 0;
  struct Pending {
    uint64_t word;
    size_t stretch;  // of starts: its sample's index
  };
  // A few places: enough for the fetches to overlap, few enough that what a flood marks is
  // marked soon after it is read.
  class Ring {
   public:
    bool full() const noexcept { return count_ == kPlaces; }
    bool empty() const noexcept { return count_ == 0; }
    void push(Pending pending) noexcept { items_[(first_ + count_++) % kPlaces] = pending; }
    Pending pop() noexcept {
      const Pending oldest = items_[first_];
      first_ = (first_ + 1) % kPlaces;
      --count_;
      return oldest;
    }

   private:
    static constexpr size_t kPlaces = 8;
    Pending items_[kPlaces];
    size_t first_ = 0, count_ = 0;
  };
  Ring starts_fetched_;
  Statistics stats_;
};

}  // namespace

size_t scratch_bytes(size_t node_count) noexcept { return Scratch::bytes_for(node_count); }

Statistics classify(Snapshot &snapshot, void *scratch) noexcept {
  Classifier classifier(snapshot, scratch);
  return classifier.run(snapshot);
}

}  // namespace leaseguard::reachability
