// `lazygrad generate --model PATH --prompt TEXT`: text from a Hugging Face folder (GPT-2: config.json,
// model.safetensors, vocab.json and merges.txt or tokenizer.json; LLaMA-family: config.json, the
// safetensors, sharded or not, and tokenizer.json) or from a llama.cpp GGUF file, streamed to stdout
// as it is generated, with the prompt's and the generation's tokens/s on stderr at the end.
// models/generate.h does the work; docs/gpt2.md and docs/llama.md describe the options and what is
// measured.
#include "../models/generate.h"

#include <lazygrad/json.h>
#include <lazygrad/lazygrad.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "../models/gpt2.h"
#include "../models/llama.h"
#include "../models/llama_gguf.h"
#include "command.h"
#include "option_values.h"
#include "text_file.h"
#include "utf8_stream.h"

namespace lazygrad::cli {

namespace {

namespace fs = std::filesystem;

struct GenerateConfig {
  std::string model;
  std::string prompt;
  int64_t max_tokens = 64;
  SamplingOptions sampling;
  uint64_t seed = 0;
  std::string device;  // where the model's weights and kernels are (default: DEVICE, else CPU)
};

GenerateConfig parse_config(const Args& args) {
  Options opts = parse_options(args, {"--model", "--prompt", "--max-tokens", "--temperature", "--top-k",
                                      "--top-p", "--repetition-penalty", "--seed", "--device"});
  no_positionals(opts);
  GenerateConfig cfg;
  auto model = opts.get("--model");
  if (!model || model->empty())
    throw UsageError{"--model PATH is needed (a Hugging Face model folder or a .gguf file)"};
  cfg.model = *model;
  if (auto v = opts.get("--prompt")) cfg.prompt = *v;
  if (auto v = opts.get("--max-tokens")) cfg.max_tokens = parse_int("--max-tokens", *v, 0);
  if (auto v = opts.get("--temperature")) cfg.sampling.temperature = parse_non_negative("--temperature", *v);
  if (auto v = opts.get("--top-k")) cfg.sampling.top_k = parse_int("--top-k", *v, 0);
  if (auto v = opts.get("--top-p")) cfg.sampling.top_p = parse_non_negative("--top-p", *v);
  if (auto v = opts.get("--repetition-penalty"))
    cfg.sampling.repetition_penalty = parse_non_negative("--repetition-penalty", *v);
  if (auto v = opts.get("--seed")) cfg.seed = parse_seed(*v);
  if (auto v = opts.get("--device")) cfg.device = *v;
  try {
    validate(cfg.sampling);
  } catch (const Error& e) {
    throw UsageError{e.what()};
  }
  return cfg;
}

json::Value read_json(const fs::path& path) {
  const std::string where = path.string();
  json::Value doc;
  try {
    doc = json::parse(read_text(path));
  } catch (const json::SyntaxError& e) {
    throw Error(where + ": invalid JSON at byte " + std::to_string(e.offset()) + ": " + e.reason());
  }
  if (doc.kind != json::Kind::Object) throw Error(where + ": expected an object");
  return doc;
}

// config.json's model_type: "gpt2", "llama" or "mistral" (LLaMA's architecture); absent: "gpt2",
// as the first GPT-2 folders on the hub have no model_type.
std::string model_type(const json::Value& doc, const std::string& where) {
  const json::Value* type = doc.find("model_type");
  if (!type) return "gpt2";
  if (type->kind == json::Kind::String &&
      (type->text == "gpt2" || type->text == "llama" || type->text == "mistral"))
    return type->text;
  throw Error(where + ": model_type " +
              (type->kind == json::Kind::String ? json::quote(type->text) : "(not a string)") +
              " is not supported: only \"gpt2\", \"llama\" and \"mistral\" models");
}

fs::path need_file(const fs::path& dir, const char* name) {
  fs::path path = dir / name;
  if (!fs::is_regular_file(path))
    throw Error(path.string() + " is missing (the folder must hold " + name + ")");
  return path;
}

double per_second(int64_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; }

// A model ready to generate with, and how to turn text into its tokens and back.
struct LoadedModel {
  std::variant<std::shared_ptr<models::GPT2>, std::shared_ptr<models::Llama>> model;
  Tokenizer tokenizer;
  int64_t vocab_size = 0;
  bool add_bos = false;  // LLaMA's prompts start with BOS; GPT-2's with nothing
  std::vector<int32_t> stop_ids =
      {};  // besides the tokenizer's EOS: config.json's eos_token_id list, GGUF's EOT
};

LoadedModel load_gpt2_folder(const fs::path& dir, const fs::path& config_file) {
  const models::GPT2Config config = models::GPT2Config::from_file(config_file.string());
  const fs::path weights = need_file(dir, "model.safetensors");
  // OpenAI's files (vocab.json and merges.txt), or the same tokenizer as tokenizer.json.
  const bool split_files = fs::exists(dir / "vocab.json") || !fs::exists(dir / "tokenizer.json");
  Tokenizer tokenizer = split_files
                            ? Tokenizer(GPT2Tokenizer::from_files(need_file(dir, "vocab.json").string(),
                                                                  need_file(dir, "merges.txt").string()))
                            : Tokenizer::from_hf_json((dir / "tokenizer.json").string());
  // The checkpoint is checked against the config before the model is built.
  auto model = models::GPT2::from_hf_checkpoint(config, load_safetensors(weights.string()), weights.string());
  return {model, tokenizer, config.vocab_size, false};
}

LoadedModel load_llama_folder(const fs::path& dir) {
  const models::LlamaConfig config = models::LlamaConfig::from_file(need_file(dir, "config.json").string());
  Tokenizer tokenizer = Tokenizer::from_hf_json(need_file(dir, "tokenizer.json").string());
  auto model = models::Llama::from_hf_checkpoint(config, load_safetensors_folder(dir.string()), dir.string());
  std::vector<int32_t> stop_ids(config.eos_token_ids.begin(), config.eos_token_ids.end());
  return {model, tokenizer, config.vocab_size, true, stop_ids};
}

LoadedModel load_gguf_file(const fs::path& path) {
  const GGUFFile file = load_gguf(path.string());
  auto model = models::load_llama_gguf(file);
  const GGUFVocab vocab = models::gguf_vocab(file);
  const bool add_bos = vocab.add_bos;
  std::vector<int32_t> stop_ids;
  if (const GGUFValue* eot = file.find("tokenizer.ggml.eot_token_id"))
    stop_ids.push_back(static_cast<int32_t>(eot->as_int()));
  return {model, Tokenizer::from_gguf_vocab(vocab), model->config.vocab_size, add_bos, stop_ids};
}

// The model at PATH: a .gguf file, or a Hugging Face folder whose config.json names the architecture.
LoadedModel load_model(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) throw Error(path + ": no such file or folder");
  if (fs::is_regular_file(p)) {
    if (p.extension() != ".gguf")
      throw Error(
          path +
          ": not a folder or a .gguf file (give a Hugging Face model folder or a llama.cpp GGUF file)");
    return load_gguf_file(p);
  }
  if (!fs::is_directory(p)) throw Error(path + ": not a folder or a .gguf file");
  const fs::path config = need_file(p, "config.json");
  const json::Value doc = read_json(config);
  const std::string type = model_type(doc, config.string());
  return type == "gpt2" ? load_gpt2_folder(p, config) : load_llama_folder(p);
}

}  // namespace

int cmd_generate(const Args& args) {
  const GenerateConfig cfg = parse_config(args);
  if (!cfg.device.empty()) set_default_device(cfg.device);  // the weights load there, the kernels run there
  const LoadedModel loaded = load_model(cfg.model);
  const Tokenizer& tokenizer = loaded.tokenizer;

  const int32_t eos = tokenizer.eos_token_id() < loaded.vocab_size ? tokenizer.eos_token_id() : -1;
  std::vector<int32_t> prompt = tokenizer.encode(cfg.prompt, {.add_special = loaded.add_bos});
  if (prompt.empty()) {
    if (eos < 0) throw Error("the prompt is empty and the vocabulary has no end-of-text token to start from");
    prompt.push_back(eos);  // as Hugging Face does: GPT-2's BOS is its EOS
  }
  for (int32_t id : prompt)
    if (id >= loaded.vocab_size)
      throw Error("the prompt has token " + std::to_string(id) + " (" +
                  json::quote(tokenizer.id_to_token(id)) + "), outside the model's vocabulary of " +
                  std::to_string(loaded.vocab_size));

  Sampler sampler(cfg.sampling, cfg.seed);
  Utf8Stream text;
  std::cout << cfg.prompt << std::flush;
  models::GenerateStats stats;
  std::visit(
      [&](const auto& model) {
        models::generate(
            *model, prompt, sampler,
            {.max_tokens = cfg.max_tokens, .eos_token_id = eos, .stop_token_ids = loaded.stop_ids},
            [&](int32_t id) {
              const bool stop = id == eos || std::count(loaded.stop_ids.begin(), loaded.stop_ids.end(), id);
              if (!stop) std::cout << text.push(tokenizer.token_bytes(id)) << std::flush;
            },
            &stats);
      },
      loaded.model);
  std::cout << text.finish() << "\n" << std::flush;

  char line[256];
  std::snprintf(line, sizeof line, "prompt: %lld tokens in %.3f s, %.2f tokens/s\n",
                static_cast<long long>(stats.prompt_tokens), stats.prompt_seconds,
                per_second(stats.prompt_tokens, stats.prompt_seconds));
  std::cerr << line;
  std::snprintf(line, sizeof line, "generation: %lld tokens in %.3f s, %.2f tokens/s (stopped: %s)\n",
                static_cast<long long>(stats.generated_tokens), stats.generate_seconds,
                per_second(stats.generated_tokens, stats.generate_seconds), stats.stop_reason.c_str());
  std::cerr << line;
  return 0;
}

}  // namespace lazygrad::cli
