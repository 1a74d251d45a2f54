// Lease endings' verdicts, from the processes' journals (lease_verdicts.h).
#include "lease_verdicts.h"

#include "journal_replay.h"
#include "live_bytes.h"

namespace leaseguard::authority {

std::string journal_of_image(const std::string &prefix, int image) {
  return prefix + (image == 0 ? "" : "." + std::to_string(image)) + ".journal";
}

EndedBytes ended_bytes(const std::string &prefix, int newest, uid_t owner) {
  EndedBytes total;
  for (int image = 0; image <= newest; ++image) {
    // Opened and mapped as the daemon reads live bytes: the owner's regular file, no link.
    journal::LiveBytesReader journal;
    std::string error;
    if (!journal.open(journal_of_image(prefix, image), owner, error)) continue;
    // Replayed as a process that has ended (the teardown is over): what is live and in no
    // lease ending it wrote is the lease's, unchecked, as a report of a killed process says.
    report::ProcessReport process;
    if (!report::load_journal_bytes(journal.bytes(), journal.size(), process, error, image < newest)) continue;
    total.lost += process.leaked_bytes();
    total.reachable += process.reachable_bytes();
  }
  return total;
}

}  // namespace leaseguard::authority
