// Helpers that GPT-2 and LLaMA (models/gpt2.h, models/llama.h) share: loading a Hugging Face
// checkpoint's tensors by the model's names, and realizing logits together with the KV caches.
//
// Header-only and public API only.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/nn.h>
#include <lazygrad/state_dict.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad::models {

// Loads a Hugging Face checkpoint's tensors into `model` by the model's state_dict names, each
// looked up under the first of `prefixes` ("" for the name itself) that the checkpoint has. Every
// tensor of the model must be there with its shape, otherwise lazygrad::Error (starting with
// `model_name`) names the tensor and nothing is loaded. Other entries are ignored. float32 tensors
// are assigned with no copy; others are converted.
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
    if (it->second.shape() != tensor.shape())
      throw Error(std::string(model_name) + ": tensor \"" + it->first + "\" has shape " +
                  shape_str(it->second.shape()) + ", expected " + shape_str(tensor.shape()) +
                  " for this config");
    found[name] = it->second;
  }
  model.load_state_dict(found, /*strict=*/true, /*assign=*/true);  // float32 tensors: no copy
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
