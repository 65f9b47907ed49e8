// docs/learn/ names the code it explains: every relative link must reach a file of the repository,
// and a link whose text is one code name (`create_schedule`, `Tensor::backward()`, `nn::Linear`)
// must point at a file where that name occurs as a whole word. So a renamed function or a moved
// file breaks this test rather than the reader's trust. Each chapter also ends with exercises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "test_files.h"

namespace fs = std::filesystem;

namespace {

fs::path learn_dir() { return lazygrad::test::fixture_dir() / ".." / ".." / "docs" / "learn"; }

std::vector<fs::path> chapters() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(learn_dir()))
    if (entry.path().extension() == ".md") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The identifier a code name ends with: `Tensor::backward()` -> backward; "" when the text is not
// one code name (a path, a sentence).
std::string code_name(const std::string& text) {
  static const std::regex one_name(R"(^`((?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*))(\(\))?`$)");
  std::smatch m;
  return std::regex_match(text, m, one_name) ? m[2].str() : "";
}

bool has_word(const std::string& text, const std::string& word) {
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = text.find(word); i != std::string::npos; i = text.find(word, i + 1)) {
    const bool starts = i == 0 || !is_ident(text[i - 1]);
    const bool ends = i + word.size() == text.size() || !is_ident(text[i + word.size()]);
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

TEST(DocsLearn, TheChaptersAreThere) {
  ASSERT_TRUE(fs::is_directory(learn_dir())) << learn_dir();
  std::set<std::string> names;
  for (const auto& c : chapters()) names.insert(c.filename().string());
  for (const char* expected :
       {"README.md", "01-tensors.md", "02-views.md", "03-laziness.md", "04-autograd.md", "05-scheduler.md",
        "06-codegen.md", "07-runtime.md", "08-optimizers.md", "09-attention.md", "10-making-it-fast.md"})
    EXPECT_TRUE(names.count(expected)) << expected << " is missing from docs/learn/";
}

TEST(DocsLearn, EveryLinkReachesTheCodeItNames) {
  static const std::regex link(R"(\[([^\]\n]+)\]\(([^)\s]+)\))");
  int checked = 0, named = 0;
  for (const fs::path& chapter : chapters()) {
    const std::string text = lazygrad::test::read_file(chapter);
    int code_links = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string label = (*it)[1].str(), target = (*it)[2].str();
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target[0] == '#') continue;
      const std::string file = target.substr(0, target.find('#'));
      const fs::path path = chapter.parent_path() / file;
      checked++;
      EXPECT_TRUE(fs::exists(path)) << chapter.filename() << ": [" << label << "](" << target
                                    << ") points at nothing";
      if (file.rfind("../../", 0) == 0) code_links++;
      const std::string name = code_name(label);
      if (name.empty() || !fs::is_regular_file(path)) continue;
      named++;
      EXPECT_TRUE(has_word(lazygrad::test::read_file(path), name))
          << chapter.filename() << ": " << label << " does not occur in " << file;
    }
    if (chapter.filename() != "README.md" && chapter.filename() != "exercises.md") {
      EXPECT_GE(code_links, 3) << chapter.filename() << " links fewer than 3 files of the code it explains";
    }
  }
  EXPECT_GT(checked, 50);  // the counts only guard against a test that matches no link at all
  EXPECT_GT(named, 30);
}

TEST(DocsLearn, EachChapterEndsWithExercises) {
  static const std::regex numbered(R"(^\d\d-.*\.md$)");
  for (const fs::path& chapter : chapters()) {
    if (!std::regex_match(chapter.filename().string(), numbered)) continue;
    const std::string text = lazygrad::test::read_file(chapter);
    const size_t at = text.rfind("\n## Exercises");
    ASSERT_NE(at, std::string::npos) << chapter.filename() << " has no ## Exercises section";
    EXPECT_EQ(text.find("\n## ", at + 1), std::string::npos) << chapter.filename() << ": exercises come last";
  }
}
