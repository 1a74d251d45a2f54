// What the processes of an ended lease lost and what they still held on purpose, as their
// reports say: each journal replayed as `report` replays it (tools/report/journal_replay.h),
// every lease ending summed. Lost is direct, indirect and unchecked (a process killed before
// any classification lost all it held, unchecked); a reclaim afterwards does not make it less.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace leaseguard::authority {

struct EndedBytes {
  uint64_t lost = 0;
  uint64_t reachable = 0;
};

// The journal of image `image` of the process whose journals are PREFIX.journal (its first
// image), PREFIX.1.journal (after its first exec), and so on.
std::string journal_of_image(const std::string &prefix, int image);

// The process's images 0 to `newest`, each opened as a file of `owner`'s (never a link):
// what their lease endings lost and still reached. A journal that cannot be read adds nothing.
EndedBytes ended_bytes(const std::string &prefix, int newest, uid_t owner);

}  // namespace leaseguard::authority
