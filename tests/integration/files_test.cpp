// leaseguard's files must not become a way in: private modes, no following of planted
// links, no overwriting, nothing written by setuid programs.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

namespace fs = std::filesystem;

unsigned mode_of(const std::string &path) {
  struct stat status;
  EXPECT_EQ(lstat(path.c_str(), &status), 0) << path;
  return status.st_mode & 07777;
}

std::map<std::string, std::string> preload_environment(const std::string &out_dir) {
  return {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
          {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
          {"LEASEGUARD_OUT", out_dir},
          {"LEASEGUARD_RUN_ID", "files"}};
}

TEST(Files, JournalsAndReportsArePrivate) {
  TempDir dir;
  const std::string out = dir / "new/out";
  auto run = run_under_leaseguard(out, {victim("threads")}, {"--format", "text"});
  ASSERT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(mode_of(out), 0700u);
  int files = 0, run_directories = 0;
  for (const auto &entry : fs::recursive_directory_iterator(out)) {
    if (entry.is_symlink()) continue;  // `latest`, naming the run
    if (entry.is_directory()) {
      EXPECT_EQ(mode_of(entry.path()), 0700u) << entry.path();
      ++run_directories;
      continue;
    }
    EXPECT_EQ(mode_of(entry.path()), 0600u) << entry.path();
    ++files;
  }
  EXPECT_EQ(run_directories, 1);
  EXPECT_EQ(files, 5);  // journal, exit statuses and leaseguard-run.json in the run's directory; report.json,
                        // leaseguard-report.txt
}

TEST(Files, APlantedLinkAtTheJournalIsRefusedAndNotFollowed) {
  TempDir dir;
  const std::string out = dir / "out";
  const std::string target = dir / "target";
  fs::create_directories(out);
  auto result = run_process_with_setup({victim("threads")}, preload_environment(out), [&] {
    std::string journal = out + "/files." + std::to_string(getpid()) + ".journal";
    if (symlink(target.c_str(), journal.c_str()) != 0) _exit(99);
  });
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "threads done\n");
  EXPECT_NE(result.err.find("is a symbolic link; refusing to write a journal there"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1);
  EXPECT_FALSE(fs::exists(target));
}

TEST(Files, AnotherFileAtTheJournalNameIsNeverOverwritten) {
  TempDir dir;
  const std::string out = dir / "out";
  fs::create_directories(out);
  std::string taken;
  auto result = run_process_with_setup({victim("threads")}, preload_environment(out), [&] {
    std::ofstream(out + "/files." + std::to_string(getpid()) + ".journal") << "someone else's";
  });
  EXPECT_EQ(result.exit_code, 0);
  int journals = 0;
  for (const auto &entry : fs::directory_iterator(out)) {
    std::string name = entry.path().filename();
    if (name.find(".1.journal") != std::string::npos) ++journals;
    else EXPECT_EQ(read_text(entry.path()), "someone else's");
  }
  EXPECT_EQ(journals, 1);
}

TEST(Files, AnOutputLinkToAnotherUsersDirectoryIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a directory owned by another user";
  TempDir dir;
  fs::create_directories(dir / "theirs");
  struct passwd *nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  ASSERT_EQ(chown((dir / "theirs").c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  fs::create_symlink(dir / "theirs", dir / "out");
  auto result = run_process({victim("threads")}, preload_environment(dir / "out"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.err.find("refusing to write there"), std::string::npos) << result.err;
  EXPECT_TRUE(fs::is_empty(dir / "theirs"));
}

// Under secure execution (a setuid program run by another user) the preload writes nothing.
// The loader honours LD_PRELOAD for such programs only for setuid libraries in system
// directories, so the test installs a copy of the preload there for its duration.
TEST(Files, SetuidProgramsRecordAndWriteNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setuid program";
  struct passwd *nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string system_copy = "/usr/lib/x86_64-linux-gnu/libleaseguard_setuid_test.so";
  fs::copy_file(LEASEGUARD_PRELOAD_PATH, system_copy, fs::copy_options::overwrite_existing);
  struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() { unlink(path.c_str()); }
  } remove_copy{system_copy};
  ASSERT_EQ(chmod(system_copy.c_str(), 04755), 0);
  const std::string program = dir / "threads-setuid";
  fs::copy_file(victim("threads"), program);
  // The output directory is nobody's own: leaseguard writes only into one of its user's.
  const std::string out = dir / "out";
  auto make_out = [&] {
    fs::create_directories(out);
    EXPECT_EQ(chown(out.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
    EXPECT_EQ(chmod(out.c_str(), 0700), 0);
  };
  make_out();

  auto run_as_nobody = [&](unsigned mode) {
    EXPECT_EQ(chmod(program.c_str(), mode), 0);
    return run_process_with_setup({program},
                                  {{"LD_PRELOAD", "libleaseguard_setuid_test.so"},
                                   {"LEASEGUARD_OUT", out},
                                   {"LEASEGUARD_LOG", "debug"},
                                   {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}},
                                  [&] {
                                    if (setgid(nobody->pw_gid) != 0 || setuid(nobody->pw_uid) != 0) _exit(98);
                                  });
  };
  // Control: the same program without the setuid bit, as the same user, is recorded.
  auto plain = run_as_nobody(0755);
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(fs::is_empty(out)) << "the control run wrote no journal: the test cannot tell anything";
  fs::remove_all(out);
  make_out();
  // setuid root, run by nobody: secure execution.
  auto secure = run_as_nobody(04755);
  EXPECT_EQ(secure.exit_code, 0) << secure.err;
  // The preload was loaded (it says so), and chose to record nothing.
  EXPECT_NE(secure.err.find("secure execution (setuid or setgid program): recording nothing"), std::string::npos)
      << secure.err;
  EXPECT_EQ(secure.out, "threads done\n");
  EXPECT_TRUE(fs::is_empty(out));
}

}  // namespace
}  // namespace leaseguard::testing
