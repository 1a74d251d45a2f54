// Creating leaseguard's output directory safely; shared by the preload and the CLI.
#pragma once

#include <string>

namespace leaseguard {

// Creates `path` and missing parents; a directory it creates last gets mode 0700. Refuses a
// symbolic link at `path` unless it points to a directory owned by this user, and refuses
// anything that is not a directory. On failure sets `error` to one line.
bool make_output_directory(const std::string &path, std::string &error);

}  // namespace leaseguard
