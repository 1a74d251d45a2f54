// The classification of reachability.h: two floods and a strongly connected components
// pass over what is lost, in scratch memory, with no allocation.
#include "reachability.h"

#include <algorithm>
#include <cstring>

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

enum State : uint8_t { kLost = 0, kOwned = 1, kReachable = 2, kIgnored = 3 };

// Reads the words of memory the program may have poisoned for a sanitizer (stack redzones,
// freed-but-quarantined blocks it still points into): reading them is the point.
__attribute__((no_sanitize("address", "thread"))) inline uint64_t load_word(
    const uint64_t *at) noexcept {
  return *static_cast<const volatile uint64_t *>(at);
}

struct Scratch {
  uint64_t *starts;  // nodes' addresses, sorted: the lookup's keys, dense for the cache
  uint8_t *state;
  uint32_t *work;  // the floods' stack
  uint32_t *index;
  uint32_t *low;
  uint32_t *component;
  uint32_t *tarjan_stack;
  uint32_t *call_node;
  uint64_t *call_position;  // the next word of call_node's contents to read
  uint8_t *has_lost_predecessor;  // by component

  static size_t bytes_for(size_t n) noexcept {
    return n * (sizeof(uint64_t) * 2 + sizeof(uint32_t) * 6 + sizeof(uint8_t) * 2) + 128;
  }
  Scratch(void *memory, size_t n) noexcept {
    auto *at = static_cast<char *>(memory);
    auto take = [&](size_t bytes) {
      char *here = at;
      at += (bytes + 7) & ~size_t{7};
      return here;
    };
    starts = reinterpret_cast<uint64_t *>(take(n * 8));
    call_position = reinterpret_cast<uint64_t *>(take(n * 8));
    work = reinterpret_cast<uint32_t *>(take(n * 4));
    index = reinterpret_cast<uint32_t *>(take(n * 4));
    low = reinterpret_cast<uint32_t *>(take(n * 4));
    component = reinterpret_cast<uint32_t *>(take(n * 4));
    tarjan_stack = reinterpret_cast<uint32_t *>(take(n * 4));
    call_node = reinterpret_cast<uint32_t *>(take(n * 4));
    state = reinterpret_cast<uint8_t *>(take(n));
    has_lost_predecessor = reinterpret_cast<uint8_t *>(take(n));
  }
};

class Classifier {
 public:
  Classifier(Snapshot &snapshot, void *scratch) noexcept
      : nodes_(snapshot.nodes), count_(snapshot.node_count), s_(scratch, snapshot.node_count) {}

  Statistics run(const Snapshot &snapshot) noexcept {
    prepare();
    // 1. What leaseguard and the driver reach from their own roots is theirs.
    for (size_t i = 0; i < snapshot.owner_root_count; ++i) scan_range(snapshot.owner_roots[i], kOwned);
    flood(kOwned);
    // 2. What the program reaches.
    for (size_t i = 0; i < snapshot.program_root_count; ++i) scan_range(snapshot.program_roots[i], kReachable);
    flood(kReachable);
    // 3. What is lost: direct or indirect.
    classify_lost();
    for (size_t i = 0; i < count_; ++i) {
      if (s_.state[i] == kReachable) nodes_[i].result = Class::Reachable;
      else if (s_.state[i] == kOwned) ++stats_.owned_blocks;
    }
    return stats_;
  }

 private:
  void prepare() noexcept {
    std::sort(nodes_, nodes_ + count_, [](const Node &a, const Node &b) {
      return a.address != b.address ? a.address < b.address : a.allocation_id > b.allocation_id;
    });
    uint64_t covered_to = 0;
    size_t last_kept = kNone;
    for (size_t i = 0; i < count_; ++i) {
      Node &node = nodes_[i];
      node.result = Class::Unchecked;
      node.reached_from = 0;
      s_.starts[i] = node.address;
      s_.state[i] = kLost;
      s_.index[i] = kNone;
      s_.component[i] = kNone;
      s_.has_lost_predecessor[i] = 0;
      // Nodes overlap where device memory lives in a host block of the driver's (a
      // simulator's device memory): the device allocation stands for that memory.
      if (last_kept != kNone && node.address < covered_to) {
        Node &previous = nodes_[last_kept];
        const bool keep_this = node.allocation_id != 0 && previous.allocation_id == 0;
        if (!keep_this) {
          s_.state[i] = kIgnored;
          continue;
        }
        s_.state[last_kept] = kIgnored;
      }
      last_kept = i;
      covered_to = node.address + node.bytes;
    }
    low_ = UINT64_MAX;
    uint64_t high = 0;
    for (size_t i = 0; i < count_; ++i) {
      if (s_.state[i] == kIgnored) continue;
      low_ = std::min(low_, nodes_[i].address);
      high = std::max(high, nodes_[i].address + nodes_[i].bytes);
    }
    span_ = high > low_ ? high - low_ : 0;
  }

  // The node that `word` points into, or kNone.
  uint32_t find(uint64_t word) const noexcept {
    if (word - low_ >= span_) return kNone;
    const uint64_t *after = std::upper_bound(s_.starts, s_.starts + count_, word);
    if (after == s_.starts) return kNone;
    auto i = static_cast<uint32_t>(after - s_.starts - 1);
    // Among nodes sharing a start (a host block and the device memory at its start), the
    // device allocation sorts first and the other is ignored.
    while (i > 0 && s_.starts[i - 1] == s_.starts[i] && s_.state[i] == kIgnored) --i;
    if (s_.state[i] == kIgnored || word - nodes_[i].address >= nodes_[i].bytes) return kNone;
    return i;
  }

  template <typename Visit>
  void for_each_word(const void *memory, uint64_t bytes, Visit visit) noexcept {
    auto begin = (reinterpret_cast<uintptr_t>(memory) + 7) & ~uintptr_t{7};
    uintptr_t end = (reinterpret_cast<uintptr_t>(memory) + bytes) & ~uintptr_t{7};
    if (memory == nullptr || end <= begin) return;
    stats_.scanned_bytes += end - begin;
    for (auto *word = reinterpret_cast<const uint64_t *>(begin); word < reinterpret_cast<const uint64_t *>(end);
         ++word) {
      const uint64_t value = load_word(word);
      if (value - low_ < span_) {
        at_ = reinterpret_cast<uintptr_t>(word);
        visit(value);
      }
    }
  }

  void mark(uint64_t word, State as) noexcept {
    const uint32_t target = find(word);
    if (target == kNone || s_.state[target] != kLost) return;
    if (as == kOwned && nodes_[target].allocation_id != 0) return;  // device memory is never owned
    s_.state[target] = as;
    nodes_[target].reached_from = at_;
    s_.work[work_size_++] = target;
  }

  void scan_range(const MemoryRange &range, State as) noexcept {
    if (range.end <= range.begin) return;
    for_each_word(reinterpret_cast<const void *>(range.begin), range.end - range.begin,
                  [&](uint64_t word) { mark(word, as); });
  }

  void flood(State as) noexcept {
    while (work_size_ > 0) {
      const Node &node = nodes_[s_.work[--work_size_]];
      for_each_word(node.contents, node.contents_bytes, [&](uint64_t word) { mark(word, as); });
    }
  }

  // Tarjan's strongly connected components over the lost nodes, iterative: a lost program
  // may hold a million lost blocks in a chain.
  void classify_lost() noexcept {
    uint32_t next_index = 0, components = 0;
    size_t tarjan_size = 0;
    for (uint32_t root = 0; root < count_; ++root) {
      if (s_.state[root] != kLost || s_.index[root] != kNone) continue;
      size_t depth = 0;
      auto enter = [&](uint32_t v) {
        s_.index[v] = s_.low[v] = next_index++;
        s_.tarjan_stack[tarjan_size++] = v;
        s_.call_node[depth] = v;
        s_.call_position[depth] = 0;
        ++depth;
      };
      enter(root);
      while (depth > 0) {
        const uint32_t v = s_.call_node[depth - 1];
        const Node &node = nodes_[v];
        uint32_t descend = kNone;
        uint64_t position = s_.call_position[depth - 1];
        const auto *words = static_cast<const uint64_t *>(node.contents);
        const uint64_t word_count = node.contents == nullptr ? 0 : node.contents_bytes / 8;
        for (; position < word_count && descend == kNone; ++position) {
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
            member = s_.tarjan_stack[--tarjan_size];
            s_.component[member] = components;
          } while (member != v);
          ++components;
        }
        if (depth > 0) {
          const uint32_t parent = s_.call_node[depth - 1];
          s_.low[parent] = std::min(s_.low[parent], s_.low[v]);
        }
      }
    }
    stats_.lost_components = components;
    // A component that another lost component points to is indirectly lost, all of it.
    for (uint32_t v = 0; v < count_; ++v) {
      if (s_.state[v] != kLost) continue;
      const uint32_t from = s_.component[v];
      for_each_word(nodes_[v].contents, nodes_[v].contents_bytes, [&](uint64_t word) {
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
      if (s_.has_lost_predecessor[c] != 0 || nodes_[v].allocation_id == 0) continue;
      if (s_.work[c] == kNone || nodes_[v].allocation_id < nodes_[s_.work[c]].allocation_id) s_.work[c] = v;
    }
    for (uint32_t v = 0; v < count_; ++v) {
      if (s_.state[v] != kLost) continue;
      const uint32_t c = s_.component[v];
      const bool pick = s_.work[c] == v || (s_.has_lost_predecessor[c] == 0 && s_.work[c] == kNone);
      nodes_[v].result = pick ? Class::Direct : Class::Indirect;
    }
  }

  Node *nodes_;
  size_t count_;
  Scratch s_;
  size_t work_size_ = 0;
  uint64_t low_ = 0, span_ = 0;
  uintptr_t at_ = 0;  // the word being visited
  Statistics stats_;
};

}  // namespace

size_t scratch_bytes(size_t node_count) noexcept { return Scratch::bytes_for(node_count); }

Statistics classify(Snapshot &snapshot, void *scratch) noexcept {
  Classifier classifier(snapshot, scratch);
  return classifier.run(snapshot);
}

}  // namespace leaseguard::reachability
