#include "growing_sites.h"

#include <cstdio>

#include "journal_replay.h"
#include "renderers.h"
#include "runtime_frames.h"
#include "symbolizer.h"

namespace leaseguard::cli {

std::string human_bytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

GrowingSites::GrowingSites() : symbolizer_(std::make_unique<report::Symbolizer>()) {}
GrowingSites::~GrowingSites() = default;

const std::vector<std::string> &GrowingSites::of(const std::string &path, size_t checks, size_t most) {
  Known &known = known_[path];
  if (known.checks == checks) return known.lines;
  known.checks = checks;
  known.lines.clear();
  report::ProcessReport process;
  std::string error;
  if (checks < 2 || !report::load_journal(path, process, error)) return known.lines;
  for (const report::SiteGrowth &site : process.site_growth) {
    if (!site.growing() || known.lines.size() == most) break;
    // The site: its first frame outside the runtime, symbolized; its entry point if none.
    std::string name = std::string(api_name(site.api));
    for (const report::Frame &recorded : process.stack(site.stack_id)) {
      if (report::is_runtime_frame(recorded)) continue;
      report::Frame frame = recorded;
      symbolizer_->symbolize(frame);
      name = report::frame_name(frame);
      if (frame.file) {
        const std::string file = *frame.file;
        name += " " + file.substr(file.rfind('/') + 1) + (frame.line ? ":" + std::to_string(*frame.line) : "");
      }
      name += " [" + std::string(api_name(site.api)) + "]";
      break;
    }
    known.lines.push_back(name + " +" + human_bytes(static_cast<uint64_t>(site.rate_bytes_per_s)) + "/s");
  }
  return known.lines;
}

}  // namespace leaseguard::cli
