// VIZ=1 (engine/viz.cpp, docs/viz.md): after a realize, a self-contained page of its graph, which
// nodes fused into which kernel, and each kernel's source and time. The page is loaded in headless
// Chromium (Debian's `chromium`, installed by `make deps`): its script must draw every node; the
// screenshot goes to the build folder (`make viz-screenshot` copies it into docs/).
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <filesystem>
#include <regex>
#include <string>

#include "test_files.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

// Realizes a small MLP layer's forward with VIZ on, writing the page to `page`.
void realize_with_viz(const fs::path& page) {
  Tensor x = Tensor::randn({4, 8}).realize(), w = Tensor::randn({8, 3}).realize();
  Tensor b = Tensor::randn({3}).realize();
  set_viz(page.string());
  Tensor y = (x.matmul(w) + b).relu().softmax(1);
  try {
    y.realize();
  } catch (...) {
    set_viz("");
    throw;
  }
  set_viz("");
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t i = 0; (i = text.find(what, i)) != std::string::npos; i += what.size()) n++;
  return n;
}

}  // namespace

TEST(Viz, WritesOneSelfContainedPageOfTheLastRealize) {
  const fs::path dir = test::fresh_dir("viz_page");
  const fs::path page = dir / "viz.html";
  realize_with_viz(page);
  ASSERT_TRUE(fs::exists(page));
  EXPECT_FALSE(fs::exists(dir / "viz.html.tmp"));
  const std::string html = test::read_file(page);
  EXPECT_EQ(count(html, "http"), count(html, "http://www.w3.org/2000/svg"))
      << "no address but SVG's namespace";
  EXPECT_EQ(html.find("<script src"), std::string::npos) << "nothing is loaded from elsewhere";
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // The kernels' generated source is on the page, and each kernel is named.
  EXPECT_NE(html.find("\"source\":\""), std::string::npos);
  EXPECT_NE(html.find("REDUCE_AXIS"), std::string::npos) << "the softmax's reductions are nodes";
  EXPECT_GE(count(html, "\"device\":\"CPU\""), 2) << "the matrix product and the softmax: kernels";
  // A later realize replaces the page: only the last one is there.
  set_viz(page.string());
  (Tensor::ones({5}) * 7).realize();
  set_viz("");
  const std::string later = test::read_file(page);
  EXPECT_EQ(later.find("REDUCE_AXIS"), std::string::npos);
  EXPECT_EQ(count(later, "\"device\":\"CPU\""), 1);
}

TEST(Viz, AnUnwritablePathIsAnErrorNamingIt) {
  Tensor a = Tensor::ones({3}).realize();
  set_viz("/nonexistent-folder/viz.html");
  try {
    (a + 1).realize();
    set_viz("");
    FAIL() << "no error";
  } catch (const Error& e) {
    set_viz("");
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/viz.html"), std::string::npos) << e.what();
  }
}

TEST(Viz, ThePageRendersInHeadlessChromium) {
  const fs::path chromium = "/usr/bin/chromium";
  ASSERT_TRUE(fs::exists(chromium)) << "Debian's chromium is needed (make deps installs it)";
  const fs::path dir = test::fresh_dir("viz_chromium");
  const fs::path page = dir / "viz.html";
  realize_with_viz(page);
  const std::string html = test::read_file(page);
  const int nodes = count(html, "{\"id\":");
  ASSERT_GT(nodes, 5);
  // --dump-dom prints the document after its script ran: the script marks the <body> with the
  // number of nodes it drew.
  const std::vector<std::string> common = {"--headless", "--no-sandbox", "--disable-gpu",
                                           "--user-data-dir=" + (dir / "profile").string()};
  std::vector<std::string> args = common;
  args.push_back("--dump-dom");
  args.push_back("file://" + page.string());
  test::RunResult r = test::run_program(chromium, args, dir, 120);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("data-rendered=\"" + std::to_string(nodes) + "\""), std::string::npos)
      << "the script did not draw the " << nodes << " nodes; stderr:\n"
      << r.err;
  EXPECT_NE(r.out.find("kernels, " + std::to_string(nodes) + " nodes"), std::string::npos);
  // The screenshot, for the eye and for docs/viz.md.
  const fs::path shot = fs::read_symlink("/proc/self/exe").parent_path() / "viz-screenshot.png";
  args = common;
  args.push_back("--window-size=1400,900");
  args.push_back("--screenshot=" + shot.string());
  args.push_back("file://" + page.string());
  r = test::run_program(chromium, args, dir, 120);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_GT(fs::file_size(shot), 10000u) << "a screenshot of the drawn page";
}
