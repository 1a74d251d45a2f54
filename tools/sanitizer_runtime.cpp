// Reading a program's DT_NEEDED entries (see sanitizer_runtime.h).
#include "sanitizer_runtime.h"

#include <elf.h>
#include <unistd.h>

#include <cstring>

#include "files.h"

namespace leaseguard::cli {
namespace {

// Reads exactly `bytes` at `offset`; false past the end of the file.
bool read_at(int fd, uint64_t offset, void *into, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = pread(fd, static_cast<char *>(into) + done, bytes - done, static_cast<off_t>(offset + done));
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

// Where the loaded address `address` is in the file, through the PT_LOAD segments.
std::optional<uint64_t> file_offset_of(const std::vector<Elf64_Phdr> &segments, uint64_t address) {
  for (const Elf64_Phdr &segment : segments)
    if (segment.p_type == PT_LOAD && address >= segment.p_vaddr && address - segment.p_vaddr < segment.p_filesz)
      return segment.p_offset + (address - segment.p_vaddr);
  return std::nullopt;
}

std::vector<std::string> needed_of(int fd) {
  Elf64_Ehdr header{};
  if (!read_at(fd, 0, &header, sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > 4096)
    return {};
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!read_at(fd, header.e_phoff, segments.data(), segments.size() * sizeof(Elf64_Phdr))) return {};
  std::vector<Elf64_Dyn> dynamic;
  for (const Elf64_Phdr &segment : segments) {
    if (segment.p_type != PT_DYNAMIC || segment.p_filesz > (1u << 20)) continue;
    dynamic.resize(segment.p_filesz / sizeof(Elf64_Dyn));
    if (!read_at(fd, segment.p_offset, dynamic.data(), dynamic.size() * sizeof(Elf64_Dyn))) return {};
  }
  uint64_t strings = 0, strings_size = 0;
  for (const Elf64_Dyn &entry : dynamic) {
    if (entry.d_tag == DT_STRTAB) strings = entry.d_un.d_ptr;
    if (entry.d_tag == DT_STRSZ) strings_size = entry.d_un.d_val;
  }
  const std::optional<uint64_t> table = file_offset_of(segments, strings);
  if (!table || strings_size == 0 || strings_size > (16u << 20)) return {};
  std::string text(strings_size, '\0');
  if (!read_at(fd, *table, text.data(), text.size())) return {};
  std::vector<std::string> needed;
  for (const Elf64_Dyn &entry : dynamic) {
    if (entry.d_tag == DT_NULL) break;
    if (entry.d_tag == DT_NEEDED && entry.d_un.d_val < text.size())
      needed.emplace_back(text.c_str() + entry.d_un.d_val);
  }
  return needed;
}

bool starts_with(const std::string &text, const char *prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

std::vector<std::string> needed_libraries(const std::string &path) {
  std::string error;
  const int fd = open_regular_file(path, error);
  if (fd < 0) return {};
  std::vector<std::string> needed = needed_of(fd);
  close(fd);
  return needed;
}

std::optional<std::string> sanitizer_runtime(const std::vector<std::string> &needed) {
  for (const std::string &name : needed)
    if (starts_with(name, "libasan.so") || starts_with(name, "libclang_rt.asan") || starts_with(name, "libhwasan.so") ||
        starts_with(name, "libclang_rt.hwasan") || starts_with(name, "liblsan.so") ||
        starts_with(name, "libclang_rt.lsan") || starts_with(name, "libtsan.so") ||
        starts_with(name, "libclang_rt.tsan"))
      return name;
  return std::nullopt;
}

}  // namespace leaseguard::cli
