// The resident pages of resident_pages.h: PAGEMAP_SCAN where the kernel has it, the pagemap
// file read a page at a time where it does not.
#include "resident_pages.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace leaseguard::interpose {
namespace {

using reachability::MemoryRange;

constexpr uintptr_t kPageBytes = 4096;

// PAGEMAP_SCAN's interface (linux/fs.h since 6.7), for headers older than the kernel.
struct PageRegion {
  uint64_t start, end, categories;
};
struct PagemapScan {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
constexpr uint64_t kPagePresent = 1u << 3, kPageSwapped = 1u << 4, kPageGuard = 1u << 8;
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PagemapScan);
// pagemap entries: bit 63 present, bit 62 swapped (or a marker in the page table: a guard
// region's reads as swapped too), bit 58 a guard region (Linux 6.14).
constexpr uint64_t kEntryPresent = uint64_t{1} << 63, kEntrySwapped = uint64_t{1} << 62,
                   kEntryGuard = uint64_t{1} << 58;

// The ranges found so far, merged where one ends where the next begins.
class Runs {
 public:
  Runs(MemoryRange *out, size_t capacity, ResidentPages &result) noexcept
      : out_(out), capacity_(capacity), result_(result) {}
  void add(uintptr_t begin, uintptr_t end) noexcept {
    if (begin >= end) return;
    if (result_.count > 0 && out_[result_.count - 1].end == begin) {
      out_[result_.count - 1].end = end;
    } else if (result_.count < capacity_) {
      out_[result_.count++] = MemoryRange{begin, end};
    } else {
      result_.bounded = true;
    }
  }

 private:
  MemoryRange *out_;
  size_t capacity_;
  ResidentPages &result_;
};

// PAGEMAP_SCAN over [begin, end); false if the kernel has no such call. A guard region's pages
// are reported as swapped: PAGE_IS_GUARD (Linux 6.14) tells them apart where the kernel knows it.
bool scan_with_ioctl(int fd, uintptr_t begin, uintptr_t end, Runs &runs, ResidentPages &result) noexcept {
  static bool guard_known = true;
  PageRegion regions[256];
  for (uintptr_t at = begin; at < end;) {
    PagemapScan arguments{};
    arguments.size = sizeof arguments;
    arguments.start = at;
    arguments.end = end;
    arguments.vec = reinterpret_cast<uint64_t>(regions);
    arguments.vec_len = std::size(regions);
    arguments.category_anyof_mask = kPagePresent | kPageSwapped;
    arguments.return_mask = kPagePresent | kPageSwapped | (guard_known ? kPageGuard : 0);
    const int found = ioctl(fd, kPagemapScan, &arguments);
    if (found < 0 && errno == EINVAL && guard_known) {
      guard_known = false;
      continue;
    }
    if (found < 0) return false;
    for (int i = 0; i < found; ++i) {
      if ((regions[i].categories & kPagePresent) != 0) runs.add(regions[i].start, regions[i].end);
      else if ((regions[i].categories & kPageGuard) == 0) result.swapped = true;
    }
    if (arguments.walk_end <= at) break;
    at = arguments.walk_end;
  }
  return true;
}

// The same from /proc/PID/pagemap, 8 bytes a page.
void scan_with_reads(int fd, uintptr_t begin, uintptr_t end, Runs &runs, ResidentPages &result) noexcept {
  uint64_t entries[512];
  uintptr_t run_begin = 0, at = begin;
  while (at < end) {
    const size_t pages = std::min<size_t>(std::size(entries), (end - at) / kPageBytes);
    const ssize_t got = pread(fd, entries, pages * 8, static_cast<off_t>(at / kPageBytes * 8));
    if (got <= 0) break;
    for (size_t i = 0; i < static_cast<size_t>(got) / 8; ++i, at += kPageBytes) {
      if ((entries[i] & kEntryPresent) != 0) {
        if (run_begin == 0) run_begin = at;
        continue;
      }
      if ((entries[i] & kEntrySwapped) != 0 && (entries[i] & kEntryGuard) == 0) result.swapped = true;
      if (run_begin != 0) runs.add(run_begin, at);
      run_begin = 0;
    }
  }
  if (run_begin != 0) runs.add(run_begin, at);
}

// One line of /proc/PID/maps: "begin-end perms offset dev inode   path".
struct Mapping {
  uintptr_t begin = 0, end = 0;
  bool readable = false;
  const char *path = nullptr;  // at the path's first character, or the line's end
  const char *line_end = nullptr;
};

Mapping parse_line(const char *line) noexcept {
  Mapping mapping;
  char *after = nullptr;
  mapping.begin = std::strtoull(line, &after, 16);
  mapping.end = std::strtoull(after + 1, &after, 16);
  mapping.readable = after[0] == ' ' && after[1] == 'r';
  mapping.line_end = std::strchr(line, '\n');
  if (mapping.line_end == nullptr) mapping.line_end = line + std::strlen(line);
  const char *at = after;
  for (int field = 0; field < 4 && at < mapping.line_end; ++field) {  // perms, offset, dev, inode
    while (at < mapping.line_end && *at == ' ') ++at;
    while (at < mapping.line_end && *at != ' ') ++at;
  }
  while (at < mapping.line_end && *at == ' ') ++at;
  mapping.path = at;
  return mapping;
}

bool path_is(const Mapping &mapping, const char *prefix) noexcept {
  const size_t length = std::strlen(prefix);
  return static_cast<size_t>(mapping.line_end - mapping.path) >= length &&
         std::strncmp(mapping.path, prefix, length) == 0;
}

// Whether the scan may read this mapping at all: not a device's registers, not the kernel's.
bool scannable(const Mapping &mapping) noexcept {
  if (!mapping.readable || mapping.end <= mapping.begin) return false;
  if (path_is(mapping, "[vsyscall]") || path_is(mapping, "[vvar") || path_is(mapping, "[vdso]")) return false;
  return !path_is(mapping, "/dev/") || path_is(mapping, "/dev/zero") || path_is(mapping, "/dev/shm/");
}

}  // namespace

ResidentPages resident_ranges(const char *maps_text, int pagemap_fd, MemoryRange *out, size_t capacity,
                              bool use_scan_ioctl) noexcept {
  ResidentPages result;
  Runs runs(out, capacity, result);
  bool ioctl_works = use_scan_ioctl;
  uint64_t pages_left = kMaxPagesExamined;
  for (const char *line = maps_text; *line != '\0';) {
    const Mapping mapping = parse_line(line);
    line = *mapping.line_end == '\0' ? mapping.line_end : mapping.line_end + 1;
    if (!scannable(mapping)) continue;
    uintptr_t end = mapping.end;
    const uint64_t pages = (end - mapping.begin) / kPageBytes;
    if (pages > pages_left) {
      result.bounded = true;
      end = mapping.begin + pages_left * kPageBytes;
    }
    pages_left -= (end - mapping.begin) / kPageBytes;
    // A scan the ioctl gave up on partway is undone and read again from the file.
    const size_t count_before = result.count;
    const uintptr_t last_end_before = count_before > 0 ? out[count_before - 1].end : 0;
    if (!ioctl_works || !scan_with_ioctl(pagemap_fd, mapping.begin, end, runs, result)) {
      ioctl_works = false;
      result.count = count_before;
      if (count_before > 0) out[count_before - 1].end = last_end_before;
      scan_with_reads(pagemap_fd, mapping.begin, end, runs, result);
    }
    if (pages_left == 0) break;
  }
  return result;
}

}  // namespace leaseguard::interpose
