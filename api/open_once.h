// Loading a backend once per process (see backend.h): the first session loads it, and later
// ones get the same object or the same reason it is not there.
#pragma once

#include <mutex>
#include <string>

namespace leaseguard::api {

template <typename Loaded>
Loaded *open_once(std::string &why) noexcept {
  static std::once_flag once;
  static Loaded *loaded = nullptr;
  static std::string failure;
  try {
    std::call_once(once, [] {
      auto *candidate = new Loaded;  // never destroyed: handles may be dropped at exit
      if (candidate->load(failure)) loaded = candidate;
      else delete candidate;
    });
  } catch (...) {
    why = "out of memory";
    return nullptr;
  }
  if (loaded == nullptr) why = failure;
  return loaded;
}

}  // namespace leaseguard::api
