// The text `lazygrad train charlm` learns from: the bytes of one file, or of every text file in a
// folder, split into training text and held-out text, and its vocabulary (the distinct bytes). The
// model sees bytes, not Unicode characters, so any file is text to it; a UTF-8 character outside
// ASCII is two to four tokens.
#pragma once

#include <lazygrad/error.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace lazygrad::cli {

struct CharCorpus {
  std::vector<std::string> files;    // the files read, in the order their text was joined
  std::vector<std::string> skipped;  // files of a folder left out, each with the reason
  // Token ids (indices into vocab). The held-out text is the last `heldout_fraction` of every file,
  // so that a folder's held-out text samples all of its files rather than the last ones.
  std::vector<int32_t> train, heldout;
  std::vector<uint8_t> vocab;  // the distinct bytes of all files, ascending; a token id is an index
};

namespace corpus_detail {

namespace fs = std::filesystem;

inline std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("train charlm: cannot open '" + path.string() + "'");
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw Error("train charlm: cannot read '" + path.string() + "'");
  return bytes;
}

// A folder's files: the regular files directly in it (links followed, each file once, however many
// names it has: fortune's *.u8 links), by name; binary ones (holding a NUL byte: fortune's *.dat
// indexes) and empty ones are skipped with the reason.
inline std::vector<std::string> folder_texts(const fs::path& dir, CharCorpus& corpus) {
  std::error_code ec;
  std::vector<fs::path> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path());
  if (ec) throw Error("train charlm: cannot list the folder '" + dir.string() + "': " + ec.message());
  std::sort(names.begin(), names.end());
  std::set<fs::path> seen;
  std::vector<std::string> texts;
  for (const fs::path& path : names) {
    if (!fs::is_regular_file(path, ec)) continue;  // folders, broken links
    fs::path canonical = fs::canonical(path, ec);
    if (ec) throw Error("train charlm: cannot resolve '" + path.string() + "': " + ec.message());
    if (!seen.insert(canonical).second) {
      corpus.skipped.push_back(path.filename().string() + " (the same file as one read already)");
      continue;
    }
    std::string bytes = read_bytes(path);
    if (bytes.empty()) {
      corpus.skipped.push_back(path.filename().string() + " (empty)");
    } else if (bytes.find('\0') != std::string::npos) {
      corpus.skipped.push_back(path.filename().string() + " (binary: it holds a NUL byte)");
    } else {
      corpus.files.push_back(path.string());
      texts.push_back(std::move(bytes));
    }
  }
  if (texts.empty()) throw Error("train charlm: the folder '" + dir.string() + "' has no text files");
  return texts;
}

}  // namespace corpus_detail

// Reads `path` (a file, or a folder of text files), holds out the last heldout_fraction of each
// file, and maps bytes to token ids. Throws lazygrad::Error naming the path when it cannot be read
// or has no text.
inline CharCorpus load_char_corpus(const std::string& path, double heldout_fraction) {
  namespace fs = std::filesystem;
  CharCorpus corpus;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw Error("train charlm: no file or folder '" + path + "'");
  std::vector<std::string> texts;
  if (fs::is_directory(status)) {
    texts = corpus_detail::folder_texts(path, corpus);
  } else {
    texts.push_back(corpus_detail::read_bytes(path));
    corpus.files.push_back(path);
    if (texts[0].empty()) throw Error("train charlm: the file '" + path + "' is empty");
  }

  std::array<bool, 256> present{};
  for (const std::string& text : texts)
    for (char c : text) present[static_cast<uint8_t>(c)] = true;
  std::array<int32_t, 256> id_of{};
  for (int b = 0; b < 256; b++)
    if (present[b]) {
      id_of[b] = static_cast<int32_t>(corpus.vocab.size());
      corpus.vocab.push_back(static_cast<uint8_t>(b));
    }

  for (const std::string& text : texts) {
    const auto held = static_cast<size_t>(static_cast<double>(text.size()) * heldout_fraction);
    const size_t split = text.size() - std::min(held, text.size());
    for (size_t i = 0; i < text.size(); i++)
      (i < split ? corpus.train : corpus.heldout).push_back(id_of[static_cast<uint8_t>(text[i])]);
  }
  return corpus;
}

}  // namespace lazygrad::cli
