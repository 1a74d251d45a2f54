// Device code images for tests, laid out as nvcc lays them out (sim/sim_device_code.h): a
// cubin with kernels and variables, PTX, fat binaries of such entries (stored, LZ4- or
// zstd-compressed) and the wrapper nvcc embeds.
#pragma once

#include <elf.h>
#include <lz4.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sim_device_code.h"

namespace leaseguard::testing {

struct CubinVariable {
  std::string name;
  size_t size;
  std::vector<unsigned char> initial;  // empty: in .nv.global (zeroed), else .nv.global.init
  bool managed = false;                // __managed__: marked 0x04 in st_other
};

// A 64-bit ELF cubin: each kernel an STO_CUDA_ENTRY function in its own .text section, one
// device function that is not a kernel ("helper"), the variables in .nv.global.init and
// .nv.global.
inline std::vector<unsigned char> make_cubin(const std::vector<std::string> &kernels,
                                             const std::vector<CubinVariable> &variables) {
  std::string section_names(1, '\0'), symbol_names(1, '\0');
  auto add_name = [](std::string &table, const std::string &name) {
    const auto offset = static_cast<Elf64_Word>(table.size());
    table += name;
    table += '\0';
    return offset;
  };
  std::vector<unsigned char> initialised;
  size_t zeroed = 0;
  std::vector<Elf64_Sym> symbols(1);
  // Sections: 0 null, 1 .shstrtab, 2 .strtab, 3 .symtab, 4 .nv.global.init, 5 .nv.global,
  // 6 .text.helper, 7... one .text per kernel.
  for (const CubinVariable &variable : variables) {
    Elf64_Sym symbol{};
    symbol.st_name = add_name(symbol_names, variable.name);
    symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    symbol.st_size = variable.size;
    symbol.st_other = variable.managed ? 0x04 : 0;
    if (variable.initial.empty()) {
      symbol.st_shndx = 5;
      symbol.st_value = zeroed;
      zeroed += variable.size;
    } else {
      symbol.st_shndx = 4;
      symbol.st_value = initialised.size();
      initialised.insert(initialised.end(), variable.initial.begin(), variable.initial.end());
      initialised.resize(symbol.st_value + variable.size, 0);
    }
    symbols.push_back(symbol);
  }
  Elf64_Sym helper{};
  helper.st_name = add_name(symbol_names, "helper");
  helper.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  helper.st_shndx = 6;
  symbols.push_back(helper);
  for (size_t i = 0; i < kernels.size(); ++i) {
    Elf64_Sym symbol{};
    symbol.st_name = add_name(symbol_names, kernels[i]);
    symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    symbol.st_other = 0x10;  // STO_CUDA_ENTRY
    symbol.st_shndx = static_cast<Elf64_Section>(7 + i);
    symbols.push_back(symbol);
  }
  std::vector<Elf64_Shdr> sections(7 + kernels.size());
  std::vector<unsigned char> image(sizeof(Elf64_Ehdr));
  auto append = [&image](const void *data, size_t bytes) {
    const size_t offset = image.size();
    const auto *start = static_cast<const unsigned char *>(data);
    image.insert(image.end(), start, start + bytes);
    return offset;
  };
  auto section = [&](size_t index, const std::string &name, Elf64_Word type) {
    sections[index].sh_name = add_name(section_names, name);
    sections[index].sh_type = type;
  };
  section(1, ".shstrtab", SHT_STRTAB);
  section(2, ".strtab", SHT_STRTAB);
  section(3, ".symtab", SHT_SYMTAB);
  section(4, ".nv.global.init", SHT_PROGBITS);
  section(5, ".nv.global", SHT_NOBITS);
  section(6, ".text.helper", SHT_PROGBITS);
  for (size_t i = 0; i < kernels.size(); ++i) section(7 + i, ".text." + kernels[i], SHT_PROGBITS);
  sections[2].sh_offset = append(symbol_names.data(), symbol_names.size());
  sections[2].sh_size = symbol_names.size();
  sections[3].sh_offset = append(symbols.data(), symbols.size() * sizeof(Elf64_Sym));
  sections[3].sh_size = symbols.size() * sizeof(Elf64_Sym);
  sections[3].sh_link = 2;
  sections[3].sh_entsize = sizeof(Elf64_Sym);
  sections[4].sh_offset = append(initialised.data(), initialised.size());
  sections[4].sh_size = initialised.size();
  sections[5].sh_offset = image.size();
  sections[5].sh_size = zeroed;
  sections[1].sh_offset = append(section_names.data(), section_names.size());
  sections[1].sh_size = section_names.size();
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_type = ET_EXEC;
  header.e_machine = 190;  // EM_CUDA
  header.e_ehsize = sizeof header;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = static_cast<Elf64_Half>(sections.size());
  header.e_shstrndx = 1;
  header.e_shoff = append(sections.data(), sections.size() * sizeof(Elf64_Shdr));
  std::memcpy(image.data(), &header, sizeof header);
  return image;
}

enum class Compression { None, Lz4, Zstd };

struct FatbinEntry {
  unsigned short kind;  // sim::kFatbinEntryElf or sim::kFatbinEntryPtx
  unsigned sm_version;
  std::vector<unsigned char> payload;
  Compression compression = Compression::None;
};

inline std::vector<unsigned char> make_fatbin(const std::vector<FatbinEntry> &entries) {
  std::vector<unsigned char> files;
  for (const FatbinEntry &entry : entries) {
    std::vector<unsigned char> stored = entry.payload;
    sim::FatbinEntryHeader header{};
    header.kind = entry.kind;
    header.version = 0x101;
    header.header_size = sizeof header;
    header.sm_version = entry.sm_version;
    header.bit_width = 64;
    header.flags = 0x11;  // 64-bit, Linux
    if (entry.compression == Compression::Lz4) {
      stored.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(entry.payload.size()))));
      const int written = LZ4_compress_default(reinterpret_cast<const char *>(entry.payload.data()),
                                               reinterpret_cast<char *>(stored.data()),
                                               static_cast<int>(entry.payload.size()), static_cast<int>(stored.size()));
      stored.resize(static_cast<size_t>(written));
      header.flags |= sim::kFatbinCompressedLz4;
    } else if (entry.compression == Compression::Zstd) {
      stored.resize(ZSTD_compressBound(entry.payload.size()));
      stored.resize(ZSTD_compress(stored.data(), stored.size(), entry.payload.data(), entry.payload.size(), 3));
      header.flags |= sim::kFatbinCompressedZstd;
    }
    if (entry.compression != Compression::None) {
      header.compressed_size = static_cast<unsigned>(stored.size());
      header.uncompressed_size = entry.payload.size();
    }
    stored.resize((stored.size() + 7) / 8 * 8, 0);  // entries are 8-byte aligned, as nvcc pads them
    header.stored_size = static_cast<unsigned>(stored.size());
    const auto *bytes = reinterpret_cast<const unsigned char *>(&header);
    files.insert(files.end(), bytes, bytes + sizeof header);
    files.insert(files.end(), stored.begin(), stored.end());
  }
  std::vector<unsigned char> fatbin(16);
  const uint32_t magic = sim::kFatbinMagic;
  const uint16_t version = 1, header_size = 16;
  const uint64_t files_size = files.size();
  std::memcpy(fatbin.data(), &magic, 4);
  std::memcpy(fatbin.data() + 4, &version, 2);
  std::memcpy(fatbin.data() + 6, &header_size, 2);
  std::memcpy(fatbin.data() + 8, &files_size, 8);
  fatbin.insert(fatbin.end(), files.begin(), files.end());
  return fatbin;
}

// What nvcc embeds in the host object (__fatbinwrap): version 1, pointing at one fat binary.
struct FatbinWrapper {
  uint32_t magic = sim::kFatbinWrapperMagic;
  uint32_t version = 1;
  const void *fatbin;
  const void *unused = nullptr;
};

inline std::vector<unsigned char> bytes_of(const std::string &text) {
  std::vector<unsigned char> bytes(text.begin(), text.end());
  bytes.push_back(0);
  return bytes;
}

}  // namespace leaseguard::testing
