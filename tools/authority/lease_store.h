// The daemon's state directory: one append-only file of lines (lease_state.h) per lease that
// has not ended, so that a daemon killed at any moment and started again knows every lease
// it granted and how far each teardown got.
//
// Crash safety: a line is appended with one write() and made durable with fdatasync()
// before the daemon acts on it; a crash mid-append leaves at most a last line without its
// newline, which loading drops (the daemon had not acted on it). A new lease's file is
// written whole under a temporary name and renamed into place, so a lease exists with its
// grant or not at all.
//
// Hostile contents: the directory is opened as leaseguard's output directories are (files.h:
// no link someone else owns is followed on the way; it must belong to the daemon's user and
// be writable by no one else); every file in it is opened relative to it with O_NOFOLLOW, so
// a symlink planted there is refused, never followed. A file that is
// not a lease file, or a lease file whose first line is not a grant, is skipped with a
// warning and left alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lease_state.h"

namespace leaseguard::authority {

class LeaseStore {
 public:
  LeaseStore() = default;
  ~LeaseStore();
  LeaseStore(const LeaseStore &) = delete;
  LeaseStore &operator=(const LeaseStore &) = delete;

  // Opens (making it, mode 0700, and its parents if absent) `directory`; false with `error`
  // if it cannot, or if it is another user's, or others may write in it.
  bool open(const std::string &directory, std::string &error);

  // Every lease kept there, and the next id to grant. One warning per file it skipped.
  bool load(std::vector<LeaseState> &leases, uint64_t &next_id, std::vector<std::string> &warnings, std::string &error);

  // The boot the stored leases belong to; records `boot_id` as the current one.
  std::string stored_boot_id() const;
  bool record_boot_id(const std::string &boot_id, std::string &error);

  // A new lease's file with its first lines; false (and no file) if it cannot be written.
  bool create(uint64_t id, const std::vector<std::string> &lines, std::string &error);
  // One more line for lease `id`, durable before it returns true.
  bool append(uint64_t id, const std::string &line, std::string &error);
  // Lease `id` ended and was reported: its file goes.
  bool remove(uint64_t id, std::string &error);

 private:
  int directory_fd_ = -1;
};

// The id of this boot (/proc/sys/kernel/random/boot_id); empty if unknown.
std::string current_boot_id();

}  // namespace leaseguard::authority
