// Helpers that GPT-2 and LLaMA (models/gpt2.h, models/llama.h) share: checking a Hugging Face
// checkpoint against the tensors a config implies before a model is built, loading its tensors by
// the model's names, and realizing logits together with the KV caches.
//
// Header-only and public API only.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/nn.h>
#include <lazygrad/state_dict.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad::models {

// One dimension of a tensor that a config implies: its size, and the config fields it comes from
// ("n_embd", "3 * n_embd"), which a message names when a checkpoint's tensor has another size.
struct ConfigDim {
  int64_t size;
  std::string source;
};
using ConfigShape = std::vector<ConfigDim>;

inline Shape sizes_of(const ConfigShape& shape) {
  Shape sizes;
  for (const ConfigDim& d : shape) sizes.push_back(d.size);
  return sizes;
}

// "GPT2: " or, with a file or folder to name, "GPT2: \"dir/model.safetensors\": ".
inline std::string checkpoint_prefix(std::string_view model_name, const std::string& where) {
  return std::string(model_name) + ": " + (where.empty() ? "" : "\"" + where + "\": ");
}

// A checkpoint's tensor as a check sees it.
struct CheckpointTensor {
  std::string label;  // "\"wte.weight\"", or "\"blk.0.attn_k.weight\" (the model's ...)" for a GGUF file
  DType dtype;
  Shape shape;
  bool ggml_order = false;  // a GGUF file's: messages name each dimension's ne index too (ne is reversed)
};

// Throws lazygrad::Error, starting with `prefix`, when `t` cannot be loaded into a float32
// parameter of shape `expected`: a dtype that load_state_dict does not convert to float32 (an
// integer or bool tensor, see nn::loads_into), another number of dimensions, or a dimension of
// another size, named by its index with both sizes and the config fields the expected one comes
// from (a config that does not match its checkpoint, or that asks for absurd sizes).
inline void check_checkpoint_tensor(const std::string& prefix, const CheckpointTensor& t,
                                    const ConfigShape& expected) {
  if (!nn::loads_into(t.dtype, kFloat32))
    throw Error(prefix + "tensor " + t.label + " has dtype " + std::string(dtype_name(t.dtype)) +
                ", not a floating-point dtype: it cannot be the model's float32 weight (only float64, "
                "float32, float16 and bfloat16 tensors are converted)");
  const std::string shapes = prefix + "tensor " + t.label + " has shape " + shape_str(t.shape) +
                             ", expected " + shape_str(sizes_of(expected)) + " for this config";
  if (t.shape.size() != expected.size())
    throw Error(shapes + ": " + std::to_string(t.shape.size()) + " dimensions, expected " +
                std::to_string(expected.size()));
  for (size_t d = 0; d < expected.size(); ++d) {
    if (t.shape[d] == expected[d].size) continue;
    const std::string ne = t.ggml_order ? " (ggml ne[" + std::to_string(expected.size() - 1 - d) + "])" : "";
    throw Error(shapes + ": dimension " + std::to_string(d) + ne + " is " + std::to_string(t.shape[d]) +
                ", expected " + std::to_string(expected[d].size) + " (" + expected[d].source + ")");
  }
}

// Checks a checkpoint against the tensors a config implies, before any model is built (building
// one allocates and initializes every layer, so a config that does not match its checkpoint must
// be refused first). `walk(visit)` calls visit(name, shape, note) for each tensor of the model's
// state_dict, in order (note: which layer of how many, or empty); each must be in `checkpoint`
// under the first of `prefixes` that has it, with a dtype and shape check_checkpoint_tensor
// accepts. Stops at the first problem, so a config that claims a billion layers fails at the first
// layer the checkpoint lacks. Messages start with `prefix` (checkpoint_prefix).
template <class Walk>
void check_hf_checkpoint(const StateDict& checkpoint, Walk&& walk, const std::string& prefix,
                         std::initializer_list<std::string_view> prefixes = {""}) {
  walk([&](const std::string& name, const ConfigShape& shape, const std::string& note) {
    auto it = checkpoint.end();
    for (std::string_view p : prefixes) {
      it = checkpoint.find(std::string(p) + name);
      if (it != checkpoint.end()) break;
    }
    if (it == checkpoint.end())
      throw Error(prefix + "the checkpoint has no tensor \"" + name + "\"" +
                  (note.empty() ? "" : " (" + note + ")"));
    check_checkpoint_tensor(prefix, {"\"" + it->first + "\"", it->second.dtype(), it->second.shape()}, shape);
  });
}

// Loads a Hugging Face checkpoint's tensors into `model` by the model's state_dict names, each
// looked up under the first of `prefixes` ("" for the name itself) that the checkpoint has. Every
// tensor of the model must be there with its shape and a dtype that converts (nn::loads_into),
// otherwise lazygrad::Error (starting with `model_name`) names the tensor and nothing is loaded.
// Other entries are ignored. float32 tensors are assigned with no copy; others are converted. The
// models check the checkpoint against their config first (check_hf_checkpoint), for messages
// that name the dimension and the config field.
inline void load_hf_checkpoint(nn::Module& model, const StateDict& checkpoint, std::string_view model_name,
                               std::initializer_list<std::string_view> prefixes = {""}) {
  StateDict found;
  for (const auto& [name, tensor] : model.ordered_state_dict()) {
    auto it = checkpoint.end();
    for (std::string_view prefix : prefixes) {
      it = checkpoint.find(std::string(prefix) + name);
      if (it != checkpoint.end()) break;
    }
    if (it == checkpoint.end())
      throw Error(std::string(model_name) + ": the checkpoint has no tensor \"" + name + "\"");
    found[name] = it->second;
  }
  try {
    model.load_state_dict(found, /*strict=*/true, /*assign=*/true);  // float32 tensors: no copy
  } catch (const Error& e) {
    throw Error(std::string(model_name) + ": " + e.what());
  }
}

// Realizes the logits and the writes into every attention layer's cache_k and cache_v in one
// schedule. attention_of(block) gives a block's attention module.
template <class Blocks, class AttentionOf>
void realize_with_kv_caches(const Tensor& logits, const Blocks& blocks, AttentionOf attention_of) {
  std::vector<Tensor> pending{logits};
  for (const auto& block : blocks) {
    pending.push_back(attention_of(*block).cache_k);
    pending.push_back(attention_of(*block).cache_v);
  }
  realize(pending);
}

}  // namespace lazygrad::models
