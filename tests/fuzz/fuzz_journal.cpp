// libFuzzer target: the journal reader and the report built from it, on arbitrary bytes.
// Anything may come back (an error, a partial report); nothing may crash, hang or grow
// without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "report/renderers.h"
#include "report/report_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  leaseguard::report::ProcessReport process;
  std::string error;
  if (!leaseguard::report::load_journal_bytes(data, size, process, error)) return 0;
  leaseguard::report::Report report;
  report.processes.push_back(std::move(process));
  leaseguard::report::render_text(report);
  leaseguard::report::render_json(report);
  return 0;
}
