// The HTML report in a real browser (headless Chromium), at both ends of its range: one
// small run, and 100,000 leaks from as many stacks. What the page's script drew is read from
// the DOM Chromium dumps; what a person sees is checked on screenshots at a phone's and a
// laptop's width (tests/integration/screenshot_check.py); the view a link asks for
// (#search=...&focus=...) is how search and zoom are driven without a mouse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

const char *const kChromium = "/usr/bin/chromium";
const std::string kPipeline = std::string(LEASEGUARD_EXAMPLES) + "/leaky_pipeline";
const std::string kScreenshots = LEASEGUARD_SCREENSHOTS;  // kept for a person to look at

RunResult leaseguard(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), LEASEGUARD_BIN);
  return run_process(arguments);
}

size_t occurrences(const std::string &text, const std::string &what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

struct Window {
  int width;
  int height;
  std::string size() const { return std::to_string(width) + "," + std::to_string(height); }
};
const Window kLaptop{1280, 900}, kPhone{390, 844};

// The page after its script ran, as Chromium serializes it; fails the test on a script error
// or anything the page logged.
std::string load(const std::string &page, const Window &window, const std::string &fragment = "") {
  auto browser = run_process({kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                              "--v=0", "--window-size=" + window.size(), "--dump-dom", "file://" + page + fragment});
  EXPECT_EQ(browser.exit_code, 0) << browser.err;
  EXPECT_EQ(browser.err.find("Uncaught"), std::string::npos) << browser.err;
  EXPECT_EQ(browser.err.find(":CONSOLE"), std::string::npos) << browser.err;  // the page logs nothing
  const std::string &dom = browser.out;
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos) << "the page's script did not finish";
  EXPECT_NE(dom.find("data-overflow=\"no\""), std::string::npos)
      << "wider than a " << window.size()
      << " window: " << dom.substr(dom.find("<body"), dom.find("<h1") - dom.find("<body"));
  std::smatch ready;
  if (std::regex_search(dom, ready, std::regex("data-timings=\"([^\"]*)\"")))
    std::printf("%s at %s: ready (ms since navigation): %s\n", page.c_str(), window.size().c_str(),
                ready[1].str().c_str());
  return dom;
}

// A screenshot of the window as a person sees it on opening the page, checked: the leak
// headline on top, not blank, and with `flame` the flame graph in view.
void look_at(const std::string &page, const Window &window, const std::string &name, bool flame) {
  std::filesystem::create_directories(kScreenshots);
  const std::string png = kScreenshots + "/" + name + "-" + std::to_string(window.width) + ".png";
  std::filesystem::remove(png);
  auto shot = run_process({kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=" + window.size(), "--screenshot=" + png, "file://" + page});
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  std::vector<std::string> check = {"/usr/bin/python3",
                                    std::string(LEASEGUARD_SOURCE_ROOT) + "/tests/integration/screenshot_check.py", png,
                                    std::to_string(window.width), std::to_string(window.height)};
  if (flame) check.push_back("--flame");
  auto checked = run_process(check);
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
}

// What the page says in its headline, its top sites and its table's pager: the context of
// a failed expectation.
std::string said(const std::string &dom) {
  std::string out;
  for (const char *what : {"class=\"headline\"", "class=\"top-site\"", "page-position", "flame-status"}) {
    const size_t at = dom.find(what);
    out += std::string("\n  ") + what + ": " + (at == std::string::npos ? "(none)" : dom.substr(at, 240));
  }
  return out;
}

// Widths of the timeline's lease bars, by the lease's name (from each bar's tooltip).
std::map<std::string, double> lease_bar_widths(const std::string &dom) {
  std::map<std::string, double> widths;
  std::regex bar("<rect[^>]*width=\"([0-9.]+)\"[^>]*class=\"lease-bar\"[^>]*><title>lease [0-9]+ \"([^\"]*)\"");
  for (std::sregex_iterator at(dom.begin(), dom.end(), bar), end; at != end; ++at)
    widths[(*at)[2]] = std::stod((*at)[1]);
  return widths;
}

// The timeline's lease bars and labels as drawn: the context of a failed width.
std::string said_about_leases(const std::string &dom) {
  std::string out;
  std::regex drawn("<(rect[^>]*class=\"(lease-bar|axis-break)\"[^>]*|text[^>]*>[^<]*·[^<]*)>");
  for (std::sregex_iterator at(dom.begin(), dom.end(), drawn), end; at != end; ++at) out += "\n  " + (*at)[1].str();
  return out;
}

class Html : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kChromium, X_OK) != 0) GTEST_SKIP() << "no Chromium here (scripts/setup.sh installs it)";
  }
  TempDir dir;
};

// One small run: the summary comes first, then the flame graph, the leak table and the
// timeline; self-contained; fits a phone.
TEST_F(Html, ASmallReportReadsSummaryFirstInARealBrowser) {
  // Run the example from a long path without break opportunities, as CI checkouts have: the
  // command line and every frame's file must still wrap on a phone.
  const std::string deep = dir / "a_checkout_directory_with_a_long_name_and_nowhere_to_break/build_tree/examples";
  std::filesystem::create_directories(deep);
  std::filesystem::copy_file(kPipeline, deep + "/leaky_pipeline");
  // No time-to-live: whether a 1 ms expiry fires before or during the pipeline depends on
  // the machine's load, and with it how the leaks group. The exit ends the lease (its mark).
  const std::string page = dir / "report.html";
  auto run = leaseguard(
      {"run", "--sim", "--quiet", "--out", dir.path(), "--format", "html=" + page, "--", deep + "/leaky_pipeline"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string html = read_text(page);
  EXPECT_EQ(html.find(" src="), std::string::npos);  // self-contained: nothing to fetch
  EXPECT_EQ(html.find(" href="), std::string::npos);
  for (const Window &window : {kLaptop, kPhone}) {
    const std::string dom = load(page, window);
    EXPECT_NE(dom.find("14.0 KiB leaked in 4 allocation(s)"), std::string::npos);
    const size_t summary = dom.find("id=\"summary\""), flame = dom.find("class=\"flame-frame"),
                 table = dom.find("class=\"leak-group\""), timeline = dom.find("class=\"lease-line\"");
    ASSERT_NE(summary, std::string::npos);
    EXPECT_LT(summary, flame);
    EXPECT_LT(flame, table);
    EXPECT_LT(table, timeline);
    EXPECT_EQ(occurrences(dom, "class=\"top-site\""), 2u);  // blur and upload_frame, largest first
    EXPECT_LT(dom.find(">blur "), dom.find(">upload_frame "));
    EXPECT_EQ(occurrences(dom, "class=\"leak-group\""), 2u);    // the table
    EXPECT_GE(occurrences(dom, "class=\"lease-marker\""), 1u);  // lease end marks
    EXPECT_GE(occurrences(dom, "class=\"lease-begin\""), 1u);   // and begin marks
    EXPECT_EQ(occurrences(dom, "class=\"lease-bar\""), 1u);     // the process lease's lane
    EXPECT_GE(occurrences(dom, "class=\"flame-frame"), 9u);     // all, _start ... main, blur, the entry point
    EXPECT_NE(dom.find(">blur<"), std::string::npos);
    EXPECT_NE(dom.find("still reachable"), std::string::npos);  // the 1 MiB the pipeline keeps
  }
  look_at(page, kLaptop, "small", true);
  look_at(page, kPhone, "small", false);
}

// A program built as users build theirs (nvcc -O2 -g): every cudaMalloc comes through the
// runtime's frames and cuda_runtime.h's inlined template, yet the largest sites and each
// group's title are the program's handlers, where the leaks happened (runtime_frames.h).
TEST_F(Html, LeakSitesAreTheProgramsOwnFramesNotTheRuntimes) {
  if (!LEASEGUARD_HAVE_NVCC) GTEST_SKIP() << "SKIPPED: no nvcc when this build was configured: no CUDA runtime victims";
  const std::string page = dir / "report.html";
  auto run = leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--format", "html=" + page, "--",
                         victim("inlined_service_static")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string dom = load(page, kLaptop);
  EXPECT_EQ(occurrences(dom, "class=\"top-site\""), 2u) << said(dom);
  EXPECT_LT(dom.find("<td>handle_error "), dom.find("<td>handle_request ")) << said(dom);  // largest first
  EXPECT_NE(dom.find("<summary>handle_error</summary>"), std::string::npos) << said(dom);
  EXPECT_NE(dom.find("<summary>handle_request</summary>"), std::string::npos) << said(dom);
  EXPECT_EQ(dom.find("<summary>libcudart_static_"), std::string::npos) << said(dom);
}

// A run with live checks: the page plots lost and still reachable bytes at each check and
// lists the sites that grew across them (tests/victims/live_check.c: 2, then 5 lost).
TEST_F(Html, LiveChecksArePlottedWithTheGrowingSites) {
  const std::string page = dir / "report.html";
  auto run = leaseguard(
      {"run", "--sim", "--quiet", "--out", dir.path(), "--format", "html=" + page, "--", victim("live_check")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const Window &window : {kLaptop, kPhone}) {
    const std::string dom = load(page, window);
    EXPECT_NE(dom.find("<h3>Live checks</h3>"), std::string::npos) << said(dom);
    EXPECT_NE(dom.find("id=\"checks-0\""), std::string::npos);
    EXPECT_EQ(occurrences(dom, "class=\"check-lost-point\""), 2u);
    EXPECT_EQ(occurrences(dom, "class=\"check-reachable-point\""), 2u);
    EXPECT_GE(occurrences(dom, "class=\"growing-site\""), 1u);
    EXPECT_NE(dom.find("since the first check"), std::string::npos);
  }
}

// `lease start`'s report: the lease authority's account of the lease in the summary (read
// back from a JSON report that carries it, as `leaseguard report` merges them), legible at
// both widths.
TEST_F(Html, TheLeaseAuthoritysAccountIsInTheSummary) {
  const std::string json = dir / "run.json";
  auto run = leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--format", "json=" + json, "--", kPipeline});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string text = read_text(json);
  const size_t end = text.rfind('}');
  ASSERT_NE(end, std::string::npos);
  text.insert(end, R"(, "lease_authority": {"id": 7, "name": "train-7", "ended_by": "expiry", "teardown": "terminate",
    "stages": [{"stage": "reclaim", "at_ms": 0}, {"stage": "sigterm", "at_ms": 4}, {"stage": "sigkill", "at_ms": 1005},
               {"stage": "verify", "at_ms": 1009}],
    "processes": [{"pid": 81236, "gave_back_bytes": 1048576, "held": [], "journal": "/out/run.81236"},
                  {"pid": 81237, "gave_back_bytes": 0, "held": [{"device": 0, "bytes": 2097152}], "journal": "-"}],
    "verify": {"result": "held", "held": [{"pid": 81237, "device": 0, "bytes": null}]}})");
  std::ofstream(json) << text;
  const std::string page = dir / "lease.html";
  auto report = leaseguard({"report", "--quiet", "--format", "html=" + page, json});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  for (const Window &window : {kLaptop, kPhone}) {
    const std::string dom = load(page, window);
    EXPECT_NE(dom.find("Lease train-7 (id 7) ended by expiry; teardown terminate: reclaim at +0 ms, sigterm at +4 ms, "
                       "sigkill at +1005 ms, verify at +1009 ms."),
              std::string::npos)
        << said(dom);
    EXPECT_NE(dom.find("Device memory still held after the teardown: pid 81237 device 0 ?."), std::string::npos);
    EXPECT_EQ(occurrences(dom, "<td class=\"num\">81236</td>"), 1u);
    EXPECT_NE(dom.find("<td class=\"num\">1.0 MiB</td>"), std::string::npos);
    EXPECT_NE(dom.find("<td class=\"num\">2.0 MiB</td>"), std::string::npos);
    EXPECT_LT(dom.find("class=\"lease-authority\""), dom.find("class=\"flame-frame"));  // in the summary
  }
}

// Search and zoom, as a link asks for them: matching frames marked and their bytes summed,
// the table filtered to the groups under the zoomed frame that match.
TEST_F(Html, SearchAndZoomFilterTheFlameGraphAndTheTable) {
  const std::string page = dir / "report.html";
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--format", "html=" + page, "--", kPipeline})
                .exit_code,
            0);
  std::string dom = load(page, kLaptop, "#search=upload_frame");
  EXPECT_NE(dom.find("Matched 2.0 KiB of 14.0 KiB (14.3%)."), std::string::npos);
  EXPECT_GE(occurrences(dom, " matched\""), 1u);
  EXPECT_EQ(occurrences(dom, "class=\"leak-group\""), 1u);
  EXPECT_NE(dom.find("Groups 1–1 of 1 matching “upload_frame”"), std::string::npos);
  dom = load(page, kLaptop, "#focus=blur");
  EXPECT_NE(dom.find("Zoomed into blur (12.0 KiB)."), std::string::npos);
  EXPECT_EQ(occurrences(dom, "class=\"leak-group\""), 1u);
  EXPECT_NE(dom.find("Groups 1–1 of 1 under blur"), std::string::npos);
  EXPECT_GE(occurrences(dom, "flame-frame faded"), 5u);  // blur's callers, full width and faded
}

// 100,000 leaks from 100,000 distinct stacks (17 levels of two call sites): the summary
// names the one place they all come from, the flame graph draws only what is wider than a
// pixel, the table shows a page of 25, and zoom with search narrows 100,000 groups to 6,250 (a frame of level3 is one of
// its two call sites, on one of 8 paths).
TEST_F(Html, StaysUsefulAtAHundredThousandLeaks) {
  const std::string page = dir / "report.html";
  // --reachability off: the page is under test, not the classification, whose conservative
  // scan can find a few of 100,000 dropped addresses again in stale heap contents.
  auto run = leaseguard({"run", "--sim", "--quiet", "--reachability", "off", "--stack-depth", "24", "--out", dir.path(),
                         "--format", "html=" + page, "--", victim("report_shapes"), "many", "100000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(std::filesystem::file_size(page), 4u << 20);  // the data packed: ~1.9 MB
  std::string dom = load(page, kLaptop);
  EXPECT_NE(dom.find("leaked in 100,000 allocation(s)"), std::string::npos) << said(dom);
  EXPECT_EQ(occurrences(dom, "class=\"top-site\""), 1u) << said(dom);  // one place, reached through every stack
  EXPECT_NE(dom.find("from 100,000 stacks"), std::string::npos) << said(dom);
  EXPECT_EQ(occurrences(dom, "class=\"leak-group\""), 25u) << said(dom);
  EXPECT_NE(dom.find("Groups 1–25 of 100,000 · page 1 of 4,000"), std::string::npos) << said(dom);
  const size_t frames = occurrences(dom, "class=\"flame-frame");
  EXPECT_GE(frames, 100u);
  EXPECT_LE(frames, 1280u * 20);  // nothing narrower than a pixel is drawn
  dom = load(page, kPhone, "#search=level16&focus=level3");
  EXPECT_NE(dom.find("Zoomed into level3"), std::string::npos) << said(dom);
  EXPECT_NE(dom.find("(100.0%)."), std::string::npos) << said(dom);  // every stack passes through level16
  EXPECT_EQ(occurrences(dom, "class=\"leak-group\""), 25u) << said(dom);
  EXPECT_NE(dom.find("Groups 1–25 of 6,250 under level3, matching “level16”"), std::string::npos) << said(dom);
  look_at(page, kLaptop, "100k", true);
  look_at(page, kPhone, "100k", false);
}

// Three leases after 200 ms with nothing happening, two of a fraction of a millisecond and one
// that allocates every 3 ms for 30 ms: the idle stretch is cut to a marked break and no
// stretch between two moments is drawn narrower than 24 pixels (while there is room), so
// each lease's bar is wide enough to see and label however long its busy neighbour runs.
TEST_F(Html, ShortLeasesAfterALongIdleStretchAreDrawnLegibly) {
  const std::string page = dir / "report.html";
  auto run = leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--format", "html=" + page, "--",
                         victim("report_shapes"), "short_leases"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const auto &[window, least] : {std::pair{kLaptop, 24.0}, std::pair{kPhone, 8.0}}) {
    const std::string dom = load(page, window);
    EXPECT_GE(occurrences(dom, "class=\"axis-break\""), 1u);
    EXPECT_NE(dom.find("Moments too close to tell apart are drawn a few pixels apart."), std::string::npos)
        << said_about_leases(dom);
    auto widths = lease_bar_widths(dom);
    for (const std::string lease : {"parse", "plan", "execute"}) {
      ASSERT_TRUE(widths.count(lease)) << lease << " has no bar at " << window.size();
      EXPECT_GE(widths[lease], least) << lease << " at " << window.size() << said_about_leases(dom);
      if (window.width == kLaptop.width) {
        EXPECT_NE(dom.find(">" + lease + " · "), std::string::npos) << lease << ": no label" << said_about_leases(dom);
      }
    }
  }
}

}  // namespace
}  // namespace leaseguard::testing
