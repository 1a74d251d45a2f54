// Opening leaseguard's files and directories safely; shared by the preload and the CLI.
//
// The rules (docs/reliability.md, "Files and privileges"):
//   - a path is followed one component at a time, each opened relative to the directory
//     before it without following a symbolic link; a link is followed only if root or this
//     user owns it, so that no one else can have planted it to point somewhere else;
//   - the output directory must be owned by this user and writable by no one else (as ssh
//     requires of its files), since whoever can write there can plant files at the names
//     leaseguard writes or reads;
//   - inputs are opened without blocking and used only if they are regular files: a FIFO
//     named as a journal, a report, a baseline or a suppressions file never hangs a reader.
#pragma once

#include <sys/stat.h>

#include <string>

namespace leaseguard {

// Opens the directory `path` for leaseguard's output, creating it and missing parents (the
// directory itself with mode 0700), and checks that it is safe to write into (see above).
// Returns a descriptor (O_PATH, close-on-exec) to create files in with openat, or -1 and
// one line in `error`.
int open_output_directory(const std::string &path, std::string &error);

// The same without creating anything or checking the owner: the directory that holds
// `path`, whose last component is stored in `name`. For a file the user named. On failure
// errno is the system call's, or 0 where leaseguard refused (a link someone else owns).
int open_parent_directory(const std::string &path, std::string &name, std::string &error);

// Creates `path` and missing parents, and checks it as open_output_directory does.
bool make_output_directory(const std::string &path, std::string &error);

// Opens `path` for reading if it is a regular file, without blocking on a FIFO or a device.
// Returns a descriptor (close-on-exec, blocking reads) or -1 and one line in `error`; and
// the file's status in `status` where one is given (the fstat it made: readers of many small
// files make one system call fewer).
int open_regular_file(const std::string &path, std::string &error, struct stat *status = nullptr);

// The whole of `path`, read as open_regular_file opens it; false and one line in `error`.
bool read_regular_file(const std::string &path, std::string &text, std::string &error);

// Writes all of `text` to `fd`, again after a short write or EINTR; false (errno set) if a
// write fails or writes nothing.
bool write_all(int fd, const std::string &text);

// `path` made absolute against the working directory.
std::string absolute_path(const std::string &path);

}  // namespace leaseguard
