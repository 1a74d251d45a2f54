// The report leads to the program's own line in a program built as users build theirs
// (tests/victims/inlined_service.cu, nvcc -O2 -g, static and shared runtime): calls the
// compiler inlined are frames of their own, in every format, and a leak's site is its first
// frame outside the CUDA runtime (tools/report/runtime_frames.h), also where it is inlined.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "process_runner.h"
#include "../unit/test_support.h"

using leaseguard::report::JsonValue;
using namespace leaseguard::testing;

namespace {

const std::string kSource = std::string(LEASEGUARD_SOURCE_ROOT) + "/tests/victims/inlined_service.cu";

// The line of the victim's `// site: NAME` comment, and of main's call of NAME.
int line_of(const std::string &marker) {
  std::ifstream in(kSource);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number)
    if (text.find(marker) != std::string::npos) return number;
  ADD_FAILURE() << marker << " not in " << kSource;
  return 0;
}
int site_line(const std::string &handler) { return line_of("// site: " + handler); }

RunResult leaseguard(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), LEASEGUARD_BIN);
  return run_process(arguments);
}

bool ends_with(const std::string &text, const std::string &tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

#define SKIP_WITHOUT_NVCC()                                                                                \
  if (!LEASEGUARD_HAVE_NVCC)                                                                               \
  GTEST_SKIP() << "SKIPPED: the CUDA Toolkit's nvcc was not found when this build was configured, so the " \
                  "CUDA runtime victims were not built; install the toolkit (nvcc on the PATH) and reconfigure"

class SiteFrames : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NVCC();
    run_ = run_under_leaseguard(out_.path(), {victim(std::string("inlined_service_") + GetParam())});
    ASSERT_EQ(run_.result.exit_code, 0) << run_.result.err;
    ASSERT_NE(run_.result.out.find("served"), std::string::npos) << run_.result.out;
  }
  // `report` of the run in FORMAT, with more options; its output file's text.
  std::string report(const std::string &format, std::vector<std::string> options = {}) {
    const std::string file = out_ / ("again." + format);
    std::vector<std::string> arguments = {"report", out_.path(), "--format", format + "=" + file};
    arguments.insert(arguments.end(), options.begin(), options.end());
    auto result = leaseguard(arguments);
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 23) << result.err;
    return read_text(file);
  }
  TempDir out_;
  LeaseguardRun run_;
};

}  // namespace

// addr2line -i's view, in the JSON report: the typed cudaMalloc<T> in cuda_runtime.h, then
// the handler at its line, both inlined at one address, then main at its call of the handler.
TEST_P(SiteFrames, InlinedCallsAreFramesOfTheirOwnWithTheirLines) {
  std::map<std::string, std::string> classes;  // handler -> class
  for (const JsonValue *leak : all_leaks(run_.json)) {
    const std::vector<JsonValue> &stack = (*leak)["stack"].items();
    size_t handler = stack.size();
    for (size_t i = 0; i < stack.size(); ++i)
      if (!stack[i]["file"].is_null() && ends_with(stack[i]["file"].as_string(), "inlined_service.cu")) {
        handler = i;
        break;
      }
    ASSERT_LT(handler + 1, stack.size()) << run_.result.err;
    ASSERT_GT(handler, 0u);
    const JsonValue &typed = stack[handler - 1], &inlined = stack[handler], &caller = stack[handler + 1];
    const std::string name = inlined["function"].as_string();
    classes[name] = (*leak)["reachability"].as_string();
    EXPECT_EQ(typed["function"].as_string().rfind("cudaMalloc<", 0), 0u) << typed["function"].as_string();
    EXPECT_TRUE(ends_with(typed["file"].as_string(), "/cuda_runtime.h")) << typed["file"].as_string();
    EXPECT_TRUE(typed["inlined"].as_bool());
    EXPECT_TRUE(inlined["inlined"].as_bool());
    EXPECT_EQ(inlined["line"].as_number(), site_line(name)) << name;
    EXPECT_EQ(typed["offset"].as_string(), inlined["offset"].as_string());  // one address, three calls
    EXPECT_EQ(caller["function"].as_string(), "main");
    EXPECT_TRUE(caller["inlined"].is_null());
    EXPECT_EQ(caller["offset"].as_string(), inlined["offset"].as_string());
    EXPECT_EQ(caller["line"].as_number(), line_of("if (warm_cache(1024)")) << name;
  }
  const std::map<std::string, std::string> expected = {
      {"handle_error", "direct"}, {"handle_request", "direct"}, {"warm_cache", "reachable"}};
  EXPECT_EQ(classes, expected) << run_.result.err;
}

// The text report as LeakSanitizer prints inlined frames: each its own line, one address.
TEST_P(SiteFrames, TheTextReportNamesTheHandlerAtItsLine) {
  const std::string text = report("text");
  for (const char *handler : {"handle_request", "handle_error"})
    EXPECT_NE(text.find(std::string(" in ") + handler + " " + kSource + ":" + std::to_string(site_line(handler))),
              std::string::npos)
        << text;
  EXPECT_NE(text.find("/cuda_runtime.h:"), std::string::npos) << text;  // the runtime's part stays in the stack
  const std::string folded = report("folded");
  EXPECT_NE(folded.find(";main;handle_request;cudaMalloc<float>;"), std::string::npos) << folded;
}

// SARIF locations and JUnit's file are the site, never cuda_runtime.h or the runtime.
TEST_P(SiteFrames, SarifAndJunitPlaceEachLeakAtTheProgramsLine) {
  JsonValue sarif;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(report("sarif"), sarif, error)) << error;
  std::set<int> lines;
  for (const JsonValue &result : sarif["runs"][0]["results"].items()) {
    const JsonValue &physical = result["locations"][0]["physicalLocation"];
    EXPECT_TRUE(ends_with(physical["artifactLocation"]["uri"].as_string(), "inlined_service.cu"))
        << physical["artifactLocation"]["uri"].as_string();
    lines.insert(static_cast<int>(physical["region"]["startLine"].as_number()));
  }
  EXPECT_EQ(lines, (std::set<int>{site_line("handle_request"), site_line("handle_error")}));
  const std::string junit = report("junit");  // relative to the source root, the working directory's checkout
  std::smatch file;
  ASSERT_TRUE(std::regex_search(junit, file, std::regex("<testcase [^>]* file=\"([^\"]*)\""))) << junit;
  EXPECT_TRUE(file[1] == kSource || ends_with(kSource, "/" + file[1].str())) << file[1];
}

// --gen-suppressions names each site's function, and a generated line silences only the
// leaks it was generated from: not the other lost buffer, not the reachable cache, though
// all three came through the same inlined cudaMalloc and the same runtime frames.
TEST_P(SiteFrames, AGeneratedSuppressionMatchesOnlyTheLeaksItCameFrom) {
  const std::string text = report("text", {"--gen-suppressions", "--show-reachable"});
  std::regex rule("Suppress with: (leak:[^\n]*)");
  std::vector<std::string> rules;
  for (std::sregex_iterator at(text.begin(), text.end(), rule), end; at != end; ++at) rules.push_back((*at)[1]);
  EXPECT_EQ(std::set<std::string>(rules.begin(), rules.end()),
            (std::set<std::string>{"leak:^handle_request$", "leak:^handle_error$", "leak:^warm_cache$"}))
      << text;
  const std::string file = out_ / "suppressions.txt";
  std::ofstream(file) << "leak:^handle_request$\n";
  JsonValue json;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(report("json", {"--suppressions", file}), json, error)) << error;
  std::map<std::string, std::string> left;  // handler -> class
  for (const JsonValue *leak : all_leaks(json))
    for (const JsonValue &frame : (*leak)["stack"].items())
      if (!frame["file"].is_null() && ends_with(frame["file"].as_string(), "inlined_service.cu")) {
        left[frame["function"].as_string()] = (*leak)["reachability"].as_string();
        break;
      }
  EXPECT_EQ(left, (std::map<std::string, std::string>{{"handle_error", "direct"}, {"warm_cache", "reachable"}}));
  EXPECT_EQ(json["summary"]["suppressed_allocations"].as_number(), 1);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, SiteFrames, ::testing::Values("static", "shared"));
