// For `leaseguard top`: the sites of a running process that grew across its live checks, read
// from its journal (the report's replay, symbolized), each a line of its own. A journal is read
// again only when it has a check more: a refresh a second costs nothing between checks.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace leaseguard::report {
class Symbolizer;
}

namespace leaseguard::cli {

class GrowingSites {
 public:
  GrowingSites();
  ~GrowingSites();
  GrowingSites(const GrowingSites &) = delete;
  GrowingSites &operator=(const GrowingSites &) = delete;

  // At most `most` lines ("drop_buffers live_check.c:24 [ENTRY_POINT] +2.9 KiB/s"), fastest
  // first, of the journal at `path` as of its `checks`-th check; none with fewer than two.
  const std::vector<std::string> &of(const std::string &path, size_t checks, size_t most = 3);

 private:
  struct Known {
    size_t checks = 0;
    std::vector<std::string> lines;
  };
  std::map<std::string, Known> known_;  // by journal path
  std::unique_ptr<report::Symbolizer> symbolizer_;
};

// "2.9 KiB": how top writes a size.
std::string human_bytes(uint64_t bytes);

}  // namespace leaseguard::cli
