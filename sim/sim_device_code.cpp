// Reading kernels and variables out of nvcc's device code (see sim_device_code.h).
#include "sim_device_code.h"

#include <elf.h>
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

namespace leaseguard::sim {
namespace {

// Nothing nvcc makes decompresses to more; a bigger claim is a corrupt header.
constexpr unsigned long long kMaxEntryBytes = 256ULL << 20;  // cuBLAS 13's largest: 16 MiB

struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_size;
  uint64_t entries_size;
};

struct FatbinWrapper {
  uint32_t magic;
  uint32_t version;
  const void *fatbin;
  const void *const *fatbins;  // version 2: null-terminated list of fat binaries
};

uint32_t first_word(const void *image) {
  uint32_t word = 0;
  std::memcpy(&word, image, sizeof word);
  return word;
}

bool is_elf(const void *image) {
  const auto *bytes = static_cast<const unsigned char *>(image);
  return std::memcmp(bytes, ELFMAG, SELFMAG) == 0;
}

// ---- Cubins (ELF) ----

constexpr unsigned char kCudaEntry = 0x10;    // st_other of a kernel (STO_CUDA_ENTRY)
constexpr unsigned char kCudaManaged = 0x04;  // st_other of a __managed__ variable

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool holds_variables(std::string_view section) {
  return starts_with(section, ".nv.global") || starts_with(section, ".nv.constant");
}

template <typename T>
bool read_at(const unsigned char *base, size_t limit, uint64_t offset, T &out) {
  if (offset > limit || limit - offset < sizeof(T)) return false;
  std::memcpy(&out, base + offset, sizeof(T));
  return true;
}

// How many bytes a cubin given without its size spans: to the end of its furthest section.
bool elf_extent(const unsigned char *elf, size_t &size) {
  Elf64_Ehdr header;
  std::memcpy(&header, elf, sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) return false;
  size = std::max<uint64_t>(sizeof header, header.e_shoff + uint64_t{header.e_shnum} * sizeof(Elf64_Shdr));
  for (unsigned i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    std::memcpy(&section, elf + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof section);
    if (section.sh_type != SHT_NOBITS) size = std::max<uint64_t>(size, section.sh_offset + section.sh_size);
  }
  return size < kMaxEntryBytes;
}

bool read_cubin(const unsigned char *elf, size_t size, DeviceCode &out) {
  Elf64_Ehdr header;
  if (!read_at(elf, size, 0, header) || !is_elf(elf) || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return false;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (unsigned i = 0; i < header.e_shnum; ++i)
    if (!read_at(elf, size, header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return false;
  auto string_at = [&](unsigned table, uint64_t offset) -> std::string_view {
    if (table >= sections.size()) return {};
    const Elf64_Shdr &strings = sections[table];
    if (strings.sh_offset > size || offset >= strings.sh_size || strings.sh_size > size - strings.sh_offset) return {};
    const char *start = reinterpret_cast<const char *>(elf + strings.sh_offset + offset);
    return {start, strnlen(start, strings.sh_size - offset)};
  };
  for (const Elf64_Shdr &table : sections) {
    if (table.sh_type != SHT_SYMTAB) continue;
    for (uint64_t at = sizeof(Elf64_Sym); at + sizeof(Elf64_Sym) <= table.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      if (!read_at(elf, size, table.sh_offset + at, symbol)) return false;
      const std::string_view name = string_at(table.sh_link, symbol.st_name);
      if (name.empty() || symbol.st_shndx == SHN_UNDEF || symbol.st_shndx >= sections.size()) continue;
      const unsigned type = ELF64_ST_TYPE(symbol.st_info);
      if (type == STT_FUNC && (symbol.st_other & kCudaEntry) != 0) {
        out.kernels.emplace(name);
        continue;
      }
      const Elf64_Shdr &home = sections[symbol.st_shndx];
      if (type != STT_OBJECT || !holds_variables(string_at(header.e_shstrndx, home.sh_name))) continue;
      DeviceVariable variable;
      variable.size = symbol.st_size;
      variable.managed = (symbol.st_other & kCudaManaged) != 0;
      const bool in_range = symbol.st_value <= home.sh_size && symbol.st_size <= home.sh_size - symbol.st_value;
      if (home.sh_type != SHT_NOBITS && in_range && home.sh_offset <= size && home.sh_size <= size - home.sh_offset) {
        const unsigned char *start = elf + home.sh_offset + symbol.st_value;
        variable.initial.assign(start, start + symbol.st_size);
      }
      out.variables[std::string(name)] = std::move(variable);
    }
  }
  return true;
}

// ---- PTX ----

std::string without_comments(std::string_view text) {
  std::string plain;
  plain.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
      continue;
    }
    if (i < text.size()) plain += text[i];
  }
  return plain;
}

std::vector<std::string> tokens_of(std::string_view statement) {
  std::vector<std::string> tokens;
  std::string token;
  auto flush = [&] {
    if (!token.empty()) tokens.push_back(token);
    token.clear();
  };
  for (char c : statement) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      flush();
    } else if (std::strchr("[]{}=,()", c) != nullptr) {
      flush();
      tokens.emplace_back(1, c);
    } else {
      token += c;
    }
  }
  flush();
  return tokens;
}

// Bytes per element of a PTX fundamental type (.b8, .u32, .f64, ...), or 0.
size_t element_size(const std::string &type) {
  if (type.size() < 3 || std::strchr("bsuf", type[1]) == nullptr) return 0;
  const long bits = std::strtol(type.c_str() + 2, nullptr, 10);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? static_cast<size_t>(bits / 8) : 0;
}

// One initialiser value's bits: a decimal or hex integer, or a float written 0fXXXXXXXX /
// 0dXXXXXXXXXXXXXXXX (PTX's exact forms). Anything else (an address of another symbol)
// is left zero.
uint64_t value_bits(const std::string &value) {
  if (value.size() > 2 && value[0] == '0' && (value[1] == 'f' || value[1] == 'd' || value[1] == 'F' || value[1] == 'D'))
    return std::strtoull(value.c_str() + 2, nullptr, 16);
  return std::strtoull(value.c_str(), nullptr, 0);
}

// `[.visible|.weak] (.global|.const) [.align N] .TYPE NAME[N]... [= VALUE | = {VALUES}]`
void read_ptx_variable(const std::vector<std::string> &tokens, DeviceCode &out) {
  size_t i = 0;
  while (i < tokens.size() && (tokens[i] == ".visible" || tokens[i] == ".weak")) ++i;
  if (i >= tokens.size() || (tokens[i] != ".global" && tokens[i] != ".const")) return;
  ++i;
  bool managed = false;
  if (i < tokens.size() && tokens[i] == ".attribute") {  // .attribute(.managed)
    for (++i; i < tokens.size() && tokens[i] != ")"; ++i) managed = managed || tokens[i] == ".managed";
    ++i;
  }
  if (i < tokens.size() && tokens[i] == ".align") i += 2;
  while (i < tokens.size() && (tokens[i] == ".v2" || tokens[i] == ".v4")) ++i;  // vectors: rare, read as scalars
  if (i + 1 >= tokens.size()) return;
  const size_t element = element_size(tokens[i]);
  if (element == 0) return;
  const std::string &name = tokens[i + 1];
  uint64_t count = 1;
  bool unsized = false;  // `name[]`: as many elements as the initialiser gives
  for (i += 2; i + 1 < tokens.size() && tokens[i] == "["; i += tokens[i + 1] == "]" ? 2 : 3) {
    if (tokens[i + 1] == "]") {
      unsized = true;
      continue;
    }
    count *= std::strtoull(tokens[i + 1].c_str(), nullptr, 10);
    if (count > kMaxEntryBytes) return;  // not a declaration nvcc writes
  }
  DeviceVariable variable;
  variable.managed = managed;
  variable.size = unsized ? 0 : count * element;
  if (i < tokens.size() && tokens[i] == "=") {
    for (++i; i < tokens.size(); ++i) {
      if (tokens[i] == "{" || tokens[i] == "}" || tokens[i] == ",") continue;
      if (!unsized && variable.initial.size() + element > variable.size) break;
      if (variable.initial.size() > kMaxEntryBytes) return;
      const uint64_t bits = value_bits(tokens[i]);
      const auto *bytes = reinterpret_cast<const unsigned char *>(&bits);  // little-endian, as the device
      variable.initial.insert(variable.initial.end(), bytes, bytes + element);
    }
  }
  if (unsized) variable.size = variable.initial.size();
  out.variables[name] = std::move(variable);
}

void read_ptx(std::string_view text, DeviceCode &out) {
  const std::string plain = without_comments(text);
  int depth = 0;  // inside a function body when > 0
  size_t start = 0;
  while (start < plain.size()) {
    size_t end = plain.find(';', start);
    if (end == std::string::npos) end = plain.size();
    const std::vector<std::string> tokens = tokens_of(std::string_view(plain).substr(start, end - start));
    // Where module scope resumes in this statement: its start, or just past the brace that
    // closes the body it began in.
    size_t scope_start = 0;
    for (int open = depth; open > 0 && scope_start < tokens.size(); ++scope_start)
      open += tokens[scope_start] == "{" ? 1 : tokens[scope_start] == "}" ? -1 : 0;
    if (depth == 0 || scope_start < tokens.size())
      read_ptx_variable(std::vector<std::string>(tokens.begin() + static_cast<ptrdiff_t>(scope_start), tokens.end()),
                        out);
    // A variable's braced initialiser closes in its own statement; a body's braces do not,
    // and a statement may close one body and open the next kernel's.
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] == "{") ++depth;
      else if (tokens[i] == "}") depth = depth > 0 ? depth - 1 : 0;
      else if (depth == 0 && tokens[i] == ".entry" && i + 1 < tokens.size()) out.kernels.insert(tokens[i + 1]);
    }
    start = end + 1;
  }
}

// ---- Fat binaries ----

struct Entry {
  FatbinEntryHeader header;
  const unsigned char *payload;
};

// The fat binary's entries, all within its `size` bytes.
bool collect_entries(const unsigned char *fatbin, size_t size, std::vector<Entry> &entries) {
  FatbinHeader header;
  if (!read_at(fatbin, size, 0, header) || header.magic != kFatbinMagic || header.header_size < sizeof header ||
      header.header_size > size || header.entries_size > size - header.header_size)
    return false;
  const unsigned char *cursor = fatbin + header.header_size;
  const unsigned char *const end = cursor + header.entries_size;
  while (end - cursor >= static_cast<ptrdiff_t>(sizeof(FatbinEntryHeader))) {
    Entry entry;
    std::memcpy(&entry.header, cursor, sizeof entry.header);
    const uint64_t span = uint64_t{entry.header.header_size} + entry.header.stored_size;
    if (entry.header.header_size < sizeof(FatbinEntryHeader) || span > static_cast<uint64_t>(end - cursor))
      return false;
    entry.payload = cursor + entry.header.header_size;
    entries.push_back(entry);
    cursor += span;
  }
  return true;
}

// How many bytes a fat binary given without its size spans: its header says.
size_t fatbin_extent(const void *fatbin) {
  FatbinHeader header;
  std::memcpy(&header, fatbin, sizeof header);
  return header.entries_size < kMaxEntryBytes * 64 ? header.header_size + header.entries_size : 0;
}

// An entry's bytes: its stored payload, or what it decompresses to (into a buffer left
// uninitialised: a claimed size is only trusted as far as the decompressor fills it).
struct Payload {
  std::unique_ptr<unsigned char[]> owned;
  const unsigned char *data = nullptr;
  size_t size = 0;
};

bool payload_of(const Entry &entry, Payload &payload) {
  const FatbinEntryHeader &header = entry.header;
  const bool lz4 = (header.flags & kFatbinCompressedLz4) != 0;
  const bool zstd = (header.flags & kFatbinCompressedZstd) != 0;
  if (!lz4 && !zstd) {
    payload.data = entry.payload;
    payload.size = header.stored_size;
    return true;
  }
  if (header.uncompressed_size == 0 || header.uncompressed_size > kMaxEntryBytes ||
      header.compressed_size > header.stored_size)
    return false;
  payload.owned.reset(new unsigned char[header.uncompressed_size]);
  payload.data = payload.owned.get();
  if (lz4) {
    const int produced = LZ4_decompress_safe(
        reinterpret_cast<const char *>(entry.payload), reinterpret_cast<char *>(payload.owned.get()),
        static_cast<int>(header.compressed_size), static_cast<int>(header.uncompressed_size));
    if (produced < 0) return false;
    payload.size = static_cast<size_t>(produced);
    return true;
  }
  const size_t produced =
      ZSTD_decompress(payload.owned.get(), header.uncompressed_size, entry.payload, header.compressed_size);
  if (ZSTD_isError(produced) != 0) return false;
  payload.size = produced;
  return true;
}

// The PTX of the highest version the device runs, for the interpreter.
bool keep_ptx(const std::vector<Entry> &entries, DeviceCode &out) {
  unsigned best = 0;
  const Entry *chosen = nullptr;
  for (const Entry &entry : entries) {
    if (entry.header.kind == kFatbinEntryElf) out.machine_code.insert(entry.header.sm_version);
    if (entry.header.kind == kFatbinEntryPtx && entry.header.sm_version <= kDeviceSmVersion &&
        entry.header.sm_version >= best) {
      best = entry.header.sm_version;
      chosen = &entry;
    }
  }
  if (chosen == nullptr) return true;
  Payload payload;
  if (!payload_of(*chosen, payload)) return false;
  const auto *text = reinterpret_cast<const char *>(payload.data);
  out.ptx.assign(text, strnlen(text, payload.size));
  // Its variables too: the interpreter names some the machine code keeps local (`$str`, the
  // strings of printf).
  DeviceCode declared;
  read_ptx(out.ptx, declared);
  out.variables.insert(declared.variables.begin(), declared.variables.end());
  return true;
}

DeviceCodeStatus read_entries(const std::vector<Entry> &entries, DeviceCode &out) {
  if (!keep_ptx(entries, out)) return DeviceCodeStatus::Corrupt;
  // The highest SM version the device runs, for ELF first, else for PTX.
  for (unsigned short kind : {kFatbinEntryElf, kFatbinEntryPtx}) {
    unsigned best = 0;
    for (const Entry &entry : entries)
      if (entry.header.kind == kind && entry.header.sm_version <= kDeviceSmVersion)
        best = std::max(best, entry.header.sm_version);
    if (best == 0) continue;
    for (const Entry &entry : entries) {
      if (entry.header.kind != kind || entry.header.sm_version != best) continue;
      Payload payload;
      if (!payload_of(entry, payload)) return DeviceCodeStatus::Corrupt;
      if (kind == kFatbinEntryElf && !read_cubin(payload.data, payload.size, out)) return DeviceCodeStatus::Corrupt;
      if (kind == kFatbinEntryPtx) {
        const auto *text = reinterpret_cast<const char *>(payload.data);
        read_ptx(std::string_view(text, strnlen(text, payload.size)), out);
      }
    }
    return DeviceCodeStatus::Read;
  }
  return DeviceCodeStatus::NoBinaryForGpu;
}

}  // namespace

DeviceCodeStatus read_device_code(const void *data, size_t size, DeviceCode &out) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  if (bytes == nullptr || size < sizeof(uint32_t)) return DeviceCodeStatus::NotCode;
  if (first_word(bytes) == kFatbinMagic) {
    std::vector<Entry> entries;
    if (!collect_entries(bytes, size, entries)) return DeviceCodeStatus::Corrupt;
    return read_entries(entries, out);
  }
  if (size >= SELFMAG && is_elf(bytes))
    return read_cubin(bytes, size, out) ? DeviceCodeStatus::Read : DeviceCodeStatus::Corrupt;
  const std::string_view text(reinterpret_cast<const char *>(bytes),
                              strnlen(reinterpret_cast<const char *>(bytes), size));
  if (text.find(".version") == std::string_view::npos || text.find(".target") == std::string_view::npos)
    return DeviceCodeStatus::NotCode;
  read_ptx(text, out);
  out.ptx.assign(text);
  return DeviceCodeStatus::Read;
}

DeviceCodeStatus read_device_code(const void *image, DeviceCode &out) {
  if (image == nullptr) return DeviceCodeStatus::NotCode;
  switch (first_word(image)) {
    case kFatbinWrapperMagic: {
      FatbinWrapper wrapper;
      std::memcpy(&wrapper, image, sizeof wrapper);
      std::vector<const void *> fatbins;
      if (wrapper.version == 1 && wrapper.fatbin != nullptr) {
        fatbins.push_back(wrapper.fatbin);
      } else if (wrapper.version == 2 && wrapper.fatbins != nullptr) {
        for (const void *const *fatbin = wrapper.fatbins; *fatbin != nullptr; ++fatbin) fatbins.push_back(*fatbin);
      } else {
        return DeviceCodeStatus::Corrupt;
      }
      // The entries of every fat binary together: the best architecture is chosen across them.
      std::vector<Entry> entries;
      for (const void *fatbin : fatbins)
        if (first_word(fatbin) != kFatbinMagic ||
            !collect_entries(static_cast<const unsigned char *>(fatbin), fatbin_extent(fatbin), entries))
          return DeviceCodeStatus::Corrupt;
      return read_entries(entries, out);
    }
    case kFatbinMagic: return read_device_code(image, fatbin_extent(image), out);
    default: break;
  }
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (is_elf(image)) {
    size_t size = 0;
    if (!elf_extent(bytes, size)) return DeviceCodeStatus::Corrupt;
    return read_device_code(image, size, out);
  }
  return read_device_code(image, std::strlen(static_cast<const char *>(image)), out);
}

}  // namespace leaseguard::sim
