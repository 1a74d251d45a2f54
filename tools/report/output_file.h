// A report or other output file, replaced whole or not at all.
//
// The file is written with no name (O_TMPFILE), or under a temporary name where the file
// system has no unnamed files, in the same directory, and renamed into place when complete, so
// a reader (a CI system, a later `leaseguard report`) sees the previous file or the new one,
// never half of one, even if leaseguard is killed while writing (which then leaves no file
// behind, where it had no name); a hard link at the name is replaced, not written through. Its directory is reached as
// files.h says (no symbolic link someone else owns is followed); a symbolic link, a FIFO or
// another special file at the name is refused, except a character device (/dev/null), which
// is written directly. New files have mode 0600: reports hold paths and names from the
// program, private like journals.
#pragma once

#include <string>
#include <string_view>

namespace leaseguard::report {

class OutputFile {
 public:
  explicit OutputFile(const std::string &path);
  ~OutputFile();  // a file not closed whole is removed; the previous one stays
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  // The first error is kept and what comes after it is dropped, so a renderer handing over
  // its text a piece at a time need not check each piece.
  void write(std::string_view text);
  // Puts the file in place; false with the first error if anything failed (then nothing
  // changed at the path).
  bool close(std::string &error);

 private:
  void fail(int error_number);
  void discard() noexcept;
  bool name_unnamed_file();

  std::string path_;
  std::string name_;       // its last component, in directory_
  std::string temporary_;  // the name it is written under, in directory_; empty: written directly
  bool unnamed_ = false;   // written with O_TMPFILE: named just before it is put in place
  int directory_ = -1;
  int fd_ = -1;
  std::string error_;
};

}  // namespace leaseguard::report
