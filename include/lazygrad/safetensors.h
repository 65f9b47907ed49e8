// Checkpoints in the safetensors format, the files of safetensors.torch.save_file / load_file and
// of the Hugging Face hub: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data. Unlike a pickle, loading one runs
// no code, and every byte range is checked before it is read. docs/safetensors.md has the details.
#pragma once

#include <map>
#include <string>

#include "lazygrad/state_dict.h"

namespace lazygrad {

// The header's "__metadata__": free-form text, e.g. {"format": "pt"} or a training step.
using SafetensorsMetadata = std::map<std::string, std::string>;

// safetensors.torch.load_file(filename): every tensor of the file, contiguous, on the CPU, with the
// file's dtype (F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL). The whole file is checked
// first (header length, JSON syntax, dtypes, shapes against byte ranges, ranges that overlap, leave
// gaps or run past the end, BOOL bytes other than 0 and 1): a bad file throws lazygrad::Error
// naming the file, the tensor and the byte offset, and nothing is loaded.
StateDict load_safetensors(const std::string& path);

// The header's metadata only (the header is checked as load_safetensors checks it; the tensors'
// data is not read). Empty when the file has none.
SafetensorsMetadata load_safetensors_metadata(const std::string& path);

// A Hugging Face model folder's weights, as from_pretrained finds them: dir/model.safetensors when
// there is one; otherwise a sharded checkpoint, dir/model.safetensors.index.json
// ({"metadata": {...}, "weight_map": {tensor name: shard file name}}) and every shard it names, each
// read as load_safetensors reads it (mapped, no copy). Checked, each a lazygrad::Error naming the
// file and the tensor or shard: the index's syntax and types (with byte offsets), shard names that
// are not plain file names inside the folder ("/", "\\", "." or ".."), a shard file that does not
// exist, a mapped tensor its shard lacks, a tensor in two shards, a tensor a shard holds that the
// weight_map does not list, and neither file present.
StateDict load_safetensors_folder(const std::string& dir);

// safetensors.torch.save_file(tensors, filename, metadata): writes every tensor (computing the lazy
// ones, all in one schedule), laid out as the reference implementation lays them out. Atomic: the
// file is written next to `path` and renamed over it, so a failed or interrupted save leaves any
// previous file untouched. Names must be valid UTF-8 and not "__metadata__"; empty metadata writes
// no "__metadata__" entry. Tensors that share memory are written as separate copies.
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata = {});

}  // namespace lazygrad
