// libFuzzer target for load_safetensors_folder on a folder of sharded weights: any index and shard
// must load or throw lazygrad::Error, never crash, read out of bounds, hang or leak. A folder that
// loads holds exactly the tensors its weight_map names.
//
// The input is split at its first 0 byte: model.safetensors.index.json before it, the shard
// model-00001-of-00001.safetensors after (no 0 byte: no shard file). Both are written to a temporary
// folder. scripts/make_fuzz_seeds.py writes a valid input; tests/fuzz/README.md has the commands.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/json.h"
#include "lazygrad/safetensors.h"

namespace {

constexpr const char* kShard = "model-00001-of-00001.safetensors";

// The tensor names the index's weight_map lists (the loader has checked that it is an object).
std::set<std::string> mapped_tensors(std::span<const uint8_t> index) {
  const lazygrad::json::Value root =
      lazygrad::json::parse(std::string_view(reinterpret_cast<const char*>(index.data()), index.size()));
  std::set<std::string> names;
  for (const lazygrad::json::Member& m : root.find("weight_map")->members) names.insert(m.key);
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lazygrad::fuzz::Split input = lazygrad::fuzz::split_at_zero(data, size);
  lazygrad::fuzz::write_file("model.safetensors.index.json", input.first);
  if (input.has_rest) {
    lazygrad::fuzz::write_file(kShard, input.rest);
  } else {
    std::error_code ec;
    std::filesystem::remove(lazygrad::fuzz::temp_folder() / kShard, ec);
  }
  try {
    const lazygrad::StateDict tensors =
        lazygrad::load_safetensors_folder(lazygrad::fuzz::temp_folder().string());
    const std::set<std::string> mapped = mapped_tensors(input.first);
    if (tensors.size() != mapped.size()) std::abort();
    for (const auto& entry : tensors) {
      const lazygrad::Tensor& t = entry.second;
      if (!mapped.contains(entry.first)) std::abort();
      if (t.nbytes() != t.numel() * t.element_size()) std::abort();
    }
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
