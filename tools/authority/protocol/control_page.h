// The control page: how another process asks a running process under leaseguard for something
// (the daemon: give back what its leases own, the teardown's reclaim stage; `leaseguard check`:
// classify what is live now), with no descriptor held open in the process (a program may close
// every descriptor it did not open) and no signal (a program's handlers are its own).
//
// It is a file of kControlPageBytes beside each journal, STEM.control beside STEM.journal,
// created by the process when its journal opens and mapped shared, never unmapped; a thread of
// the process waits on `request` as a futex. The asker writes the word with pwrite(2) and wakes
// the waiter through a read-only mapping of its own that it never reads (the file is the
// process's: truncated under the mapping, a read would be SIGBUS).
//
// Reclaim (kControlReclaim | reason): the answer is the journal: the leases' ends, the
// reclaimed frees, then one AuthorityReclaim record. One per process image; the thread ends.
//
// Check (kControlCheck): the thread takes the request (compare-and-swap back to 0) before it
// classifies, so a check counted after the request was written began after it; then it writes
// `check_status` and adds one to `checks_done`, a futex the asker waits on. The classification
// is in the journal, as a Check record. Askers take an exclusive flock(2) on the file around
// their request, one at a time; the process never locks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace leaseguard::authority {

inline constexpr size_t kControlPageBytes = 4096;
inline constexpr char kControlMagic[8] = {'L', 'G', 'C', 'O', 'N', 'T', 'R', 'L'};
// 2: pid, checks_done and check_status. A page of version 1 takes reclaims only.
inline constexpr uint32_t kControlVersion = 2;
inline constexpr uint32_t kControlFirstVersion = 1;
struct ControlPage {
  char magic[8];
  uint32_t version;
  uint32_t request;      // 0: nothing asked; else kControlReclaim | reason, or kControlCheck
  int32_t pid;           // the process's, as it sees itself (its innermost pid namespace's)
  uint32_t checks_done;  // checks answered since the page was made
  int32_t check_status;  // the last check's: kCheck*
  uint32_t reserved;
};
inline constexpr size_t kControlRequestOffset = 12;
inline constexpr size_t kControlChecksDoneOffset = 20;
inline constexpr uint32_t kControlReclaim = 0x52430000u;  // "RC" in the top half
inline constexpr uint32_t kControlReasonMask = 0xFFu;
inline constexpr uint32_t kControlCheck = 0x434B0000u;  // "CK" in the top half
// Written by the process itself (compare-and-swap from 0) to send its own thread out of the
// wait while it joins it; put back to 0 after. A request written over it is kept.
inline constexpr uint32_t kControlLeave = 0x4C560000u;  // "LV" in the top half
static_assert(sizeof(ControlPage) == 32 && offsetof(ControlPage, request) == kControlRequestOffset &&
              offsetof(ControlPage, checks_done) == kControlChecksDoneOffset);

// A check's outcome, as check_status says it.
inline constexpr int32_t kCheckDone = 0;
// Nothing could be classified: reachability is off, or the process is exiting.
inline constexpr int32_t kCheckNotClassified = -1;

// STEM.control for the journal STEM.journal; empty if `journal_path` does not end in .journal.
std::string control_path_of_journal(std::string_view journal_path);
// STEM.journal for the control page STEM.control; empty if `control_path` does not end in .control.
std::string journal_path_of_control(std::string_view control_path);

}  // namespace leaseguard::authority
