// Replaying a journal into the report model (journal_replay.cpp has the rules, record by
// record).
#pragma once

#include <cstddef>
#include <string>

#include "report_model.h"

namespace leaseguard::report {

// Replays one journal into a process report (stacks not yet symbolized). A journal whose
// process's image was replaced by exec (`replaced_by_exec`) ended its leases with it.
bool load_journal_replay(const std::string &path, ProcessReport &process, bool replaced_by_exec, std::string &error);
bool load_journal(const std::string &path, ProcessReport &process, std::string &error);
// The same over bytes in memory (the fuzzer's entry point; the lease authority's, which opens
// journals itself), of a process that has ended.
bool load_journal_bytes(const unsigned char *data, size_t size, ProcessReport &process, std::string &error,
                        bool replaced_by_exec = false);

}  // namespace leaseguard::report
