// Which memory the scan may read in place without a fault that does work: the pages of the
// process's readable mappings that are present in its page table now.
//
// A page that is not present is never read: a private page never touched holds no pointer
// (reading it would commit it: a sparse MAP_NORESERVE ring read whole commits every page), a
// page in a userfaultfd range waits for its server thread (held still by the world stop: a
// hang), a guard page (PROT_NONE, or MADV_GUARD_INSTALL, which /proc/PID/maps still shows
// readable) or memory unmapped behind the driver's back (a registered range) raises SIGSEGV,
// a file page past the file's end SIGBUS. A present page is read without any of these. A page
// swapped out may hold pointers, and reading it would fault it in: it is not read, and the
// result says so. Mappings of devices (/dev/..., save /dev/zero and /dev/shm) are never read.
//
// The kernel's PAGEMAP_SCAN (Linux 6.7) gives the present runs directly; older kernels are
// read 8 bytes a page from /proc/PID/pagemap. Called while the world is stopped: no allocation,
// no lock; its memory is the caller's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reachability.h"

namespace leaseguard::interpose {

struct ResidentPages {
  size_t count = 0;      // ranges written
  bool swapped = false;  // a page of a readable mapping is swapped out: not read
  bool bounded = false;  // more runs than `capacity`, or more pages than kMaxPagesExamined: the rest not read
};

// The most pages of readable mappings examined (256 GiB): past it, nothing more is read.
inline constexpr uint64_t kMaxPagesExamined = uint64_t{1} << 26;

// From `maps_text` (/proc/PID/maps), writes the present pages of its readable mappings to `out`
// as sorted, disjoint, maximal ranges. `pagemap_fd`: /proc/PID/pagemap, open. `use_scan_ioctl`
// false reads the pagemap file even where PAGEMAP_SCAN works (the tests try both).
ResidentPages resident_ranges(const char *maps_text, int pagemap_fd, reachability::MemoryRange *out, size_t capacity,
                              bool use_scan_ioctl = true) noexcept;

}  // namespace leaseguard::interpose
