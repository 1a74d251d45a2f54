// Turning a Report into what people and CI read.
#pragma once

#include <string>
#include <vector>

#include "json_writer.h"
#include "report_model.h"

namespace leaseguard::report {

// Leaks of one lease ending with the same stack, entry point and device.
struct LeakGroup {
  uint32_t stack_id = 0;
  Api api = Api::Unknown;
  Kind kind = Kind::Device;
  int32_t device = 0;
  uint64_t bytes = 0;
  uint64_t allocations = 0;
  bool reclaimed = false;  // leaseguard gave these back to the device at the lease's end
  Reachability reachability = Reachability::Unchecked;
};

// `lease start`'s lease (Report::authority_lease) as a JSON object: the same in the JSON
// report ("lease_authority"), SARIF's run properties and the HTML page's data.
void write_authority_lease(JsonWriter &json, const AuthorityLease &lease);

// "0x1f40": how addresses and offsets are written in every format.
std::string hex_address(uint64_t value);

// A frame's name for fingerprints and flame graphs: its function, else module+offset.
std::string frame_name(const Frame &frame);

// What identifies a leak across runs and builds: the entry point and the symbolized frames
// (module offsets only where no name is known), hashed. Never raw addresses.
std::string leak_signature(const ProcessReport &process, uint32_t stack_id, Api api);

// Groups, largest first (bytes, then count, then entry point and stack for a stable order).
// The lease's leaks grouped by stack, entry point, device and class: direct (and
// unchecked) groups first, then indirect ones, each by bytes, largest first.
std::vector<LeakGroup> group_leaks(const ProcessReport &process, const LeaseEnding &lease);
std::vector<LeakGroup> group_leaks(const std::vector<Leak> &leaks);

// LeakSanitizer's shape: a header per process and leaking lease, a block per group, SUMMARY.
// Whole, or handed to `out` a piece at a time.
std::string render_text(const Report &report);
void render_text(const Report &report, const TextSink &out);

// Schema leaseguard-report/1 (docs/report-format.md): whole, or handed to `out` a piece at
// a time (a report of many leaks need not be held in memory twice to be written).
// JsonStacks::Shared writes each process's distinct stacks once (`stack_table`) and has
// each leak, late free and invalid free name its stack by index (`stack_ref`), unindented:
// run's own leaseguard-run.json, which 100,000 leaks from a few deep sites made 70 times its
// journal's size with every stack in place. The report reader takes both.
enum class JsonStacks { InPlace, Shared };
std::string render_json(const Report &report);
void render_json(const Report &report, const TextSink &out, JsonStacks stacks = JsonStacks::InPlace);

// SARIF 2.1.0: one result per leak group, the stack as a code flow, fingerprints stable
// across runs; file URIs relative to `source_root` when under it. Whole, or handed to `out`
// a piece at a time (each result carries its stack: ~13 KB a group with 32 frames).
std::string render_sarif(const Report &report, const std::string &source_root);
void render_sarif(const Report &report, const std::string &source_root, const TextSink &out);

// JUnit XML: a testsuite per process, a testcase per lease ending, a failure per leak group.
// Whole, or handed to `out` a piece at a time.
// `source_root`: failed cases' `file` attributes are relative to it when under it.
std::string render_junit(const Report &report, const std::string &source_root = "");
void render_junit(const Report &report, const std::string &source_root, const TextSink &out);

// One self-contained HTML page: a timeline of live bytes per lease, a table of leak groups
// with expandable stacks, a flame graph of leaked bytes. Whole, or handed to `out` a piece
// at a time.
std::string render_html(const Report &report);
void render_html(const Report &report, const TextSink &out);

// Brendan Gregg's folded stacks ("root;...;leaf bytes"), one line per leak: whole, or handed
// to `out` a piece at a time.
std::string render_folded(const Report &report);
void render_folded(const Report &report, const TextSink &out);

}  // namespace leaseguard::report
