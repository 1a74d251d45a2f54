// Implementation of safe output directory creation.
#include "files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace leaseguard {

bool make_output_directory(const std::string &path, std::string &error) {
  if (path.empty()) {
    error = "the output directory is empty";
    return false;
  }
  size_t position = 0;
  while (true) {
    size_t slash = path.find('/', position + 1);
    std::string partial = path.substr(0, slash);
    bool last = slash == std::string::npos || path.find_first_not_of('/', slash) == std::string::npos;
    if (!partial.empty() && partial != "/" && mkdir(partial.c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + partial + ": " + std::strerror(errno);
      return false;
    }
    if (last) break;
    position = slash;
  }
  struct stat status;
  if (lstat(path.c_str(), &status) != 0) {
    error = "cannot use " + path + ": " + std::strerror(errno);
    return false;
  }
  if (S_ISLNK(status.st_mode)) {
    // A planted link could point another user's journal anywhere; follow only a link to a
    // directory of our own.
    struct stat target;
    if (stat(path.c_str(), &target) != 0 || !S_ISDIR(target.st_mode) || target.st_uid != geteuid()) {
      error = path + " is a symbolic link, not to a directory of this user; refusing to write there";
      return false;
    }
  } else if (!S_ISDIR(status.st_mode)) {
    error = path + " exists and is not a directory";
    return false;
  }
  return true;
}

}  // namespace leaseguard
