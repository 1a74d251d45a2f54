// The HTML report: one self-contained file (no network, no external script or font) that
// stays useful from one leak to 100,000 (docs/report-format.md, "HTML"): a summary first,
// then per process a flame graph of leaked bytes with zoom and search, a paged table of
// leak groups whose stacks expand, and a timeline of live bytes per lease whose idle
// stretches are cut short so brief leases stay legible. The data is embedded as compact
// JSON (each distinct frame once, stacks as a tree of frames) and drawn by the page's own
// script (tools/report/html/report_page.html).
#include <algorithm>
#include <cstdint>
#include <map>
#include <cstdio>
#include <string>
#include <tuple>
#include <unordered_map>

#include "json_writer.h"
#include "renderers.h"
#include "runtime_frames.h"

namespace leaseguard::report {

extern const char kReportPage[];  // report_page.cpp, generated from html/report_page.html

namespace {

// The arrays that grow with the leaks (stack nodes, groups) go into the page as strings of
// packed numbers: each number in base 32, most significant digit first, its last digit
// from a second alphabet so numbers need no separator. 100,000 groups from as many stacks
// take 1.9 MB instead of 4 MB of JSON numbers, and the page reads them faster than it parses
// JSON (the page's unpack() is the inverse). Every character is safe in JSON and HTML.
void pack(std::string &out, uint64_t value) {
  static constexpr char kDigit[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";
  static constexpr char kLastDigit[] = "WXYZabcdefghijklmnopqrstuvwxyz()";
  uint8_t digits[13];
  size_t count = 0;
  do {
    digits[count++] = static_cast<uint8_t>(value & 31);
    value >>= 5;
  } while (value != 0);
  while (count > 1) out.push_back(kDigit[digits[--count]]);
  out.push_back(kLastDigit[digits[0]]);
}

// The process's leaked bytes as one tree, outermost frame first, ending in each group's
// entry point: the flame graph's shape. Stacks share most of their frames, so the tree is
// far smaller than the stacks written out. It goes into the page in pre-order with each
// node's children largest first, so the page finds a node's callees and callers, and whether
// one node is under another, from the subtree sizes alone.
class StackTree {
 public:
  explicit StackTree(size_t frame_count) : frame_count_(frame_count) {}
  // The leaf for a group: its stack's frames (indices into the process's frames, innermost
  // first; none for nullptr), then its entry point (`api`, an index into the page's table of
  // entry points). Its bytes count for it and all its callers.
  int64_t add(const std::vector<uint32_t> *stack, size_t api, uint64_t bytes) {
    int64_t node = -1;
    if (stack != nullptr) {
      for (auto frame = stack->rbegin(); frame != stack->rend(); ++frame) node = child(node, *frame);
    }
    node = child(node, frame_count_ + api);
    for (int64_t at = node; at >= 0; at = nodes_[static_cast<size_t>(at)].parent)
      nodes_[static_cast<size_t>(at)].bytes += bytes;
    return node;
  }
  // Numbers each node in pre-order (children largest first) and packs, per node, its label
  // (a frame's index, or the number of frames plus an entry point's index) and how many
  // nodes back its parent is (0: none; mostly 1); the count of numbers comes first. Returns
  // each node's new number by old number.
  std::vector<int64_t> pack_into(std::string &packed) {
    std::vector<int64_t> number(nodes_.size(), -1);
    auto largest_first = [&](std::vector<int64_t> &list) {
      std::stable_sort(list.begin(), list.end(), [&](int64_t a, int64_t b) {
        return nodes_[static_cast<size_t>(a)].bytes > nodes_[static_cast<size_t>(b)].bytes;
      });
    };
    pack(packed, nodes_.size() * 2);
    largest_first(roots_);
    std::vector<int64_t> pending(roots_.rbegin(), roots_.rend());
    int64_t next = 0;
    while (!pending.empty()) {
      const auto at = static_cast<size_t>(pending.back());
      pending.pop_back();
      number[at] = next++;
      pack(packed, nodes_[at].label);
      const int64_t parent = nodes_[at].parent;  // numbered already: parents come first
      pack(packed, parent < 0 ? 0 : static_cast<uint64_t>(number[at] - number[static_cast<size_t>(parent)]));
      largest_first(nodes_[at].children);
      pending.insert(pending.end(), nodes_[at].children.rbegin(), nodes_[at].children.rend());
    }
    return number;
  }

 private:
  struct Node {
    uint64_t label = 0;
    int64_t parent = -1;
    uint64_t bytes = 0;
    std::vector<int64_t> children;
  };
  int64_t child(int64_t parent, uint64_t label) {
    auto [at, added] = index_.try_emplace({parent, label}, static_cast<int64_t>(nodes_.size()));
    if (added) {
      nodes_.push_back({label, parent, 0, {}});
      (parent < 0 ? roots_ : nodes_[static_cast<size_t>(parent)].children).push_back(at->second);
    }
    return at->second;
  }
  struct KeyHash {
    size_t operator()(const std::pair<int64_t, uint64_t> &key) const {
      return std::hash<uint64_t>()(static_cast<uint64_t>(key.first) * 0x9e3779b97f4a7c15ULL ^ key.second);
    }
  };
  size_t frame_count_;
  std::unordered_map<std::pair<int64_t, uint64_t>, int64_t, KeyHash> index_;
  std::vector<Node> nodes_;
  std::vector<int64_t> roots_;
};

// The small tables groups index into, in order of first use: a group's attributes (lease,
// entry point, device, reclaimed, class) are few distinct tuples however many groups.
template <typename Key>
class Table {
 public:
  size_t index(const Key &key) {
    auto [at, added] = indices_.try_emplace(key, keys_.size());
    if (added) keys_.push_back(key);
    return at->second;
  }
  const std::vector<Key> &keys() const { return keys_; }

 private:
  std::map<Key, size_t> indices_;
  std::vector<Key> keys_;
};

constexpr std::string_view kUnjournaled = "(made while the journal was full)";

const std::vector<uint32_t> *stack_frames(const ProcessReport &process, uint32_t stack_id) {
  auto stack = process.stacks.find(stack_id);
  return stack == process.stacks.end() ? nullptr : &stack->second;
}

struct PageGroup {
  uint64_t bytes = 0;
  uint64_t allocations = 0;
  int64_t node = -1;  // its leaf in the StackTree
  size_t attributes = 0;
};
// lease index, entry point index, device, reclaimed, class index
using GroupAttributes = std::tuple<size_t, size_t, int32_t, bool, size_t>;

void write_leases(JsonWriter &json, const ProcessReport &process) {
  json.key("leases").begin_array();
  for (const LeaseEnding &lease : process.leases) {
    json.begin_object();
    json.key("lease").value(static_cast<uint64_t>(lease.id));
    json.key("name").value(lease.name);
    json.key("ended_by").value(ended_by_name(lease.ended_by));
    json.key("policy").value(policy_name(lease.policy));
    json.key("begin_ms").value(lease.begin_ms);
    json.key("end_ms").value(lease.end_ms);
    json.key("peak_bytes").value(lease.peak_bytes);
    if (process.peak_between_threads_ms > 0) {
      char note[96];
      std::snprintf(note, sizeof note, "exact within each thread, between threads to %.1f ms",
                    process.peak_between_threads_ms);
      json.key("peak_note").value(note);
    }
    json.key("leaked_bytes").value(lease.leaked_bytes());
    json.key("leaked_allocations").value(static_cast<uint64_t>(lease.leaked_allocations()));
    json.key("late_frees").value(static_cast<uint64_t>(lease.late_frees.size()));
    json.end_object();
  }
  json.end_array();
}

// Every leak group of the process, largest first (the page shows them in this order), with
// the tree of their stacks and the tables they index into.
void write_groups(JsonWriter &json, const ProcessReport &process) {
  StackTree tree(process.frames.size());
  Table<std::string> apis, classes;
  Table<GroupAttributes> attributes;
  std::vector<PageGroup> groups;
  for (size_t lease_index = 0; lease_index < process.leases.size(); ++lease_index) {
    const LeaseEnding &lease = process.leases[lease_index];
    for (const LeakGroup &group : group_leaks(process, lease)) {
      const size_t api = apis.index(std::string(api_name(group.api)));
      const GroupAttributes key{lease_index, api, group.device, group.reclaimed,
                                classes.index(reachability_name(group.reachability))};
      groups.push_back({group.bytes, group.allocations,
                        tree.add(stack_frames(process, group.stack_id), api, group.bytes), attributes.index(key)});
    }
    if (lease.unjournaled_allocations != 0) {
      // Made while the journal was full: a group of their own, with no stack to show.
      const size_t api = apis.index(std::string(kUnjournaled));
      const GroupAttributes key{lease_index, api, -1, false, classes.index(reachability_name(Reachability::Unchecked))};
      groups.push_back({lease.unjournaled_bytes, lease.unjournaled_allocations,
                        tree.add(nullptr, api, lease.unjournaled_bytes), attributes.index(key)});
    }
  }
  std::string packed;
  const std::vector<int64_t> number = tree.pack_into(packed);
  json.key("nodes").value(packed);
  std::stable_sort(groups.begin(), groups.end(), [](const PageGroup &a, const PageGroup &b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.allocations > b.allocations;
  });
  // Packed: the count of numbers, then bytes, allocations, leaf node and attributes per group.
  packed.clear();
  pack(packed, groups.size() * 4);
  for (const PageGroup &group : groups) {
    pack(packed, group.bytes);
    pack(packed, group.allocations);
    pack(packed, static_cast<uint64_t>(number[static_cast<size_t>(group.node)]));
    pack(packed, group.attributes);
  }
  json.key("groups").value(packed);
  json.key("attributes").begin_array();
  for (const auto &[lease, api, device, reclaimed, reachability] : attributes.keys()) {
    json.begin_array().value(static_cast<uint64_t>(lease)).value(static_cast<uint64_t>(api));
    json.value(static_cast<int64_t>(device)).value(reclaimed).value(static_cast<uint64_t>(reachability)).end_array();
  }
  json.end_array();
  json.key("apis").begin_array();
  for (const std::string &name : apis.keys()) json.value(name);
  json.end_array();
  json.key("classes").begin_array();
  for (const std::string &name : classes.keys()) json.value(name);
  json.end_array();
}

// The live checks, flat (ms, lost bytes, reachable bytes, ...), and the sites that grew across
// them, fastest first, each named by its first frame outside the runtime.
void write_checks(JsonWriter &json, const ProcessReport &process) {
  json.key("checks").begin_array();
  for (const LiveCheck &check : process.checks)
    json.value(check.time_ms).value(check.lost_bytes).value(check.reachable_bytes);
  json.end_array();
  json.key("growing").begin_array();
  constexpr size_t kSitesShown = 10;
  size_t shown = 0;
  for (const SiteGrowth &site : process.site_growth) {
    if (!site.growing() || shown++ == kSitesShown) break;
    const StackView stack = process.stack(site.stack_id);
    std::string name = "(no stack)";
    for (const Frame &frame : stack)
      if (!is_runtime_frame(frame)) {
        name = frame_name(frame) +
               (frame.file ? " " + *frame.file + (frame.line ? ":" + std::to_string(*frame.line) : "") : std::string());
        break;
      }
    json.begin_object();
    json.key("site").value(name);
    json.key("api").value(api_name(site.api));
    json.key("lost_bytes").value(site.lost_bytes);
    json.key("since_first_check_bytes").value(site.since_first_bytes);
    json.key("rate_bytes_per_s").value(site.rate_bytes_per_s);
    json.end_object();
  }
  json.end_array();
}

void write_process(JsonWriter &json, const ProcessReport &process) {
  json.begin_object();
  json.key("pid").value(static_cast<int64_t>(process.pid));
  std::string command;
  for (const std::string &argument : process.command) command += (command.empty() ? "" : " ") + argument;
  json.key("command").value(command.empty() ? process.executable : command);
  json.key("complete").value(process.complete);
  json.key("running").value(process.running);
  json.key("live_bytes").value(process.live_bytes);
  json.key("recycled_allocations").value(process.recycled_allocations);
  json.key("recycled_bytes").value(process.recycled_bytes);
  json.key("timelines").begin_array();
  for (const Timeline &timeline : process.timelines) {
    json.begin_object();
    json.key("lease").value(static_cast<uint64_t>(timeline.lease_id));
    json.key("name").value(timeline.lease_name);
    json.key("points").begin_array();  // flat: ms, bytes, ms, bytes, ...
    for (const auto &[ms, bytes] : timeline.points) json.value(ms).value(bytes);
    json.end_array();
    json.end_object();
  }
  json.end_array();
  write_checks(json, process);
  write_leases(json, process);
  write_groups(json, process);
  // Every distinct frame the process's stacks use: its name, then where it is.
  json.key("frames").begin_array();
  for (const Frame &frame : process.frames) {
    json.value(frame_name(frame));
    json.value(frame.file ? *frame.file + (frame.line ? ":" + std::to_string(*frame.line) : "")
                          : frame.module + "+" + hex_address(frame.offset));
  }
  json.end_array();
  // Which of them are the runtime's (runtime_frames.h): a leak's site is its first frame outside.
  json.key("runtime_frames").begin_array();
  for (size_t index = 0; index < process.frames.size(); ++index)
    if (is_runtime_frame(process.frames[index])) json.value(static_cast<uint64_t>(index));
  json.end_array();
  json.end_object();
}

void write_data(JsonWriter &json, const Report &report) {
  json.begin_object();
  json.key("leaked_bytes").value(report.leaked_bytes());
  json.key("leaked_allocations").value(report.leaked_allocations());
  json.key("reachable_bytes").value(report.reachable_bytes());
  json.key("reachable_allocations").value(report.reachable_allocations());
  json.key("suppressed").value(report.suppressed_allocations);
  json.key("nothing_checked").value(nothing_checked(report));
  json.key("processes").begin_array();
  for (const ProcessReport &process : report.processes) write_process(json, process);
  json.end_array();
  json.key("problems").begin_array();
  for (const std::string &problem : report.problems) json.value(problem);
  json.end_array();
  if (report.authority_lease) {
    json.key("lease_authority");
    write_authority_lease(json, *report.authority_lease);
  }
  json.end_object();
}

// Embedded data must not end the script element early: every "</" is written "<\/" (the
// same string to JSON.parse). Pieces of the data pass through as they are made; a '<' that
// ends one waits to see whether the next begins with '/'.
class ScriptSafe {
 public:
  explicit ScriptSafe(const TextSink &out) : out_(out) {}
  void operator()(std::string_view piece) {
    if (piece.empty()) return;
    std::string safe;
    safe.reserve(piece.size() + 8);
    if (held_less_than_) {
      safe += piece.front() != '/' ? "<" : "<\\";
      held_less_than_ = false;
    }
    for (size_t i = 0; i < piece.size(); ++i) {
      if (piece[i] != '<') {
        safe.push_back(piece[i]);
      } else if (i + 1 == piece.size()) {
        held_less_than_ = true;
      } else {
        safe += piece[i + 1] == '/' ? "<\\" : "<";
      }
    }
    out_(safe);
  }
  void finish() {
    if (held_less_than_) out_("<");
    held_less_than_ = false;
  }

 private:
  const TextSink &out_;
  bool held_less_than_ = false;
};

}  // namespace

std::string render_html(const Report &report) {
  std::string page;
  render_html(report, [&](std::string_view piece) { page.append(piece); });
  return page;
}

void render_html(const Report &report, const TextSink &out) {
  const std::string_view page = kReportPage, marker = "@DATA@";
  const size_t at = page.find(marker);
  out(page.substr(0, at));
  ScriptSafe safe(out);
  JsonWriter json(0, [&](std::string_view piece) { safe(piece); });
  write_data(json, report);
  json.finish();
  safe.finish();
  out(page.substr(at + marker.size()));
}

}  // namespace leaseguard::report
