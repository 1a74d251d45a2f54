// Function names from ELF symbol tables (the symbolizer's source without libdw): the names
// of this program's functions, the same names and build-ids libdw reads where it is in the
// build, and damaged files read without a crash.
#include <gtest/gtest.h>

#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "elf_symbols.h"
#include "symbolizer.h"

namespace leaseguard::report {
namespace {

extern "C" const void *elf_sample_marker_address();

__attribute__((noinline)) int elf_symbols_test_marker(int value) {
  asm volatile("" : "+r"(value));
  return value * 3 + 1;
}

// A frame for `address` as a journal records it: its module's path and the offset from the
// module's load base.
Frame frame_at(const void *address) {
  struct Search {
    uintptr_t address;
    Frame frame;
  } search{reinterpret_cast<uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *wanted = static_cast<Search *>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &segment = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (segment.p_type != PT_LOAD || wanted->address < start || wanted->address >= start + segment.p_memsz)
            continue;
          std::string path = info->dlpi_name;
          if (path.empty()) {
            char exe[4096];
            const ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
            path.assign(exe, length > 0 ? static_cast<size_t>(length) : 0);
          }
          wanted->frame.module = path;
          wanted->frame.offset = wanted->address - info->dlpi_addr;
          wanted->frame.address = wanted->address;
          return 1;
        }
        return 0;
      },
      &search);
  return search.frame;
}

std::string bytes_of(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ElfSymbols, NamesAFunctionOfThisProgramFromItsFullTable) {
  const Frame frame = frame_at(reinterpret_cast<const void *>(&elf_symbols_test_marker));
  ASSERT_FALSE(frame.module.empty());
  std::string error;
  auto symbols = ElfSymbols::open(frame.module, error);
  ASSERT_TRUE(symbols) << error;
  EXPECT_TRUE(symbols->has_full_table());
  const std::string name(symbols->function_at(frame.offset + 1));
  EXPECT_NE(demangle(name.c_str()).find("elf_symbols_test_marker(int)"), std::string::npos) << name;
  EXPECT_TRUE(symbols->function_at(0).empty());
  EXPECT_FALSE(symbols->build_id().empty());
}

TEST(ElfSymbols, NamesWhatLibdwNamesAlongACallStack) {
  if (!symbol_source_available(SymbolSource::DebugInfo)) GTEST_SKIP() << "this build has no libdw";
  void *addresses[64];
  const int depth = backtrace(addresses, 64);
  ASSERT_GT(depth, 4);
  Symbolizer with_libdw(SymbolSource::DebugInfo);
  Symbolizer from_tables(SymbolSource::SymbolTable);
  int named = 0;
  for (int i = 0; i < depth; ++i) {
    Frame by_libdw = frame_at(addresses[i]);
    if (by_libdw.module.empty()) continue;
    Frame by_tables = by_libdw;
    with_libdw.symbolize(by_libdw);
    from_tables.symbolize(by_tables);
    // libdw may know a function that only debug information names (a static function of a
    // stripped library); what the tables name, it names the same.
    if (by_tables.function) {
      EXPECT_EQ(by_tables.function, by_libdw.function) << by_libdw.module << "+" << by_libdw.offset;
      ++named;
    }
    EXPECT_FALSE(by_tables.file) << "the tables give no source files";
    EXPECT_FALSE(by_tables.line);
  }
  EXPECT_GE(named, 3) << "this test, GoogleTest's caller and main at least";
}

TEST(ElfSymbols, ReadsTheBuildIdLibdwReads) {
  if (!symbol_source_available(SymbolSource::DebugInfo)) GTEST_SKIP() << "this build has no libdw";
  for (const void *code :
       {reinterpret_cast<const void *>(&elf_symbols_test_marker), reinterpret_cast<const void *>(&backtrace)}) {
    const Frame frame = frame_at(code);
    auto by_libdw = open_module_symbols(SymbolSource::DebugInfo, frame.module);
    auto by_tables = open_module_symbols(SymbolSource::SymbolTable, frame.module);
    ASSERT_TRUE(by_libdw && by_tables) << frame.module;
    EXPECT_EQ(by_tables->build_id(), by_libdw->build_id()) << frame.module;
  }
}

TEST(ElfSymbols, TheSymbolizerFromTablesAloneNamesThisProgramsFrames) {
  Frame frame = frame_at(reinterpret_cast<const void *>(&elf_symbols_test_marker));
  frame.offset += 2;  // a return address inside it, as a stack holds (looked up a byte before)
  Symbolizer symbolizer(SymbolSource::SymbolTable);
  symbolizer.symbolize(frame);
  ASSERT_TRUE(frame.function);
  EXPECT_NE(frame.function->find("elf_symbols_test_marker(int)"), std::string::npos) << *frame.function;
  EXPECT_TRUE(symbolizer.unusable_modules().empty());
}

TEST(ElfSymbols, AModuleRebuiltSinceTheRunIsNotUsed) {
  Frame frame = frame_at(reinterpret_cast<const void *>(&elf_symbols_test_marker));
  frame.offset += 2;
  frame.build_id = "00112233";
  Symbolizer symbolizer(SymbolSource::SymbolTable);
  symbolizer.symbolize(frame);
  EXPECT_FALSE(frame.function);
  ASSERT_EQ(symbolizer.unusable_modules().count(frame.module), 1u);
  EXPECT_NE(symbolizer.unusable_modules().at(frame.module).find("rebuilt"), std::string::npos);
}

TEST(ElfSymbols, WhatIsNotAnElfFileIsRefusedInOneLine) {
  std::string error;
  EXPECT_FALSE(ElfSymbols::parse("#!/bin/sh\n", error));
  EXPECT_EQ(error, "not a 64-bit little-endian ELF file");
  EXPECT_FALSE(ElfSymbols::open("/nonexistent/module.so", error));
  EXPECT_FALSE(error.empty());
  EXPECT_FALSE(ElfSymbols::open("/proc/self", error));  // a directory
}

// Every prefix of a real file, and the file with bytes of its headers and section table
// changed: names or none, never a read outside the bytes (ASan would see it) or a crash.
// The file is a small library built for this (tests/unit/elf_sample.c), which names its
// function when it is whole.
TEST(ElfSymbols, DamagedFilesGiveNamesOrNoneAndNeverACrash) {
  const Frame frame = frame_at(elf_sample_marker_address());
  std::string bytes = bytes_of(frame.module);
  ASSERT_GT(bytes.size(), sizeof(Elf64_Ehdr));
  std::string error;
  {
    // The intact file names the marker, so the damages below are made to a file whose lookup
    // works. Its parse (a view of the bytes) ends before they change.
    auto whole = ElfSymbols::parse(bytes, error);
    ASSERT_TRUE(whole) << frame.module << ": " << error;
    ASSERT_EQ(whole->function_at(frame.offset + 1), "elf_sample_marker") << frame.module;
  }
  auto read_and_look_up = [&](std::string_view image) {
    if (auto symbols = ElfSymbols::parse(image, error)) symbols->function_at(frame.offset + 1);
  };
  for (size_t size = 0; size < bytes.size(); size += 1 + size / 3)
    read_and_look_up(std::string_view(bytes).substr(0, size));
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  const size_t table_end = std::min<size_t>(bytes.size(), header.e_shoff + size_t{header.e_shnum} * sizeof(Elf64_Shdr));
  std::vector<size_t> places;
  for (size_t at = 0; at < 1024; at += 5) places.push_back(at);
  for (size_t at = header.e_shoff; at < table_end; at += 7) places.push_back(at);
  for (size_t at : places) {
    for (unsigned char damage : {0x00, 0xff, 0x5a}) {
      const char kept = bytes[at];
      bytes[at] = static_cast<char>(damage);
      read_and_look_up(bytes);
      bytes[at] = kept;
    }
  }
}

}  // namespace
}  // namespace leaseguard::report
