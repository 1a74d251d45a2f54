// Which frames of a stack are the program's (program_frames.h): a leak's identity leaves
// out the C library's frames below them, and the symbolizer looks up no source line there.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>

#include "program_frames.h"
#include "renderers.h"
#include "symbolizer.h"

namespace leaseguard::report {
namespace {

Frame named(const std::string &module, const std::string &function, const char *file = nullptr) {
  Frame frame;
  frame.module = module;
  frame.function = function;
  if (file != nullptr) {
    frame.file = file;
    frame.line = 58;
  }
  return frame;
}

Frame unnamed(const std::string &module, uint64_t offset) {
  Frame frame;
  frame.module = module;
  frame.offset = offset;
  return frame;
}

TEST(ProgramFrames, TheCLibraryIsKnownByItsFileName) {
  EXPECT_TRUE(is_c_library("/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_TRUE(is_c_library("/lib/x86_64-linux-gnu/libc-2.31.so"));
  EXPECT_TRUE(is_c_library("/lib/x86_64-linux-gnu/libpthread.so.0"));
  EXPECT_TRUE(is_c_library("/lib64/ld-linux-x86-64.so.2"));
  EXPECT_FALSE(is_c_library("/usr/lib/libcuda.so.1"));
  EXPECT_FALSE(is_c_library("/opt/app/libcore.so"));  // "libc" only as a whole name
  EXPECT_FALSE(is_c_library("/opt/app/bin/app"));
  EXPECT_FALSE(is_c_library(""));
}

TEST(ProgramFrames, TheProgramsFramesEndAtMainOrWhereTheCLibraryStartedTheThread) {
  const std::string app = "/opt/app/bin/app", libc = "/lib/x86_64-linux-gnu/libc.so.6";
  // The main thread: main, then the C library's start-up, then the program's _start.
  std::vector<Frame> main_thread{named(app, "blur"), named(app, "main"), named(libc, "__libc_start_call_main"),
                                 named(libc, "__libc_start_main"), named(app, "_start")};
  EXPECT_EQ(trailing_c_library_frames_begin(main_thread), main_thread.size());
  EXPECT_EQ(program_frame_count(main_thread), 2u);
  // Another thread: the C library's start_thread and clone3 at the bottom.
  std::vector<Frame> thread{named(app, "upload"), named(app, "worker"), unnamed(libc, 0x88fd4),
                            unnamed(libc, 0x1095bc)};
  EXPECT_EQ(trailing_c_library_frames_begin(thread), 2u);
  EXPECT_EQ(program_frame_count(thread), 2u);
  // A stack cut short by the depth, and one through the C library in its middle: all theirs.
  std::vector<Frame> cut{named(app, "a"), named(app, "b")};
  EXPECT_EQ(program_frame_count(cut), 2u);
  std::vector<Frame> through{named(app, "compare"), named(libc, "qsort"), named(app, "sort_all"), named(app, "main")};
  EXPECT_EQ(program_frame_count(through), 4u);
}

ProcessReport process_with_stack(std::vector<Frame> stack) {
  ProcessReport process;
  process.add_stack(7, stack);
  return process;
}

TEST(LeakSignature, TheCLibrarysFramesBelowTheProgramDoNotCount) {
  const std::string app = "/opt/app/bin/app", libc = "/lib/x86_64-linux-gnu/libc.so.6";
  // The same leak on a machine with the C library's debug symbols and on one without.
  ProcessReport with_symbols =
      process_with_stack({named(app, "blur", "/src/blur.c"), named(app, "main", "/src/main.c"),
                          named(libc, "__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h"),
                          named(libc, "__libc_start_main", "../csu/libc-start.c"), named(app, "_start")});
  ProcessReport without_symbols =
      process_with_stack({named(app, "blur", "/src/blur.c"), named(app, "main", "/src/main.c"), unnamed(libc, 0x2724a),
                          named(libc, "__libc_start_main"), named(app, "_start")});
  EXPECT_EQ(leak_signature(with_symbols, 7, Api::cuMemAlloc_v2),
            leak_signature(without_symbols, 7, Api::cuMemAlloc_v2));
  // The program's own frames still tell leaks apart.
  ProcessReport elsewhere = process_with_stack(
      {named(app, "sharpen", "/src/blur.c"), named(app, "main", "/src/main.c"), unnamed(libc, 0x2724a)});
  EXPECT_NE(leak_signature(elsewhere, 7, Api::cuMemAlloc_v2), leak_signature(without_symbols, 7, Api::cuMemAlloc_v2));
  // A thread's stack: the C library's start_thread and clone3 at its bottom do not count.
  ProcessReport thread_with =
      process_with_stack({named(app, "upload", "/src/up.c"), named(libc, "start_thread", "pthread_create.c"),
                          named(libc, "clone3", "clone3.S")});
  ProcessReport thread_without =
      process_with_stack({named(app, "upload", "/src/up.c"), unnamed(libc, 0x88fd4), unnamed(libc, 0x1095bc)});
  EXPECT_EQ(leak_signature(thread_with, 7, Api::cuMemAlloc_v2), leak_signature(thread_without, 7, Api::cuMemAlloc_v2));
}

// Two functions of this test program, which has debug information: one a frame above main,
// one below it.
__attribute__((noinline)) int above_main(int x) { return x * 3 + 1; }
__attribute__((noinline)) int below_main(int x) { return x * 5 + 2; }

// A frame in this program at `function`'s first instruction, unsymbolized (+1: frames hold
// return addresses, and the symbolizer looks up the byte before).
Frame frame_at(const void *function) {
  Dl_info info{};
  EXPECT_NE(dladdr(function, &info), 0);
  char path[PATH_MAX] = {};
  EXPECT_GT(readlink("/proc/self/exe", path, sizeof path - 1), 0);
  Frame frame;
  frame.module = path;
  frame.offset = reinterpret_cast<uintptr_t>(function) - reinterpret_cast<uintptr_t>(info.dli_fbase) + 1;
  return frame;
}

TEST(Symbolizer, FramesBelowMainHaveTheirNamesButNoSourceLines) {
  Report report;
  ProcessReport process;
  Frame main_frame = named("/opt/app/bin/app", "main");  // symbolized already, as read from a report
  process.add_stack(7, {frame_at(reinterpret_cast<const void *>(&above_main)), main_frame,
                        frame_at(reinterpret_cast<const void *>(&below_main))});
  LeaseEnding ending;
  Leak leak;
  leak.stack_id = 7;
  ending.leaks.push_back(leak);
  process.leases.push_back(ending);
  report.processes.push_back(process);
  Symbolizer symbolizer;
  symbolizer.symbolize(report);
  const StackView stack = report.processes[0].stack(7);
  ASSERT_TRUE(stack[0].function);
  EXPECT_NE(stack[0].function->find("above_main"), std::string::npos);
  ASSERT_TRUE(stack[0].file);
  EXPECT_NE(stack[0].file->find("program_frames_test.cpp"), std::string::npos);
  ASSERT_TRUE(stack[2].function);
  EXPECT_NE(stack[2].function->find("below_main"), std::string::npos);
  EXPECT_FALSE(stack[2].file);
  EXPECT_FALSE(stack[2].line);
  // The same frame above main, in another stack, has its line: looked up apart.
  Frame again = frame_at(reinterpret_cast<const void *>(&below_main));
  symbolizer.symbolize(again);
  ASSERT_TRUE(again.file);
  EXPECT_NE(again.file->find("program_frames_test.cpp"), std::string::npos);
}

// Stacks share their frames: each distinct frame is kept once, and looked up once. A frame
// below main in one stack and above it in another has its source line (what the second
// wants), in both.
// A report of `process` with one leak from each of `stack_ids`, symbolized.
Report symbolized_with_leaks_from(ProcessReport process, std::initializer_list<uint32_t> stack_ids,
                                  Symbolizer &symbolizer) {
  for (uint32_t id : stack_ids) {
    Leak leak;
    leak.stack_id = id;
    LeaseEnding ending;
    ending.leaks.push_back(leak);
    process.leases.push_back(ending);
  }
  Report report;
  report.processes.push_back(std::move(process));
  symbolizer.symbolize(report);
  return report;
}

TEST(Symbolizer, AFrameTwoStacksShareIsKeptOnceWithTheLinesEitherWants) {
  ProcessReport process;
  const Frame main_frame = named("/opt/app/bin/app", "main");
  const Frame shared = frame_at(reinterpret_cast<const void *>(&below_main));
  process.add_stack(1, {frame_at(reinterpret_cast<const void *>(&above_main)), main_frame, shared});
  process.add_stack(2, {shared, main_frame});
  EXPECT_EQ(process.frames.size(), 3u);
  EXPECT_EQ(process.stack(1)[2].offset, process.stack(2)[0].offset);
  Symbolizer symbolizer;
  const Report report = symbolized_with_leaks_from(process, {1, 2}, symbolizer);
  const ProcessReport &symbolized = report.processes[0];
  for (const Frame *shared_frame : {&symbolized.stack(1)[2], &symbolized.stack(2)[0]}) {
    const Frame &frame = *shared_frame;
    ASSERT_TRUE(frame.function);
    EXPECT_NE(frame.function->find("below_main"), std::string::npos);
    ASSERT_TRUE(frame.file);
    EXPECT_NE(frame.file->find("program_frames_test.cpp"), std::string::npos);
  }
  EXPECT_TRUE(symbolized.stack(3).empty());
}

// A frame that came symbolized (a report read back) stays as it came, even where one stack
// wants its line and another did not.
TEST(Symbolizer, AFrameThatCameSymbolizedIsNeverLookedUpAgain) {
  ProcessReport process;
  const Frame main_frame = named("/opt/app/bin/app", "main");
  Frame as_read = frame_at(reinterpret_cast<const void *>(&above_main));  // a real place
  as_read.function = "as_the_report_said";
  process.add_stack(1, {main_frame, as_read});  // below main: no line wanted
  process.add_stack(2, {as_read, main_frame});  // above main: its line wanted
  Symbolizer symbolizer;
  const Report report = symbolized_with_leaks_from(process, {1, 2}, symbolizer);
  const Frame &frame = report.processes[0].stack(2)[0];
  EXPECT_EQ(frame.function, std::optional<std::string>("as_the_report_said"));
  EXPECT_FALSE(frame.file);
  EXPECT_EQ(symbolizer.lookups(), 0u);
}

}  // namespace
}  // namespace leaseguard::report
