// Generation (models/generate.h) and `lazygrad generate` (apps/generate.cpp).
//
// Parity: tests/fixtures/gpt2_tiny_generate.txt holds the greedy continuations (plain, and with HF's
// repetition penalty) that the torch reference of scripts/make_gpt2_fixture.py computes for the tiny
// GPT-2 of gpt2_tiny.safetensors; generation with the KV cache must give exactly those ids.
//
// The CLI runs on a tiny Hugging Face-style folder written to a temporary folder by
// tests/tiny_gpt2_folder.h: config.json, the tiny checkpoint, and a vocab.json/merges.txt made for its
// vocabulary of 101. GPT2Tokenizer needs a token for each of the 256 bytes, so the tiny vocab.json
// has all 256 byte tokens and no merges; their ids are chosen so that the model's 101 are space,
// newline, the 94 printable ASCII characters and the 5 bytes of "é" (C3 A9) and "€" (E2 82 AC); the
// other 151 bytes get ids 101..255, which the model never produces (a prompt with one of them is an
// error).
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "../apps/report_errors.h"
#include "../apps/utf8_stream.h"
#include "../models/generate.h"
#include "../models/llama_gguf.h"
#include "../src/nn/json_reader.h"
#include "expect_error.h"
#include "test_files.h"
#include "tiny_gpt2_folder.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

using test::fixture_dir;

// The tiny model's config (as gpt2_tiny_logits.txt's first line says).
models::GPT2Config tiny_config() { return {2, 4, 16, 101, 16, 1e-5}; }

struct GenerateReference {
  std::vector<int32_t> prompt, greedy, penalized;
  double penalty = 0;
};

GenerateReference read_generate_reference() {
  GenerateReference ref;
  std::ifstream in(fixture_dir() / "gpt2_tiny_generate.txt");
  EXPECT_TRUE(in) << "cannot open " << fixture_dir() / "gpt2_tiny_generate.txt";
  auto ids = [&](const char* name, std::vector<int32_t>& out) {
    std::string word;
    size_t n = 0;
    in >> word;
    EXPECT_EQ(word, name);
    if (word == "penalized") in >> ref.penalty;
    in >> n;
    out.resize(n);
    for (auto& v : out) in >> v;
  };
  ids("prompt", ref.prompt);
  ids("greedy", ref.greedy);
  ids("penalized", ref.penalized);
  EXPECT_TRUE(in) << "gpt2_tiny_generate.txt is truncated";
  return ref;
}

std::shared_ptr<models::GPT2> tiny_model() {
  auto model = std::make_shared<models::GPT2>(tiny_config());
  model->load_hf_state_dict(load_safetensors((fixture_dir() / "gpt2_tiny.safetensors").string()));
  return model;
}

TEST(Generate, GreedyMatchesReference) {
  const GenerateReference ref = read_generate_reference();
  auto model = tiny_model();
  Sampler greedy({.temperature = 0});
  std::vector<int32_t> streamed;
  models::GenerateStats stats;
  std::vector<int32_t> got = models::generate(
      *model, ref.prompt, greedy, {.max_tokens = 100}, [&](int32_t id) { streamed.push_back(id); }, &stats);
  EXPECT_EQ(got, ref.greedy);
  EXPECT_EQ(streamed, got);
  // The prompt (5) and the 11 new tokens fill n_positions 16.
  EXPECT_EQ(stats.prompt_tokens, static_cast<int64_t>(ref.prompt.size()));
  EXPECT_EQ(stats.generated_tokens, 11);
  EXPECT_EQ(stats.stop_reason, "n_positions");
  // Decode windows of 4 positions: the steps cross from window 8 to 12 to 16, each window with its
  // own Jit capture, reading a cache the previous window's steps wrote; the same tokens.
  for (int64_t window : {4, 3}) {
    EXPECT_EQ(models::generate(*model, ref.prompt, greedy, {.max_tokens = 100, .decode_window = window}),
              ref.greedy)
        << window;
  }
  expect_error([&] { models::generate(*model, ref.prompt, greedy, {.decode_window = 0}); },
               {"decode_window"});
}

TEST(Generate, RepetitionPenaltyMatchesReference) {
  const GenerateReference ref = read_generate_reference();
  auto model = tiny_model();
  Sampler greedy({.temperature = 0, .repetition_penalty = ref.penalty});
  EXPECT_EQ(models::generate(*model, ref.prompt, greedy, {.max_tokens = 100}), ref.penalized);
}

TEST(Generate, StopsAtMaxTokensAndEos) {
  const GenerateReference ref = read_generate_reference();
  auto model = tiny_model();
  Sampler greedy({.temperature = 0});
  models::GenerateStats stats;
  std::vector<int32_t> got = models::generate(*model, ref.prompt, greedy, {.max_tokens = 3}, {}, &stats);
  EXPECT_EQ(got, std::vector<int32_t>(ref.greedy.begin(), ref.greedy.begin() + 3));
  EXPECT_EQ(stats.stop_reason, "max_tokens");
  // With the 8th greedy token (100, the first that is not 89) as end-of-text: stops right after it.
  got = models::generate(*model, ref.prompt, greedy, {.max_tokens = 100, .eos_token_id = ref.greedy[7]}, {},
                         &stats);
  EXPECT_EQ(got, std::vector<int32_t>(ref.greedy.begin(), ref.greedy.begin() + 8));
  EXPECT_EQ(stats.stop_reason, "eos");
  // Or as one of several stop tokens (with no eos_token_id).
  got = models::generate(*model, ref.prompt, greedy,
                         {.max_tokens = 100, .stop_token_ids = {-5, ref.greedy[7]}}, {}, &stats);
  EXPECT_EQ(got, std::vector<int32_t>(ref.greedy.begin(), ref.greedy.begin() + 8));
  EXPECT_EQ(stats.stop_reason, "eos");
  EXPECT_TRUE(models::generate(*model, ref.prompt, greedy, {.max_tokens = 0}).empty());
}

TEST(Generate, SeededSamplingIsDeterministic) {
  const GenerateReference ref = read_generate_reference();
  auto model = tiny_model();
  auto run = [&](uint64_t seed) {
    Sampler s({.temperature = 1.0, .top_k = 20, .top_p = 0.9}, seed);
    return models::generate(*model, ref.prompt, s, {.max_tokens = 8});
  };
  EXPECT_EQ(run(11), run(11));
}

TEST(Generate, BadPromptsAreErrors) {
  auto model = tiny_model();
  Sampler s;
  expect_error([&] { models::generate(*model, std::vector<int32_t>{}, s, {}); }, "generate", "no tokens");
  expect_error([&] { models::generate(*model, std::vector<int32_t>{1, 101}, s, {}); }, "generate", "101");
  expect_error([&] { models::generate(*model, std::vector<int32_t>(17, 1), s, {}); }, "generate",
               "n_positions");
}

TEST(Utf8Stream, HoldsIncompleteCharacters) {
  cli::Utf8Stream s;
  EXPECT_EQ(s.push("ab"), "ab");
  EXPECT_EQ(s.push("\xE2"), "");  // the first byte of "€"
  EXPECT_EQ(s.push("\x82"), "");  // the second
  EXPECT_EQ(s.push("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(s.push("x\xC3"), "x");  // "é" split
  EXPECT_EQ(s.push("\xA9"), "\xC3\xA9");
  EXPECT_EQ(s.push("\xF0\x9F\x98"), "");  // a 4-byte emoji, 3 bytes so far
  EXPECT_EQ(s.push("\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(s.push("\xA9z"), "\xA9z");  // a stray continuation byte passes through
  EXPECT_EQ(s.push("\xC3"), "");
  EXPECT_EQ(s.finish(), "\xC3");  // what is left at the end is not lost
  EXPECT_EQ(s.finish(), "");
}

// ---- the CLI ----------------------------------------------------------------------------------------

using test::read_file;
using test::RunResult;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
}

class GenerateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lazygrad_generate_cli_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    model_ = dir_ / "tiny-gpt2";
    fs::create_directories(model_);
    cli_ = fs::read_symlink("/proc/self/exe").parent_path() / "lazygrad";
    ASSERT_TRUE(fs::exists(cli_)) << cli_ << " is missing: build the lazygrad_cli target";
    test::write_tiny_gpt2_folder(model_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult run(const std::vector<std::string>& args) const { return test::run_program(cli_, args, dir_); }

  fs::path dir_, model_, cli_;
};

TEST_F(GenerateCli, GreedyPrintsTheReferenceContinuation) {
  const GenerateReference ref = read_generate_reference();
  const std::vector<unsigned char> bytes = test::tiny_id_bytes();
  std::string prompt, continuation;
  for (int32_t id : ref.prompt) prompt += static_cast<char>(bytes[static_cast<size_t>(id)]);
  for (int32_t id : ref.greedy) continuation += static_cast<char>(bytes[static_cast<size_t>(id)]);
  RunResult r = run({"generate", "--model", model_.string(), "--prompt", prompt, "--max-tokens", "50",
                     "--temperature", "0"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, prompt + continuation + "\n");
  EXPECT_NE(r.err.find("prompt: 5 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generation: 11 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("n_positions"), std::string::npos) << r.err;
}

TEST_F(GenerateCli, SeededSamplingIsDeterministic) {
  const std::vector<std::string> args = {"generate",
                                         "--model",
                                         model_.string(),
                                         "--prompt",
                                         "Hi!",
                                         "--max-tokens",
                                         "8",
                                         "--temperature",
                                         "0.9",
                                         "--top-k",
                                         "40",
                                         "--top-p",
                                         "0.95",
                                         "--repetition-penalty",
                                         "1.2",
                                         "--seed",
                                         "3"};
  RunResult a = run(args), b = run(args);
  ASSERT_EQ(a.exit_status, 0) << a.err;
  ASSERT_EQ(b.exit_status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.rfind("Hi!", 0), 0u) << a.out;
  EXPECT_NE(a.err.find("generation: 8 tokens"), std::string::npos) << a.err;
}

TEST_F(GenerateCli, MissingFolderOrFileIsACleanError) {
  RunResult r = run({"generate", "--model", (dir_ / "nowhere").string(), "--prompt", "a"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no such file or folder"), std::string::npos) << r.err;
  fs::remove(model_ / "merges.txt");
  r = run({"generate", "--model", model_.string(), "--prompt", "a"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("merges.txt is missing"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(GenerateCli, UnsupportedModelsAreCleanErrors) {
  write_file(dir_ / "model.gguf", "GGUF");
  RunResult r = run({"generate", "--model", (dir_ / "model.gguf").string()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
  write_file(dir_ / "weights.bin", "x");
  r = run({"generate", "--model", (dir_ / "weights.bin").string()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("not a folder or a .gguf file"), std::string::npos) << r.err;
  write_file(model_ / "config.json", "{\"model_type\": \"bert\", \"hidden_size\": 16}");
  r = run({"generate", "--model", model_.string()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("\"bert\" is not supported"), std::string::npos) << r.err;
  // A LLaMA folder needs tokenizer.json.
  fs::copy_file(fixture_dir() / "llama_tiny_llama3" / "config.json", model_ / "config.json",
                fs::copy_options::overwrite_existing);
  r = run({"generate", "--model", model_.string()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("tokenizer.json is missing"), std::string::npos) << r.err;
}

// The tiny LLaMA 3 model as a Hugging Face folder (sharded safetensors, tokenizer.json) and as a
// GGUF file with its own tokenizer: the CLI prints what the library generates from the same files.
TEST_F(GenerateCli, LlamaFolderAndGGUFFile) {
  const fs::path folder = fixture_dir() / "llama_tiny_llama3", gguf = folder / "model.gguf";
  const std::string prompt = "the cat sat";
  for (const fs::path& path : {folder, gguf}) {
    std::shared_ptr<models::Llama> model;
    std::optional<Tokenizer> tokenizer;
    if (path == gguf) {
      const GGUFFile file = load_gguf(gguf.string());
      model = models::load_llama_gguf(file);
      tokenizer = Tokenizer::from_gguf_vocab(models::gguf_vocab(file));
    } else {
      model =
          std::make_shared<models::Llama>(models::LlamaConfig::from_file((folder / "config.json").string()));
      model->load_hf_state_dict(load_safetensors_folder(folder.string()));
      tokenizer = Tokenizer::from_hf_json((folder / "tokenizer.json").string());
    }
    const std::vector<int32_t> ids = tokenizer->encode(prompt, {.add_special = true});
    ASSERT_EQ(ids.at(0), 1) << path;  // BOS
    Sampler greedy({.temperature = 0});
    // The CLI stops at the tokenizer's EOS and at config.json's eos_token_id list (2 and 3).
    const int32_t eos = tokenizer->eos_token_id();
    const std::vector<int32_t> stops = path == gguf ? std::vector<int32_t>{} : std::vector<int32_t>{2, 3};
    std::string want = prompt;
    for (int32_t id : models::generate(*model, ids, greedy,
                                       {.max_tokens = 6, .eos_token_id = eos, .stop_token_ids = stops}))
      if (id != eos && std::find(stops.begin(), stops.end(), id) == stops.end())
        want += tokenizer->token_bytes(id);
    RunResult r = run({"generate", "--model", path.string(), "--prompt", prompt, "--max-tokens", "6",
                       "--temperature", "0"});
    ASSERT_EQ(r.exit_status, 0) << r.err;
    EXPECT_EQ(r.out, want + "\n") << path;
    EXPECT_NE(r.err.find("prompt: " + std::to_string(ids.size()) + " tokens"), std::string::npos) << r.err;
  }
}

// A config.json that does not match its checkpoint, or asks for absurd sizes, is an `error:` line
// naming the file, the key or tensor and the dimension (exit 1), before any layer is built: a wide
// n_embd used to abort with an uncaught std::bad_alloc, and a billion layers used to build layer
// after layer with the memory growing. The guard (kill after 60 s) only makes a regression fail
// instead of waiting for ctest's timeout.
TEST_F(GenerateCli, ConfigsThatDoNotFitTheirCheckpointAreCleanErrors) {
  auto config = [&](const std::string& n_layer, const std::string& n_embd) {
    write_file(model_ / "config.json",
               "{\"model_type\": \"gpt2\", \"n_layer\": " + n_layer +
                   ", \"n_head\": 4, \"n_embd\": " + n_embd +
                   ", \"vocab_size\": 101, \"n_positions\": 16, \"layer_norm_epsilon\": 1e-05, "
                   "\"activation_function\": \"gelu_new\"}\n");
  };
  const std::string weights = (model_ / "model.safetensors").string(),
                    file = (model_ / "config.json").string();
  auto expect_refused = [&](std::initializer_list<std::string> words) {
    RunResult r =
        test::run_program(cli_, {"generate", "--model", model_.string(), "--prompt", "a"}, dir_, 60);
    EXPECT_EQ(r.exit_status, 1) << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    for (const std::string& w : words)
      EXPECT_NE(r.err.find(w), std::string::npos) << "'" << w << "' is not in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  };
  config("2", "4194304");
  expect_refused(
      {"GPT2: \"" + weights + "\": tensor \"wte.weight\" has shape {101, 16}, expected {101, 4194304}",
       "dimension 1 is 16, expected 4194304 (n_embd)"});
  config("1e9", "16");
  expect_refused({"\"" + file + "\"", "\"n_layer\" must be an integer, found 1e9"});
  config("1000000000", "16");
  expect_refused({"\"" + weights + "\"", "no tensor \"h.2.ln_1.weight\" (layer 2 of n_layer 1000000000)"});
  config("-1", "16");
  expect_refused({"n_layer must be positive, got -1", file});
  config("1000000000000000000", "16");
  expect_refused({"n_layer 1000000000000000000", "overflow 64 bits", file});

  // LLaMA's num_hidden_layers, from a folder, and GGUF's block_count.
  const fs::path llama = dir_ / "llama";
  fs::create_directories(llama);
  for (const char* name : {"config.json", "tokenizer.json", "model.safetensors.index.json",
                           "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"})
    fs::copy_file(fixture_dir() / "llama_tiny_llama3" / name, llama / name);
  std::string text = read_file(llama / "config.json");
  const std::string layers = "\"num_hidden_layers\": 2";
  ASSERT_NE(text.find(layers), std::string::npos);
  write_file(llama / "config.json",
             text.replace(text.find(layers), layers.size(), "\"num_hidden_layers\": 1000000000"));
  RunResult r = test::run_program(cli_, {"generate", "--model", llama.string()}, dir_, 60);
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(
      r.err.find(
          "no tensor \"model.layers.2.input_layernorm.weight\" (layer 2 of num_hidden_layers 1000000000)"),
      std::string::npos)
      << r.err;

  std::string gguf = read_file(fixture_dir() / "llama_tiny_llama3" / "model.gguf");
  const std::string key = "llama.block_count";
  const size_t at = gguf.find(key) + key.size();  // then the type (uint32, 4) and the value
  ASSERT_EQ(static_cast<uint8_t>(gguf.at(at)), 4u);
  const uint32_t billion = 1000000000;
  gguf.replace(at + 4, 4, std::string(reinterpret_cast<const char*>(&billion), 4));
  write_file(dir_ / "deep.gguf", gguf);
  r = test::run_program(cli_, {"generate", "--model", (dir_ / "deep.gguf").string()}, dir_, 60);
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("no tensor \"blk.2.attn_norm.weight\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("layer 2 of llama.block_count 1000000000"), std::string::npos) << r.err;
}

TEST_F(GenerateCli, IntegerWeightsAreACleanError) {
  StateDict state = load_safetensors((model_ / "model.safetensors").string());
  state["wte.weight"] = state.at("wte.weight").to(kInt32);
  save_safetensors((model_ / "model.safetensors").string(), state);
  RunResult r = run({"generate", "--model", model_.string(), "--prompt", "a"});
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("error: GPT2: \"" + (model_ / "model.safetensors").string() +
                       "\": tensor \"wte.weight\" has dtype int32"),
            std::string::npos)
      << r.err;
}

// What reaches the CLI's main is an `error:` line and exit status 1, whatever it is: running out of
// memory used to abort with "terminate called after throwing an instance of 'std::bad_alloc'".
TEST(CliErrors, EveryExceptionIsAnErrorLineNotAnAbort) {
  auto report = [](auto&& body) {
    std::ostringstream err;
    const int status = cli::exit_status_reporting_errors(err, body);
    return std::pair(status, err.str());
  };
  EXPECT_EQ(report([] { return 0; }), std::pair(0, std::string()));
  EXPECT_EQ(report([] { return 2; }).first, 2);
  EXPECT_EQ(report([]() -> int { throw Error("GPT2: bad"); }),
            std::pair(1, std::string("error: GPT2: bad\n")));
  const auto [status, text] = report([]() -> int { throw std::bad_alloc(); });
  EXPECT_EQ(status, 1);
  EXPECT_EQ(text.rfind("error: out of memory", 0), 0u) << text;
  EXPECT_EQ(report([]() -> int {
              throw std::filesystem::filesystem_error("no way", std::error_code());
            }).second.rfind("error: ", 0),
            0u);
  EXPECT_EQ(report([]() -> int { throw std::runtime_error("boom"); }),
            std::pair(1, std::string("error: boom\n")));
  // Ctrl-C: 128 + SIGINT, as a shell reports a program SIGINT ended.
  EXPECT_EQ(report([]() -> int { throw InterruptedError("interrupted (Ctrl-C, SIGINT) in kernel E_4"); }),
            std::pair(130, std::string("interrupted (Ctrl-C, SIGINT) in kernel E_4\n")));
}

// Whether this machine has a usable CUDA device (lazygrad info's line).
bool have_cuda() {
  for (const DeviceInfo& d : devices())
    if (d.name == "CUDA") return d.available;
  return false;
}

// --device: the same greedy text on the CPU and on CUDA where there is a GPU; where there is none,
// an error line saying why, not a crash.
TEST_F(GenerateCli, DeviceRunsThereOrSaysWhyNot) {
  const std::vector<std::string> args = {"generate",     "--model", model_.string(), "--prompt", "ab",
                                         "--max-tokens", "8",       "--temperature", "0"};
  auto with = [&](const std::string& device) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--device", device});
    return run(a);
  };
  RunResult cpu = with("CPU");
  ASSERT_EQ(cpu.exit_status, 0) << cpu.err;
  EXPECT_EQ(cpu.out, run(args).out);
  RunResult cuda = with("CUDA");
  if (have_cuda()) {
    ASSERT_EQ(cuda.exit_status, 0) << cuda.err;
    EXPECT_EQ(cuda.out, cpu.out);
  } else {
    EXPECT_EQ(cuda.exit_status, 1) << cuda.err;
    EXPECT_NE(cuda.err.find("error: CUDA: "), std::string::npos) << cuda.err;
  }
  RunResult bad = with("TPU");
  EXPECT_NE(bad.exit_status, 0);
  EXPECT_NE(bad.err.find("device 'TPU' is unknown"), std::string::npos) << bad.err;
}

TEST_F(GenerateCli, BadOptionsAreUsageErrors) {
  RunResult r = run({"generate", "--model", model_.string(), "--top-p", "1.5"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("top_p"), std::string::npos) << r.err;
  r = run({"generate", "--prompt", "a"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
  // A prompt byte outside the tiny model's 101 tokens (tab has id >= 101).
  r = run({"generate", "--model", model_.string(), "--prompt", "a\tb"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("outside the model's vocabulary of 101"), std::string::npos) << r.err;
}

}  // namespace
