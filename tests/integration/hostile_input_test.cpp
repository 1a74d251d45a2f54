// What another user, a damaged disk or a crafted file can put in leaseguard's way: FIFOs
// where inputs are read, journals made to exhaust the reader, a destroyed header, a report
// killed while it is written, directories and links someone else owns. leaseguard must
// refuse in one line, or work, and never hang, lose the previous report, write where it
// was not meant to, or report a clean bill (docs/reliability.md).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "api_ids.h"
#include "journal_writer.h"
#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

namespace fs = std::filesystem;
using report::JsonValue;

const std::string kPipeline = std::string(LEASEGUARD_EXAMPLES) + "/leaky_pipeline";

RunResult leaseguard(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), LEASEGUARD_BIN);
  return run_process(arguments);
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// A directory holding the journal of one run of the example.
std::string journals_of_the_example(const TempDir &dir) {
  const std::string out = dir / "journals";
  EXPECT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", out, "--", kPipeline}).exit_code, 0);
  return out;
}

std::string the_journal_in(const std::string &directory) {
  for (const auto &entry : fs::recursive_directory_iterator(directory))
    if (entry.path().extension() == ".journal") return entry.path();
  return "";
}

// --- FIFOs where inputs are read ----------------------------------------------------------------

// Each input leaseguard reads, named as a FIFO with no writer: opening one for reading
// would block forever. Refused in one line, exit 2 (the test would hang, not fail, on a
// reader that opens it: ctest's time limit then fails it).
TEST(HostileInput, AFifoNamedAsAnyInputIsRefusedInsteadOfHangingTheReader) {
  TempDir dir;
  const std::string journals = journals_of_the_example(dir);
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"report", fifo},                              // a journal
      {"report", dir / "fifo.json"},                 // a JSON report (below)
      {"report", "--baseline", fifo, journals},      // a baseline
      {"report", "--suppressions", fifo, journals},  // a suppressions file
      {"diff", fifo, journals},
      {"run", "--sim", "--suppressions", fifo, "--out", dir / "run", "--", kPipeline}};
  ASSERT_EQ(mkfifo((dir / "fifo.json").c_str(), 0600), 0);
  for (const auto &command : commands) {
    auto result = leaseguard(command);
    EXPECT_EQ(result.exit_code, 2) << command[1] << " " << command[2] << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "not a regular file")) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

// A journal whose module path names a FIFO: the report is made without that module's
// symbols, and says so.
TEST(HostileInput, AModulePathThatNamesAFifoIsNotOpened) {
  TempDir dir;
  const std::string fifo = dir / "libfifo.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  journal::JournalWriter writer;
  std::string error;
  journal::HeaderPayload header{};
  std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
  header.version = journal::kVersion;
  header.slot_bytes = journal::kSlotBytes;
  header.pid = 4242;
  ASSERT_TRUE(writer.open(dir / "fifo.journal", header, error)) << error;
  std::vector<unsigned char> module(sizeof(journal::ModulePayload) + fifo.size());
  journal::ModulePayload info{};
  info.path_bytes = static_cast<uint32_t>(fifo.size());
  std::memcpy(module.data(), &info, sizeof info);
  std::memcpy(module.data() + sizeof info, fifo.data(), fifo.size());
  ASSERT_TRUE(writer.append(journal::RecordType::Module, module.data(), module.size()));
  unsigned char stack[sizeof(journal::StackPayload) + sizeof(journal::StackFrame)] = {};
  journal::StackPayload stack_info{1, 1};
  journal::StackFrame frame{0, 0x1234, 0};
  std::memcpy(stack, &stack_info, sizeof stack_info);
  std::memcpy(stack + sizeof stack_info, &frame, sizeof frame);
  ASSERT_TRUE(writer.append(journal::RecordType::Stack, stack, sizeof stack));
  journal::AllocPayload alloc{};
  alloc.id = 1;
  alloc.address = 0x7000000;
  alloc.bytes = 64;
  alloc.stack_id = 1;
  alloc.lease_id = kProcessLeaseId;
  alloc.api = static_cast<uint16_t>(Api::cuMemAlloc_v2);
  ASSERT_NE(writer.append_one_slot(journal::RecordType::Alloc, alloc), journal::JournalWriter::kNoSlot);
  writer.abandon();  // its writer gone without an end: a crash's journal, not a running process's
  auto result = leaseguard({"report", "--format", "json=" + (dir / "r.json"), dir / "fifo.journal"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "no symbols for " + fifo + ": it cannot be read")) << result.out;
  EXPECT_TRUE(contains(result.out, "SUMMARY: leaseguard: 64 byte(s) leaked in 1 allocation(s).")) << result.out;
}

// --- Journals crafted to exhaust the reader -----------------------------------------------------

// A well-formed journal, made by hand, of `bytes`: one module with a path of 4,000 bytes
// (about the most a path can be), then stacks of the most frames a stack has, each frame at
// its own offset in the module, each stack leaked once. Every frame is distinct and names
// the module: copied into frames, its path made a megabyte of this take 1.2 GB.
void write_frames_journal(const std::string &path, size_t bytes) {
  journal::JournalWriter writer;
  std::string error;
  journal::HeaderPayload header{};
  std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
  header.version = journal::kVersion;
  header.slot_bytes = journal::kSlotBytes;
  header.pid = 4242;
  ASSERT_TRUE(writer.open(path, header, error)) << error;
  const std::string module_path = "/" + std::string(3999, 'm');
  std::vector<unsigned char> module(sizeof(journal::ModulePayload) + module_path.size());
  journal::ModulePayload info{};
  info.path_bytes = static_cast<uint32_t>(module_path.size());
  std::memcpy(module.data(), &info, sizeof info);
  std::memcpy(module.data() + sizeof info, module_path.data(), module_path.size());
  ASSERT_TRUE(writer.append(journal::RecordType::Module, module.data(), module.size()));
  constexpr uint32_t kDepth = 64;
  uint32_t offset = 0;
  for (uint32_t id = 1; writer.next_slot() * journal::kSlotBytes < bytes; ++id) {
    std::vector<unsigned char> stack(sizeof(journal::StackPayload) + kDepth * sizeof(journal::StackFrame));
    journal::StackPayload stack_info{id, kDepth};
    std::memcpy(stack.data(), &stack_info, sizeof stack_info);
    for (uint32_t i = 0; i < kDepth; ++i) {
      journal::StackFrame frame{0, offset++, 0};
      std::memcpy(stack.data() + sizeof stack_info + i * sizeof frame, &frame, sizeof frame);
    }
    ASSERT_TRUE(writer.append(journal::RecordType::Stack, stack.data(), stack.size()));
    journal::AllocPayload alloc{};
    alloc.id = id;
    alloc.address = 0x7000000 + uint64_t{id} * 256;
    alloc.bytes = 100;
    alloc.stack_id = id;
    alloc.lease_id = kProcessLeaseId;
    alloc.api = static_cast<uint16_t>(Api::cuMemAlloc_v2);
    ASSERT_NE(writer.append_one_slot(journal::RecordType::Alloc, alloc), journal::JournalWriter::kNoSlot);
  }
}

// The most memory (resident, KiB) a command took, and its exit status.
std::pair<long, int> peak_memory_of(const std::vector<std::string> &argv, rlim_t address_space = RLIM_INFINITY) {
  pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    if (address_space != RLIM_INFINITY) {
      rlimit limit{address_space, address_space};
      setrlimit(RLIMIT_AS, &limit);
    }
    std::vector<char *> args;
    for (const std::string &argument : argv) args.push_back(const_cast<char *>(argument.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(126);
  }
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  return {usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

// The reader's memory is bounded by its input: at most 32 bytes per byte of journal, plus
// 16 MiB (docs/reliability.md), for the journals that cost it most per byte.
TEST(HostileInput, ACraftedJournalTakesMemoryInProportionToItsSize) {
  if (kSanitized) GTEST_SKIP() << "a sanitizer's own memory would be measured";
  TempDir dir;
  for (size_t megabytes : {1, 2}) {
    const std::string journal = dir / ("frames" + std::to_string(megabytes) + ".journal");
    write_frames_journal(journal, megabytes << 20);
    const auto [kib, status] =
        peak_memory_of({LEASEGUARD_BIN, "report", "--quiet", "--format", "json=/dev/null", journal});
    EXPECT_EQ(status, 0);
    EXPECT_LE(kib, static_cast<long>(32 * (megabytes << 10) + (16 << 10))) << megabytes << " MB journal";
  }
}

// Memory that runs out is one line and exit 2, not an uncaught std::bad_alloc (SIGABRT).
TEST(HostileInput, RunningOutOfMemoryIsOneLineAndExit2) {
  if (kSanitized) GTEST_SKIP() << "a sanitizer's shadow memory needs more address space than the limit";
  TempDir dir;
  const std::string journal = dir / "frames.journal";
  write_frames_journal(journal, 8 << 20);
  auto result =
      run_process_with_setup({LEASEGUARD_BIN, "report", "--quiet", "--format", "json=/dev/null", journal}, {}, [] {
        rlimit limit{64 << 20, 64 << 20};
        setrlimit(RLIMIT_AS, &limit);
      });
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err, "leaseguard: error: out of memory\n");
}

// --- A destroyed header -----------------------------------------------------------------------

// Four zero bytes at the start of a journal (its header's tag) hid every record: "empty
// journal", no leak, exit 0. A damaged header is damage: the records are read, the report
// says it is partial, and `report` exits 2.
TEST(HostileInput, AJournalWithoutItsHeadersTagIsDamagedNotEmpty) {
  TempDir dir;
  const std::string journal = the_journal_in(journals_of_the_example(dir));
  {
    std::fstream file(journal, std::ios::in | std::ios::out | std::ios::binary);
    const char zeros[4] = {};
    file.write(zeros, sizeof zeros);
  }
  auto result = leaseguard({"report", "--fail-on-leak", journal});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_TRUE(contains(result.out, "damaged journal, report is partial (its header's tag is gone")) << result.out;
  EXPECT_TRUE(contains(result.out, "SUMMARY: leaseguard: 14336 byte(s) leaked in 4 allocation(s).")) << result.out;
  EXPECT_EQ(result.err, "leaseguard: error: damaged journal input; the report above is partial\n");
  // The whole first slot gone: not a journal any more, still never a clean bill.
  {
    std::fstream file(journal, std::ios::in | std::ios::out | std::ios::binary);
    const char zeros[64] = {};
    file.write(zeros, sizeof zeros);
  }
  result = leaseguard({"report", "--fail-on-leak", journal});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_TRUE(contains(result.err, "not a leaseguard journal (no header)")) << result.err;
}

// A process killed while creating its journal leaves one with nothing committed: empty, not
// damaged (nothing was recorded).
TEST(HostileInput, AJournalWithNothingCommittedIsEmpty) {
  TempDir dir;
  const std::string journal = dir / "killed.journal";
  {
    std::ofstream file(journal, std::ios::binary);
    const std::string zeros(32 << 10, '\0');
    file.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  auto result = leaseguard({"report", "--fail-on-leak", dir.path()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "empty journal (its process ended while creating it)")) << result.out;
}

// --- Reports replaced whole -----------------------------------------------------------------------

// A journal of `leaks` leaked allocations, made by hand (no stacks): its JSON report is
// mostly written, not read.
void write_leaks_journal(const std::string &path, uint64_t leaks) {
  journal::JournalWriter writer;
  std::string error;
  journal::HeaderPayload header{};
  std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
  header.version = journal::kVersion;
  header.slot_bytes = journal::kSlotBytes;
  header.pid = 4242;
  ASSERT_TRUE(writer.open(path, header, error)) << error;
  for (uint64_t id = 1; id <= leaks; ++id) {
    journal::AllocPayload alloc{};
    alloc.id = id;
    alloc.address = 0x7000000 + id * 256;
    alloc.bytes = 100 + id;
    alloc.lease_id = kProcessLeaseId;
    alloc.api = static_cast<uint16_t>(Api::cuMemAlloc_v2);
    ASSERT_NE(writer.append_one_slot(journal::RecordType::Alloc, alloc), journal::JournalWriter::kNoSlot);
  }
}

// `report` killed at any moment while writing leaves the previous report or the new one at
// the path, whole, never half of one or none. The moments are spread over a whole run's
// length, most of which is writing.
TEST(HostileInput, AReportKilledWhileItIsWrittenLeavesTheOldOneOrTheNew) {
  TempDir dir;
  const std::string journal = dir / "leaks.journal";
  // Long enough a report to be killed while it is written; under ThreadSanitizer, whose CLI
  // is several times slower, a smaller one does (25 reports must fit the test's time).
#if defined(__SANITIZE_THREAD__)
  write_leaks_journal(journal, 20000);
#else
  write_leaks_journal(journal, 100000);
#endif
  const std::string path = dir / "report.json";
  const auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(leaseguard({"report", "--quiet", "--format", "json=" + path, journal}).exit_code, 0);
  const auto whole_run_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  const std::string complete = read_text(path);
  std::mt19937 random(7);
  int killed_while_running = 0;
  for (int round = 0; round < 24; ++round) {
    pid_t child = fork();
    if (child == 0) {
      execl(LEASEGUARD_BIN, LEASEGUARD_BIN, "report", "--quiet", "--format", ("json=" + path).c_str(), journal.c_str(),
            static_cast<char *>(nullptr));
      _exit(126);
    }
    usleep(static_cast<useconds_t>(std::uniform_int_distribution<long>(0, whole_run_us)(random)));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    killed_while_running += WIFSIGNALED(status);
    const std::string now = read_text(path);
    // Not ASSERT_EQ: printing the difference of two large reports takes longer than the test.
    ASSERT_TRUE(now == complete) << "round " << round << ": " << now.size() << " bytes at the path, not the report's "
                                 << complete.size();
  }
  RecordProperty("killed_while_running", killed_while_running);
}

// An existing report is replaced with mode 0600 whatever its mode was, and a hard link at
// the report's name is replaced, not written through.
TEST(HostileInput, AReportReplacesTheFileAtItsNameNeverWritesThroughIt) {
  TempDir dir;
  const std::string journals = journals_of_the_example(dir);
  const std::string path = dir / "report.json", other = dir / "someone-elses-file";
  { std::ofstream(other) << "keep me\n"; }
  ASSERT_EQ(link(other.c_str(), path.c_str()), 0);
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  ASSERT_EQ(leaseguard({"report", "--quiet", "--format", "json=" + path, journals}).exit_code, 0);
  EXPECT_EQ(read_text(other), "keep me\n");
  struct stat report {};
  ASSERT_EQ(stat(path.c_str(), &report), 0);
  EXPECT_EQ(report.st_mode & 07777, 0600u);
  EXPECT_EQ(report.st_nlink, 1u);
  JsonValue json;
  std::string error;
  EXPECT_TRUE(JsonValue::parse(read_text(path), json, error)) << error;
  // A FIFO at the name is refused, not opened (which would block until someone reads).
  const std::string fifo = dir / "fifo-report.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto result = leaseguard({"report", "--quiet", "--format", "json=" + fifo, journals});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "leaseguard: error: cannot write " + fifo + ": not a regular file\n");
}

// --- Directories and links that someone else owns ----------------------------------------------

struct Nobody {
  uid_t uid = 0;
  gid_t gid = 0;
};
std::optional<Nobody> nobody() {
  if (geteuid() != 0) return std::nullopt;
  const passwd *entry = getpwnam("nobody");
  if (entry == nullptr) return std::nullopt;
  return Nobody{entry->pw_uid, entry->pw_gid};
}

// An output directory another user owns, or one that others may write into, is refused:
// whoever can write there can plant a FIFO at a report's name, or journals.
TEST(HostileInput, AnOutputDirectoryOthersCanWriteIntoIsRefused) {
  TempDir dir;
  const std::string open_to_all = dir / "open";
  fs::create_directories(open_to_all);
  ASSERT_EQ(chmod(open_to_all.c_str(), 0777), 0);
  auto result = leaseguard({"run", "--sim", "--out", open_to_all, "--", kPipeline});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "leaseguard: error: " + open_to_all +
                            " is writable by others (mode 0777); refusing to write there (chmod go-w " + open_to_all +
                            ")\n");
  EXPECT_TRUE(fs::is_empty(open_to_all));
  // The preload, told to write there without the CLI, records nothing and the program runs.
  auto direct = run_process({kPipeline}, {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                          {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                          {"LEASEGUARD_OUT", open_to_all}});
  EXPECT_EQ(direct.exit_code, 0);
  EXPECT_TRUE(contains(direct.err, "is writable by others")) << direct.err;
  EXPECT_TRUE(fs::is_empty(open_to_all));

  const auto other = nobody();
  if (!other) GTEST_SKIP() << "needs root (as CI is) to make a directory another user owns";
  const std::string theirs = dir / "theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(chown(theirs.c_str(), other->uid, other->gid), 0);
  ASSERT_EQ(chmod(theirs.c_str(), 0700), 0);
  result = leaseguard({"run", "--sim", "--out", theirs, "--", kPipeline});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, theirs + " is owned by uid " + std::to_string(other->uid) + ", not by this user"))
      << result.err;
  EXPECT_TRUE(fs::is_empty(theirs));
}

// A symbolic link in the output path that another user owns is not followed: it may point
// anywhere that user likes. A link of this user's own (or root's) is.
TEST(HostileInput, ALinkInTheOutputPathOwnedBySomeoneElseIsNotFollowed) {
  const auto other = nobody();
  if (!other) GTEST_SKIP() << "needs root (as CI is) to make a link another user owns";
  TempDir dir;
  const std::string target = dir / "target";
  fs::create_directories(target);
  const std::string planted = dir / "planted";
  ASSERT_EQ(symlink(target.c_str(), planted.c_str()), 0);
  ASSERT_EQ(lchown(planted.c_str(), other->uid, other->gid), 0);
  auto result = leaseguard({"run", "--sim", "--out", planted + "/out", "--", kPipeline});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "leaseguard: error: " + planted + " is a symbolic link owned by uid " +
                            std::to_string(other->uid) + "; refusing to follow it\n");
  EXPECT_TRUE(fs::is_empty(target));
  const std::string mine = dir / "mine";
  ASSERT_EQ(symlink(target.c_str(), mine.c_str()), 0);
  result = leaseguard({"run", "--sim", "--quiet", "--out", mine + "/out", "--", kPipeline});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(fs::is_empty(target / fs::path("out")));
}

// --- Smaller ones ----------------------------------------------------------------------------------

// A bad environment value is said once per run, not once per process of the tree.
TEST(HostileInput, ABadVariableIsSaidOncePerRun) {
  TempDir dir;
  auto result = run_process({LEASEGUARD_BIN, "run", "--sim", "--out", dir / "out", "--", victim("process_tree")},
                            {{"LEASEGUARD_STACK_DEPTH", "banana"}, *kForkedChildrenInherit.begin()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  size_t warnings = 0;
  for (size_t at = 0; (at = result.err.find("LEASEGUARD_STACK_DEPTH='banana' is not valid", at)) != std::string::npos;
       ++at)
    ++warnings;
  EXPECT_EQ(warnings, 1u) << result.err;
}

// LEASEGUARD_DEADLINE=@0 is a deadline long past (not "none"): the process lease ends as
// the process starts, and the run says why.
TEST(HostileInput, ADeadlineAlreadyPastEndsTheProcessLeaseAndIsSaid) {
  TempDir dir;
  auto run = run_under_leaseguard(dir / "out", {victim("ttl_expiry")}, {}, {{"LEASEGUARD_DEADLINE", "@0"}});
  EXPECT_TRUE(contains(run.result.err, "LEASEGUARD_DEADLINE='@0' is already past")) << run.result.err;
  bool expired = false;
  for (const JsonValue &lease : run.json["processes"][0]["leases"].items())
    expired = expired || (lease["name"].as_string() == "process" && lease["ended_by"].as_string() == "expiry");
  EXPECT_TRUE(expired) << read_text(dir / "out/report.json");
}

// A JSON report whose numbers are out of their fields' range is refused in one line (their
// conversion was undefined: 1e300 bytes read as 0).
TEST(HostileInput, AJsonReportWithANumberOutOfRangeIsRefused) {
  TempDir dir;
  const std::string journals = journals_of_the_example(dir);
  const std::string path = dir / "report.json";
  ASSERT_EQ(leaseguard({"report", "--quiet", "--format", "json=" + path, journals}).exit_code, 0);
  std::string text = read_text(path);
  const size_t bytes = text.find("\"bytes\": ");
  ASSERT_NE(bytes, std::string::npos);
  const size_t end = text.find_first_of(",}\n", bytes + 9);
  text.replace(bytes + 9, end - bytes - 9, "1e300");
  { std::ofstream(path) << text; }
  auto result = leaseguard({"report", path});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "leaseguard: error: " + path + ": the number 1e+300 is out of range for 'bytes'\n");
}

}  // namespace
}  // namespace leaseguard::testing
