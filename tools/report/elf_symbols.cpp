// Reading an ELF file's function symbols and build-id (see elf_symbols.h).
#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "files.h"

namespace leaseguard::report {

struct ElfSymbols::Mapping {
  void *base = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (base != MAP_FAILED) munmap(base, size);
  }
  std::string_view bytes() const { return {static_cast<const char *>(base), size}; }
};

namespace {

// `count` records of `size` bytes at `offset`, all inside `bytes`.
bool fits(std::string_view bytes, uint64_t offset, uint64_t count, uint64_t size) {
  if (offset > bytes.size() || size == 0) return false;
  return count <= (bytes.size() - offset) / size;
}

template <typename T>
T read_at(std::string_view bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

bool is_elf64_little_endian(std::string_view bytes) {
  return bytes.size() >= sizeof(Elf64_Ehdr) && std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0 &&
         static_cast<unsigned char>(bytes[EI_CLASS]) == ELFCLASS64 &&
         static_cast<unsigned char>(bytes[EI_DATA]) == ELFDATA2LSB;
}

// The section headers, or an empty list if the file has none that can be read.
std::vector<Elf64_Shdr> section_headers(std::string_view bytes) {
  const auto header = read_at<Elf64_Ehdr>(bytes, 0);
  if (header.e_shoff == 0 || header.e_shentsize != sizeof(Elf64_Shdr)) return {};
  if (!fits(bytes, header.e_shoff, 1, sizeof(Elf64_Shdr))) return {};
  uint64_t count = header.e_shnum;
  // More than 0xff00 sections: the count is in the first header's size.
  if (count == 0) count = read_at<Elf64_Shdr>(bytes, header.e_shoff).sh_size;
  if (count == 0 || !fits(bytes, header.e_shoff, count, sizeof(Elf64_Shdr))) return {};
  std::vector<Elf64_Shdr> sections(count);
  std::memcpy(sections.data(), bytes.data() + header.e_shoff, count * sizeof(Elf64_Shdr));
  return sections;
}

uint64_t padded4(uint64_t size) { return (size + 3) & ~uint64_t{3}; }

// The GNU build-id among the notes in bytes[offset, offset + size), as hex; empty if none.
std::string build_id_in_notes(std::string_view bytes, uint64_t offset, uint64_t size) {
  if (!fits(bytes, offset, 1, size)) return {};
  const uint64_t end = offset + size;
  while (end - offset >= sizeof(Elf64_Nhdr)) {
    const auto note = read_at<Elf64_Nhdr>(bytes, offset);
    const uint64_t name_at = offset + sizeof note;
    const uint64_t name_bytes = padded4(note.n_namesz);
    if (name_bytes > end - name_at) return {};
    const uint64_t desc_at = name_at + name_bytes;
    const uint64_t desc_bytes = padded4(note.n_descsz);
    if (desc_bytes > end - desc_at) return {};
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(bytes.data() + name_at, "GNU", 4) == 0) {
      static const char digits[] = "0123456789abcdef";
      std::string hex;
      for (uint64_t i = 0; i < note.n_descsz; ++i) {
        const auto byte = static_cast<unsigned char>(bytes[desc_at + i]);
        hex.push_back(digits[byte >> 4]);
        hex.push_back(digits[byte & 15]);
      }
      return hex;
    }
    offset = desc_at + desc_bytes;
  }
  return {};
}

std::string find_build_id(std::string_view bytes, const std::vector<Elf64_Shdr> &sections) {
  for (const Elf64_Shdr &section : sections) {
    if (section.sh_type != SHT_NOTE) continue;
    std::string id = build_id_in_notes(bytes, section.sh_offset, section.sh_size);
    if (!id.empty()) return id;
  }
  // A file without section headers still has its notes in a PT_NOTE segment.
  const auto header = read_at<Elf64_Ehdr>(bytes, 0);
  if (header.e_phentsize != sizeof(Elf64_Phdr) || !fits(bytes, header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr)))
    return {};
  for (uint64_t i = 0; i < header.e_phnum; ++i) {
    const auto segment = read_at<Elf64_Phdr>(bytes, header.e_phoff + i * sizeof(Elf64_Phdr));
    if (segment.p_type != PT_NOTE) continue;
    std::string id = build_id_in_notes(bytes, segment.p_offset, segment.p_filesz);
    if (!id.empty()) return id;
  }
  return {};
}

uint8_t rank_of(unsigned char binding) {
  switch (binding) {
    case STB_GLOBAL: return 0;
    case STB_WEAK: return 1;
    case STB_LOCAL: return 2;
    default: return 3;
  }
}

}  // namespace

ElfSymbols::~ElfSymbols() = default;

bool ElfSymbols::take_symbols_from(std::string_view bytes, bool full_table) {
  const std::vector<Elf64_Shdr> sections = section_headers(bytes);
  const uint32_t wanted = full_table ? SHT_SYMTAB : SHT_DYNSYM;
  for (const Elf64_Shdr &table : sections) {
    if (table.sh_type != wanted || table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= sections.size()) continue;
    const Elf64_Shdr &strings = sections[table.sh_link];
    const uint64_t count = table.sh_size / sizeof(Elf64_Sym);
    if (!fits(bytes, table.sh_offset, count, sizeof(Elf64_Sym)) || !fits(bytes, strings.sh_offset, 1, strings.sh_size))
      continue;
    const std::string_view names = bytes.substr(strings.sh_offset, strings.sh_size);
    std::vector<Symbol> found;
    for (uint64_t i = 0; i < count; ++i) {
      const auto symbol = read_at<Elf64_Sym>(bytes, table.sh_offset + i * sizeof(Elf64_Sym));
      const unsigned type = ELF64_ST_TYPE(symbol.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || symbol.st_shndx == SHN_UNDEF || symbol.st_value == 0 ||
          symbol.st_name >= names.size())
        continue;
      const std::string_view rest = names.substr(symbol.st_name);
      const size_t length = rest.find('\0');
      if (length == 0 || length == std::string_view::npos) continue;
      // A symbol of size 0 (hand-written assembly) covers what follows it in its section.
      uint64_t end = symbol.st_value + symbol.st_size;
      if (symbol.st_size == 0) {
        const bool in_a_section = symbol.st_shndx < sections.size() && (sections[symbol.st_shndx].sh_flags & SHF_ALLOC);
        end = in_a_section ? sections[symbol.st_shndx].sh_addr + sections[symbol.st_shndx].sh_size : symbol.st_value;
      }
      found.push_back(
          {symbol.st_value, end, rest.substr(0, length), rank_of(ELF64_ST_BIND(symbol.st_info)), symbol.st_size != 0});
    }
    // Stable: among equals, the first in the table.
    std::stable_sort(found.begin(), found.end(), [](const Symbol &a, const Symbol &b) {
      return a.address != b.address ? a.address < b.address : a.rank < b.rank;
    });
    symbols_ = std::move(found);
    full_table_ = full_table;
    return true;
  }
  return false;
}

std::unique_ptr<ElfSymbols> ElfSymbols::parse(std::string_view bytes, std::string &error) {
  if (!is_elf64_little_endian(bytes)) {
    error = "not a 64-bit little-endian ELF file";
    return nullptr;
  }
  std::unique_ptr<ElfSymbols> symbols(new ElfSymbols);
  symbols->build_id_ = find_build_id(bytes, section_headers(bytes));
  if (!symbols->take_symbols_from(bytes, true)) symbols->take_symbols_from(bytes, false);
  return symbols;
}

std::unique_ptr<ElfSymbols> ElfSymbols::open(const std::string &path, std::string &error) {
  std::unique_ptr<Mapping> mapping = map_file(path, error);
  if (!mapping) return nullptr;
  std::unique_ptr<ElfSymbols> symbols = parse(mapping->bytes(), error);
  if (!symbols) return nullptr;
  symbols->mappings_.push_back(std::move(mapping));
  // A stripped file's full table is in its debug file, found by build-id, if one is
  // installed; it must carry the same build-id (its names would otherwise be another
  // build's).
  if (!symbols->full_table_ && symbols->build_id_.size() > 2) {
    const std::string debug_path =
        "/usr/lib/debug/.build-id/" + symbols->build_id_.substr(0, 2) + "/" + symbols->build_id_.substr(2) + ".debug";
    std::string debug_error;
    if (std::unique_ptr<Mapping> debug = map_file(debug_path, debug_error)) {
      const std::string_view bytes = debug->bytes();
      if (is_elf64_little_endian(bytes) && find_build_id(bytes, section_headers(bytes)) == symbols->build_id_ &&
          symbols->take_symbols_from(bytes, true))
        symbols->mappings_.push_back(std::move(debug));
    }
  }
  return symbols;
}

std::string_view ElfSymbols::function_at(uint64_t address) const {
  auto after = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                                [](uint64_t value, const Symbol &symbol) { return value < symbol.address; });
  if (after == symbols_.begin()) return {};
  const uint64_t nearest = (after - 1)->address;
  // The function at the highest address at or below `address` that contains it (one of size
  // 0 only if nearest, and in its section), preferring global over weak over local there.
  // One that ends before the address is not it: a few steps further back may hold an
  // enclosing one (a function with a symbol of its own inside it).
  const Symbol *best = nullptr;
  auto candidate = after;
  for (int steps = 0; candidate != symbols_.begin() && steps < 16; ++steps) {
    --candidate;
    if (best != nullptr && candidate->address != best->address) break;
    const bool contains = address < candidate->end && (candidate->sized || candidate->address == nearest);
    if (contains && (best == nullptr || candidate->rank <= best->rank)) best = &*candidate;
  }
  return best != nullptr ? best->name : std::string_view{};
}

std::unique_ptr<ElfSymbols::Mapping> ElfSymbols::map_file(const std::string &path, std::string &error) {
  // A module path comes from a journal: never a FIFO or a device (files.h).
  const int fd = open_regular_file(path, error);
  if (fd < 0) return nullptr;
  struct stat status {};
  auto mapping = std::make_unique<Mapping>();
  if (fstat(fd, &status) != 0 || status.st_size <= 0) {
    error = "not a regular file";
  } else {
    mapping->size = static_cast<size_t>(status.st_size);
    mapping->base = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping->base == MAP_FAILED) error = std::strerror(errno);
  }
  ::close(fd);
  if (mapping->base == MAP_FAILED) return nullptr;
  return mapping;
}

}  // namespace leaseguard::report
