// The HTML report: one self-contained file (no network, no external script or font) with,
// per process, a timeline of live device bytes per lease with lease begins, ends and
// expiries marked, a table
// of leak groups whose stacks expand, and a flame graph of leaked bytes. The data is
// embedded as JSON and drawn by a small inline script into SVG; the layout is fluid, so the
// page reads on a phone.
#include <string>

#include "json_writer.h"
#include "renderers.h"

namespace leaseguard::report {
namespace {

void write_data(JsonWriter &json, const Report &report) {
  json.begin_object();
  json.key("leaked_bytes").value(report.leaked_bytes());
  json.key("leaked_allocations").value(report.leaked_allocations());
  json.key("suppressed").value(report.suppressed_allocations);
  json.key("processes").begin_array();
  for (const ProcessReport &process : report.processes) {
    json.begin_object();
    json.key("pid").value(static_cast<int64_t>(process.pid));
    std::string command;
    for (const std::string &argument : process.command) command += (command.empty() ? "" : " ") + argument;
    json.key("command").value(command.empty() ? process.executable : command);
    json.key("complete").value(process.complete);
    json.key("recycled_allocations").value(process.recycled_allocations);
    json.key("recycled_bytes").value(process.recycled_bytes);
    json.key("timelines").begin_array();
    for (const Timeline &timeline : process.timelines) {
      json.begin_object();
      json.key("lease").value(static_cast<uint64_t>(timeline.lease_id));
      json.key("name").value(timeline.lease_name);
      json.key("points").begin_array();
      for (const auto &[ms, bytes] : timeline.points) json.begin_array().value(ms).value(bytes).end_array();
      json.end_array();
      json.end_object();
    }
    json.end_array();
    json.key("endings").begin_array();
    for (const LeaseEnding &lease : process.leases) {
      json.begin_object();
      json.key("lease").value(static_cast<uint64_t>(lease.id));
      json.key("name").value(lease.name);
      json.key("ended_by").value(ended_by_name(lease.ended_by));
      json.key("policy").value(policy_name(lease.policy));
      json.key("begin_ms").value(lease.begin_ms);
      json.key("end_ms").value(lease.end_ms);
      json.key("peak_bytes").value(lease.peak_bytes);
      json.key("late_frees").value(static_cast<uint64_t>(lease.late_frees.size()));
      json.key("groups").begin_array();
      for (const LeakGroup &group : group_leaks(process, lease)) {
        json.begin_object();
        json.key("bytes").value(group.bytes);
        json.key("count").value(group.allocations);
        json.key("api").value(api_name(group.api));
        json.key("device").value(static_cast<int64_t>(group.device));
        json.key("reclaimed").value(group.reclaimed);
        json.key("frames").begin_array();
        for (const Frame &frame : process.stack(group.stack_id)) {
          std::string where = frame.file ? *frame.file + (frame.line ? ":" + std::to_string(*frame.line) : "")
                                         : frame.module + "+" + hex_address(frame.offset);
          json.begin_array().value(frame_name(frame)).value(where).end_array();
        }
        json.end_array();
        json.end_object();
      }
      if (lease.unjournaled_allocations != 0) {
        // Made while the journal was full: a group of their own, with no stack to show.
        json.begin_object();
        json.key("bytes").value(lease.unjournaled_bytes);
        json.key("count").value(lease.unjournaled_allocations);
        json.key("api").value("(made while the journal was full)");
        json.key("device").value(static_cast<int64_t>(-1));
        json.key("reclaimed").value(false);
        json.key("frames").begin_array().end_array();
        json.end_object();
      }
      json.end_array();
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.key("problems").begin_array();
  for (const std::string &problem : report.problems) json.value(problem);
  json.end_array();
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

const char *const kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>leaseguard report</title>
<style>
  :root { --fg:#1d2330; --muted:#5c6578; --line:#d8dce5; --bg:#fff; --leak:#c0392b; --ok:#2e7d32; }
  body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
         margin: 0 auto; padding: 1rem; max-width: 72rem; overflow-wrap: anywhere; }
  h1 { font-size: 1.4rem; margin: 0 0 .25rem; } h2 { font-size: 1.15rem; margin: 1.6rem 0 .4rem; }
  h3 { font-size: 1rem; margin: 1.2rem 0 .3rem; color: var(--muted); }
  .summary { font-size: 1.05rem; } .summary b.leak { color: var(--leak); } .summary b.ok { color: var(--ok); }
  .note { color: var(--muted); font-size: .9rem; }
  svg { width: 100%; height: auto; display: block; border: 1px solid var(--line); border-radius: 4px; background: #fbfcfe; }
  table { width: 100%; border-collapse: collapse; font-size: .92rem; }
  td, th { text-align: left; vertical-align: top; padding: .35rem .4rem; border-bottom: 1px solid var(--line); }
  td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
  details summary { cursor: pointer; } ol.stack { margin: .3rem 0 .2rem 1.2rem; padding: 0; font: 12.5px/1.4 ui-monospace, monospace; }
  ol.stack span { color: var(--muted); } .legend span { display: inline-block; margin-right: 1rem; font-size: .85rem; }
  .legend i { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem; vertical-align: -1px; }
  @media (max-width: 40rem) { body { padding: .6rem; font-size: 14px; } td.hide-narrow, th.hide-narrow { display: none; } }
</style>
</head>
<body>
<h1>leaseguard report</h1>
<p class="summary" id="summary"></p>
<div id="processes"></div>
<script type="application/json" id="leaseguard-data">@DATA@</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("leaseguard-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
  function el(tag, attributes, text) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let unit = 0;
    while (n >= 1024 && unit < units.length - 1) { n /= 1024; unit++; }
    return (unit ? n.toFixed(1) : n) + " " + units[unit];
  }
  const summary = document.getElementById("summary");
  summary.append(data.leaked_allocations
    ? el("b", {class: "leak"}, bytes(data.leaked_bytes) + " leaked in " + data.leaked_allocations + " allocation(s)")
    : el("b", {class: "ok"}, "No leaks"));
  summary.append(" across " + data.processes.length + " process(es)" +
                 (data.suppressed ? ", " + data.suppressed + " suppressed" : "") + ".");
  for (const problem of data.problems) document.body.insertBefore(el("p", {class: "note"}, "Warning: " + problem), summary.nextSibling);

  function timeline(process, index) {
    const width = 960, height = 260, left = 70, right = 16, top = 14, bottom = 34;
    let tMax = 0, bMax = 0;
    for (const line of process.timelines) for (const [t, b] of line.points) { tMax = Math.max(tMax, t); bMax = Math.max(bMax, b); }
    for (const ending of process.endings) tMax = Math.max(tMax, ending.end_ms);
    tMax = tMax || 1; bMax = bMax || 1;
    const x = t => left + (width - left - right) * t / tMax, y = b => height - bottom - (height - top - bottom) * b / bMax;
    const svg = el("svg:svg", {viewBox: "0 0 " + width + " " + height, id: "timeline-" + index, role: "img",
                               "aria-label": "Live device bytes per lease over time"});
    svg.append(el("svg:line", {x1: left, y1: height - bottom, x2: width - right, y2: height - bottom, stroke: "#999"}));
    svg.append(el("svg:line", {x1: left, y1: top, x2: left, y2: height - bottom, stroke: "#999"}));
    svg.append(el("svg:text", {x: left - 6, y: top + 10, "text-anchor": "end", "font-size": 11}, bytes(bMax)));
    svg.append(el("svg:text", {x: left - 6, y: height - bottom, "text-anchor": "end", "font-size": 11}, "0"));
    svg.append(el("svg:text", {x: width - right, y: height - 10, "text-anchor": "end", "font-size": 11}, tMax.toFixed(1) + " ms"));
    svg.append(el("svg:text", {x: left, y: height - 10, "font-size": 11}, "0 ms"));
    const legend = el("div", {class: "legend"});
    process.timelines.forEach((line, i) => {
      const color = colors[i % colors.length];
      let path = "";
      let previous = null;
      for (const [t, b] of line.points) {   // steps: the level holds until the next change
        if (previous !== null) path += " " + x(t).toFixed(1) + "," + y(previous).toFixed(1);
        path += " " + x(t).toFixed(1) + "," + y(b).toFixed(1);
        previous = b;
      }
      const polyline = el("svg:polyline", {points: path.trim(), fill: "none", stroke: color, "stroke-width": 2, class: "lease-line"});
      polyline.append(el("svg:title", {}, "lease " + line.lease + " \"" + line.name + "\""));
      svg.append(polyline);
      const key = el("span"); key.append(el("i", {style: "background:" + color}), "lease " + line.lease + " “" + line.name + "”");
      legend.append(key);
    });
    const begun = new Set();
    for (const ending of process.endings) {       // lease begins (once per lease)
      if (begun.has(ending.lease)) continue;
      begun.add(ending.lease);
      const marker = el("svg:line", {x1: x(ending.begin_ms), x2: x(ending.begin_ms), y1: top, y2: height - bottom,
                                     stroke: "#2ca02c", "stroke-dasharray": "1 3", class: "lease-begin"});
      marker.append(el("svg:title", {}, "lease " + ending.lease + " \"" + ending.name + "\" began at " +
                                         ending.begin_ms.toFixed(1) + " ms"));
      svg.append(marker);
    }
    for (const ending of process.endings) {       // lease ends and expiries
      const marker = el("svg:line", {x1: x(ending.end_ms), x2: x(ending.end_ms), y1: top, y2: height - bottom,
                                     stroke: ending.ended_by === "expiry" ? "#d62728" : "#888", "stroke-dasharray": "4 3",
                                     class: "lease-marker"});
      marker.append(el("svg:title", {}, "lease " + ending.lease + " \"" + ending.name + "\" ended by " + ending.ended_by +
                                         " at " + ending.end_ms.toFixed(1) + " ms"));
      svg.append(marker);
    }
    return [svg, legend];
  }

  function groupTable(process) {
    const table = el("table", {class: "leak-groups"});
    const head = el("tr");
    for (const [title, narrow] of [["Leaked", false], ["Allocations", false], ["Entry point", true], ["Lease", true], ["Allocated from", false]])
      head.append(el("th", narrow ? {class: "hide-narrow"} : {}, title));
    table.append(head);
    const rows = [];
    for (const ending of process.endings) for (const group of ending.groups) rows.push([ending, group]);
    rows.sort((a, b) => b[1].bytes - a[1].bytes);
    for (const [ending, group] of rows) {
      const row = el("tr", {class: "leak-group"});
      row.append(el("td", {class: "num"}, bytes(group.bytes)), el("td", {class: "num"}, String(group.count)),
                 el("td", {class: "hide-narrow"}, group.api + (group.reclaimed ? " (reclaimed)" : "")),
                 el("td", {class: "hide-narrow"}, ending.name + " (" + ending.ended_by + ")"));
      const cell = el("td");
      const details = el("details");
      details.append(el("summary", {}, group.frames.length ? group.frames[0][0] : "(no stack)"));
      const list = el("ol", {class: "stack", start: "0"});
      for (const [name, where] of group.frames) { const item = el("li", {}, name + " "); item.append(el("span", {}, where)); list.append(item); }
      details.append(list);
      cell.append(details);
      row.append(cell);
      table.append(row);
    }
    return rows.length ? table : el("p", {class: "note"}, "No leaks in this process.");
  }

  function flameGraph(process, index) {   // icicle layout: roots on top, leaked bytes as width
    const root = {name: "all", value: 0, children: new Map()};
    for (const ending of process.endings) for (const group of ending.groups) {
      let node = root;
      root.value += group.bytes;
      for (const [name] of group.frames.slice().reverse().concat([[group.api]])) {
        if (!node.children.has(name)) node.children.set(name, {name: name, value: 0, children: new Map()});
        node = node.children.get(name);
        node.value += group.bytes;
      }
    }
    if (!root.value) return null;
    const width = 960, rowHeight = 18;
    let depth = 0;
    (function measure(node, d) { depth = Math.max(depth, d); for (const child of node.children.values()) measure(child, d + 1); })(root, 0);
    const svg = el("svg:svg", {viewBox: "0 0 " + width + " " + (depth + 1) * rowHeight, id: "flame-" + index, role: "img",
                               "aria-label": "Flame graph of leaked bytes"});
    (function draw(node, x0, d, w) {
      const hue = 10 + (node.name.length * 37) % 40;
      const rect = el("svg:rect", {x: x0.toFixed(2), y: d * rowHeight, width: Math.max(w - 0.5, 0.5).toFixed(2), height: rowHeight - 1,
                                   fill: "hsl(" + hue + ",80%," + (62 - Math.min(d, 10)) + "%)", class: "flame-frame"});
      rect.append(el("svg:title", {}, node.name + ": " + bytes(node.value)));
      svg.append(rect);
      if (w > 40) svg.append(el("svg:text", {x: (x0 + 3).toFixed(2), y: d * rowHeight + 13, "font-size": 11,
                                             "clip-path": "inset(0 0 0 0)"}, node.name.slice(0, Math.floor(w / 7))));
      let x = x0;
      for (const child of node.children.values()) { const cw = w * child.value / node.value; draw(child, x, d + 1, cw); x += cw; }
    })(root, 0, 0, width);
    return svg;
  }

  const container = document.getElementById("processes");
  data.processes.forEach((process, index) => {
    const section = el("section", {class: "process"});
    section.append(el("h2", {}, "Process " + process.pid + " — " + process.command));
    if (!process.complete) section.append(el("p", {class: "note"}, "Died before ending its leases: reported from its journal."));
    section.append(el("h3", {}, "Live device memory per lease"));
    section.append(...timeline(process, index));
    if (process.recycled_allocations > 0)
      section.append(el("p", {class: "note"}, "Compact journal: " + process.recycled_allocations + " allocation(s) of " +
                        bytes(process.recycled_bytes) + " in all, freed right after they were made, were recycled and are not plotted."));
    section.append(el("h3", {}, "Leak groups"));
    section.append(groupTable(process));
    const flame = flameGraph(process, index);
    if (flame) { section.append(el("h3", {}, "Leaked bytes by call stack")); section.append(flame); }
    container.append(section);
  });
  // For automated checks: the page drew, and nothing is wider than the window (phones); when
  // something is, name the first element that sticks out so the check says what to fix.
  const tooWide = document.documentElement.scrollWidth > window.innerWidth + 1;
  document.body.dataset.overflow = tooWide ? "yes" : "no";
  if (tooWide) {
    const culprit = Array.from(document.body.querySelectorAll("*")).find(node => node.getBoundingClientRect().right > window.innerWidth + 1);
    if (culprit) document.body.dataset.overflowCulprit = culprit.tagName.toLowerCase() + (culprit.className ? "." + culprit.className : "");
  }
  document.body.dataset.rendered = "yes";
})();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string render_html(const Report &report) {
  std::string page;
  render_html(report, [&](std::string_view piece) { page.append(piece); });
  return page;
}

void render_html(const Report &report, const TextSink &out) {
  const std::string_view page = kPage, marker = "@DATA@";
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
