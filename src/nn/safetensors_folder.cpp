// A Hugging Face model folder's weights: one model.safetensors, or shards listed by
// model.safetensors.index.json. The index is checked against the shards before anything is returned,
// so a folder whose files disagree is an error rather than a model with some tensors missing or
// taken from the wrong file.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "lazygrad/error.h"
#include "lazygrad/json.h"
#include "lazygrad/safetensors.h"
#include "nn/mapped_file.h"

namespace lazygrad {

namespace {

namespace fs = std::filesystem;

constexpr const char* kCaller = "load_safetensors_folder";
constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw Error(std::string(kCaller) + ": \"" + file.string() + "\": " + what);
}

[[noreturn]] void fail_at(const fs::path& file, const json::Value& at, const std::string& what) {
  fail(file, what + " (at byte " + std::to_string(at.offset) + ")");
}

// A shard must be a file of this folder: a name with a directory part or "." / ".." could reach any
// file the process can read.
bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\\') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

// tensor name -> shard file name, from the index.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  const auto file = MappedFile::open(index_path.string(), kCaller);
  const std::string_view text(reinterpret_cast<const char*>(file->bytes().data()), file->bytes().size());
  json::Value doc;
  try {
    doc = json::parse(text);
  } catch (const json::SyntaxError& e) {
    fail(index_path, "not valid JSON: " + e.reason() + " (at byte " + std::to_string(e.offset()) + ")");
  }
  if (doc.kind != json::Kind::Object)
    fail_at(index_path, doc, "expected a JSON object, found " + std::string(json::kind_name(doc.kind)));
  const json::Value* map = doc.find("weight_map");
  if (!map) fail_at(index_path, doc, "\"weight_map\" is missing");
  if (map->kind != json::Kind::Object)
    fail_at(index_path, *map,
            "\"weight_map\" must be an object, found " + std::string(json::kind_name(map->kind)));
  std::map<std::string, std::string> weight_map;
  for (const json::Member& m : map->members) {
    if (m.value.kind != json::Kind::String)
      fail_at(index_path, m.value,
              "the shard of tensor " + json::quote(m.key) + " must be a file name, found " +
                  std::string(json::kind_name(m.value.kind)));
    if (!is_plain_file_name(m.value.text))
      fail_at(index_path, m.value,
              "the shard of tensor " + json::quote(m.key) + ", " + json::quote(m.value.text) +
                  ", is not a plain file name inside the folder");
    weight_map.emplace(m.key, m.value.text);
  }
  if (weight_map.empty()) fail_at(index_path, *map, "\"weight_map\" names no tensors");
  return weight_map;
}

}  // namespace

StateDict load_safetensors_folder(const std::string& dir) {
  const fs::path folder(dir);
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) fail(folder, "not a folder");
  if (fs::exists(folder / kSingleFile, ec)) return load_safetensors((folder / kSingleFile).string());
  const fs::path index_path = folder / kIndexFile;
  if (!fs::exists(index_path, ec))
    fail(folder, std::string("has neither ") + kSingleFile + " nor " + kIndexFile);

  const std::map<std::string, std::string> weight_map = read_weight_map(index_path);
  std::map<std::string, std::string> shard_of_first_tensor;  // shard -> a tensor mapped to it, for messages
  for (const auto& [tensor, shard] : weight_map) shard_of_first_tensor.emplace(shard, tensor);
  for (const auto& [shard, tensor] : shard_of_first_tensor)
    if (!fs::is_regular_file(folder / shard, ec))
      fail(index_path, "shard " + json::quote(shard) + " (of tensor " + json::quote(tensor) +
                           ") is not a file in the folder");

  StateDict tensors;
  std::map<std::string, std::string> found_in;  // tensor -> the shard it was read from
  for (const auto& [shard, first] : shard_of_first_tensor) {
    for (auto& [name, tensor] : load_safetensors((folder / shard).string())) {
      const auto mapped = weight_map.find(name);
      if (mapped == weight_map.end())
        fail(index_path, "shard " + json::quote(shard) + " holds tensor " + json::quote(name) +
                             ", which the weight_map does not list");
      if (const auto seen = found_in.find(name); seen != found_in.end())
        fail(index_path, "tensor " + json::quote(name) + " is in two shards, " + json::quote(seen->second) +
                             " and " + json::quote(shard));
      found_in.emplace(name, shard);
      tensors.emplace(name, std::move(tensor));
    }
  }
  for (const auto& [name, shard] : weight_map) {
    const auto found = found_in.find(name);
    if (found == found_in.end())
      fail(index_path, "tensor " + json::quote(name) + " is mapped to shard " + json::quote(shard) +
                           ", which does not hold it");
    if (found->second != shard)
      fail(index_path, "tensor " + json::quote(name) + " is mapped to shard " + json::quote(shard) +
                           " but is in " + json::quote(found->second));
  }
  return tensors;
}

}  // namespace lazygrad
