// lazygrad: the command-line tool.
//
//   lazygrad info             version, devices and settings
//   lazygrad <cmd> --help     help for one command
//
// To add a subcommand, write `int cmd_x(const Args&)` (here, or in a file of its own declared in
// command.h) and add a row to kCommands. The dispatcher handles --help for every command; commands
// report bad arguments by throwing UsageError (exit 2), and the library's lazygrad::Error, running
// out of memory (std::bad_alloc) and any other std::exception are reported as `error: ...` (exit 1,
// apps/report_errors.h).
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "report_errors.h"

namespace lazygrad::cli {
int cmd_learn(const Args& args);  // apps/learn.cpp
}  // namespace lazygrad::cli

namespace {

using namespace lazygrad::cli;  // Args, Command, UsageError, parse_options (apps/command.h)

// ---- commands ---------------------------------------------------------------------------------------

int cmd_info(const Args& args);
int cmd_help(const Args& args);

const Command kCommands[] = {
    {"info", "", "print the version, devices, transports and settings",
     "Settings come from the environment: DEBUG, THREADS, FTZ, CC, LAZYGRAD_CACHE, DEVICE (the default\n"
     "device), CL_PLATFORM and CL_DEVICE (which OpenCL device is CL: an index or part of its name).\n"
     "A device kind that is missing says why. The MPI transport (train --ddp) is OpenMPI's libmpi, opened\n"
     "at run time: LAZYGRAD_MPI_LIBRARY (a path), else libmpi.so.40, else libmpi.so; absent says why.",
     cmd_info},
    {"help", "[COMMAND]", "show help for lazygrad or for one command", "", cmd_help},
    {"train",
     "fashion-mnist [--model mlp|cnn] [--epochs N] [--batch-size B] [--lr X] [--seed S] [--data DIR] "
     "[--out DIR] [--limit N] [--jit on|off] [--device D | --devices D1,D2,... | --ddp] [--loss-every N]\n"
     "       lazygrad train charlm --text FILE|FOLDER [--minutes M] [--steps N] [--out DIR] "
     "[--sample-chars N] [--temperature T] [--prompt TEXT] [--seed S] [model and training options]",
     "train a classifier on Fashion-MNIST, or a character-level GPT on any text",
     "fashion-mnist: a classifier (Adam, cross-entropy); prints its test accuracy. Options:\n"
     "  --model mlp|cnn   784-512-512-10 MLP, or a LeNet-style CNN (default mlp)\n"
     "  --epochs N        passes over the training set (default 1)\n"
     "  --batch-size B    examples per step; the last, shorter batch is dropped (default 128)\n"
     "  --lr X            Adam's learning rate (default 0.001)\n"
     "  --seed S          seeds the initialization and the shuffling (default 0)\n"
     "  --data DIR        the four IDX files (default /usr/share/datasets/fashion-mnist)\n"
     "  --out DIR         where <model>.safetensors and <model>.svg go (default .)\n"
     "  --limit N         train on the first N training images only (default all)\n"
     "  --jit on|off      replay the captured training step (default on)\n"
     "  --device D        where to train: CPU, CL, CUDA, CUDA:1, ... (default: DEVICE, else CPU)\n"
     "  --devices LIST    data-parallel across these devices (CPU,CPU:1 or CPU,CL, ...): a replica of the\n"
     "                    model on each, each batch split between them, the gradients all-reduced\n"
     "                    (docs/multi.md); the same training as one device, up to rounding\n"
     "  --ddp             data-parallel across processes: run under OpenMPI's mpirun\n"
     "                    (mpirun -np 2 lazygrad train fashion-mnist --ddp), each rank a share of every\n"
     "                    batch, the gradients summed over MPI; rank 0 prints and writes the files, and\n"
     "                    every rank prints its parameters' hash at the end, which must agree.\n"
     "                    LAZYGRAD_MPI_TIMEOUT (seconds, default 60): how long a rank waits for another\n"
     "                    before stopping the job with an error naming it. THREADS, when not set, is\n"
     "                    divided between the ranks on one machine\n"
     "  --loss-every N    print every Nth step's loss (`step N: loss X`, 9 digits), to compare runs\n"
     "\n"
     "After each epoch: the epoch's time and items/s, `test accuracy: NN.NN%` on the 10k test images,\n"
     "the checkpoint and the plot (train loss per step, test accuracy per epoch). See docs/train.md.\n"
     "\n"
     "charlm: a small GPT on the bytes of a text; prints the loss on held-out text (the last 10% of\n"
     "each file) in nats per character, writes a checkpoint and prints a sample. Options:\n"
     "  --text FILE|FOLDER  the text: a file, or every text file directly in a folder (binary files,\n"
     "                      holding a NUL byte, and second names of one file are skipped)\n"
     "  --minutes M         stop after M minutes of training and evaluation (default 15 without --steps)\n"
     "  --steps N           stop after N steps; the learning rate schedule then follows the steps\n"
     "                      (otherwise the clock), so a run is repeatable\n"
     "  --out DIR           where charlm.safetensors goes, with the vocabulary in its metadata (default .)\n"
     "  --sample-chars N    characters to sample at the end (default 400; 0: none)\n"
     "  --temperature T     0: greedy; otherwise softmax(logits / T) (default 0.8)\n"
     "  --prompt TEXT       the sample continues TEXT (default a new line)\n"
     "  --seed S            seeds the initialization, the batches and the sampler (default 0)\n"
     "  --layers N, --heads N, --embd N, --context N   the model (default 4, 4, 128, 64)\n"
     "  --batch-size B, --lr X, --warmup N, --eval-every N\n"
     "                      windows per step (default 32), AdamW's peak learning rate (default 0.004;\n"
     "                      linear warmup over N steps (default 50), cosine to a tenth), steps between\n"
     "                      held-out evaluations (default 100)\n"
     "See docs/charlm.md.",
     cmd_train},
    {"generate",
     "--model PATH [--prompt TEXT] [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] "
     "[--repetition-penalty R] [--seed S] [--device D]",
     "generate text with GPT-2, LLaMA or Mistral (a Hugging Face folder or a GGUF file), streamed to stdout",
     "options:\n"
     "  --model PATH              a Hugging Face folder: config.json (model_type gpt2, llama or\n"
     "                            mistral), the weights (model.safetensors; LLaMA also shards with\n"
     "                            model.safetensors.index.json) and the tokenizer (GPT-2: vocab.json\n"
     "                            and merges.txt, or tokenizer.json; LLaMA: tokenizer.json); or a\n"
     "                            llama.cpp .gguf file (LLaMA architecture; F32, F16, BF16, Q8_0,\n"
     "                            Q4_0, Q4_K weights: docs/gguf.md)\n"
     "  --prompt TEXT             the text to continue; printed first (default empty: GPT-2 starts\n"
     "                            from <|endoftext|>, LLaMA from its BOS token)\n"
     "  --max-tokens N            at most N new tokens (default 64); also stops at the model's end\n"
     "                            of text token(s) and at its context length\n"
     "  --temperature T           0: greedy; otherwise softmax(logits / T) (default 1)\n"
     "  --top-k K                 sample among the K most likely tokens; 0: all (default 0)\n"
     "  --top-p P                 among the fewest most likely tokens reaching probability P (default 1)\n"
     "  --repetition-penalty R    Hugging Face's: logits of tokens seen so far / R if positive, * R if\n"
     "                            negative (default 1: none)\n"
     "  --seed S                  the sampler's seed; the same seed gives the same text (default 0)\n"
     "  --device D                where the model runs: CPU, CL, CUDA, CUDA:1, ... (default: DEVICE, else\n"
     "                            CPU)\n"
     "\n"
     "At the end, stderr gets the prompt's tokens/s (its one forward pass) and the generation's\n"
     "tokens/s (sampling and one-token forward passes with the KV cache). See docs/gpt2.md,\n"
     "docs/llama.md and docs/gguf.md.",
     cmd_generate},
    {"generate-image",
     "(--model FILE | --fakeweights) --tokenizer PATH [--prompt TEXT] [--steps N] [--size N] [--guidance G] "
     "[--seed S] [--out FILE] [--device D]",
     "make an image from text with Stable Diffusion v1.x (the original single-file checkpoint)",
     "options:\n"
     "  --model FILE         the checkpoint: Stable Diffusion v1.x's single .safetensors file\n"
     "                       (model.diffusion_model.*, first_stage_model.*, cond_stage_model.*;\n"
     "                       float32 or float16); the sizes are read from its tensors' shapes\n"
     "  --fakeweights        instead of --model: v1.x's network (1.03 billion parameters) with random\n"
     "                       weights, for a run without a checkpoint (the image is noise-like)\n"
     "  --tokenizer PATH     CLIP's tokenizer: a folder with vocab.json and merges.txt, or OpenAI's\n"
     "                       bpe_simple_vocab_16e6.txt.gz\n"
     "  --prompt TEXT        what to draw (default empty)\n"
     "  --steps N            DDIM steps, 1 to 1000 (default 20)\n"
     "  --size N             the image's width and height in pixels, a multiple of 64 for v1.x\n"
     "                       (default 512)\n"
     "  --guidance G         classifier-free guidance scale; 1: no guidance, one UNet call a step\n"
     "                       (default 7.5)\n"
     "  --seed S             the initial noise's seed (default 0)\n"
     "  --out FILE           the PNG to write (default image.png)\n"
     "  --device D           where the model runs: CPU, CL, CUDA, ... (default: DEVICE, else CPU)\n"
     "  --text-heads N, --unet-heads N, --groups N\n"
     "                       what a checkpoint's shapes do not tell, for one not of v1.x's shape\n"
     "                       (default 12, 8 and 32, v1.x's)\n"
     "\n"
     "stderr gets a line per step, then the time of the text encoder, the sampling and the decoder,\n"
     "and the peak resident memory. See docs/stable_diffusion.md.",
     cmd_generate_image},
    {"milestone", "list | run NAME [--quick] [--seed S] [--data DIR] [--text PATH] [--cifar DIR] [--out DIR]",
     "rebuild the field's milestones, from the 1958 perceptron on, each checking its own target",
     "list              the milestones, their years and targets\n"
     "run NAME          print NAME's history, run it and check its target: exit status 0 when it is\n"
     "                  met, 1 when it is missed (the last line says PASSED or MISSED, and what was\n"
     "                  reached), 3 when it could not run (NOT RUN: its data missing or malformed),\n"
     "                  2 for bad arguments\n"
     "  --quick         a short version with a target of its own (what CI runs)\n"
     "  --seed S        seeds the data, the initialization and the shuffling (default 0)\n"
     "  --data DIR      Fashion-MNIST's IDX files, for mlp, cnn and systems (default\n"
     "                  /usr/share/datasets/fashion-mnist)\n"
     "  --text PATH     the transformer's text, a file or a folder (default /usr/share/games/fortunes,\n"
     "                  Debian's fortunes)\n"
     "  --cifar DIR     cnn also trains on CIFAR-10 from DIR, the binary version's folder\n"
     "                  cifar-10-batches-bin (data_batch_1.bin ... test_batch.bin)\n"
     "  --out DIR       where mlp, cnn and transformer write their checkpoint and plot (default .)\n"
     "\n"
     "Milestones: perceptron (1958), xor (1986), mlp (1986), cnn (1998), transformer (2017), systems\n"
     "(2018).\n"
     "docs/milestones.md has a full run of each, its command, output and time.",
     cmd_milestone},
    {"learn", "list | start N [--dir DIR] | check N [--file PATH]",
     "exercises: write a piece of lazygrad yourself, and have it checked",
     "list              the exercises: number, name, what to write, and the chapter that teaches it\n"
     "start N           write exercise N's starter file (the piece to write left out, a TODO in its\n"
     "                  place) and say what to do; an existing file is never overwritten\n"
     "  --dir DIR       where to write it (default .; made if missing)\n"
     "check N           compile the file against lazygrad, run it and compare with lazygrad's own\n"
     "                  answer: RIGHT, or WRONG with what went wrong, why, and how to fix it\n"
     "  --file PATH     the file to check (default: the one start wrote, in .)\n"
     "\n"
     "N is a number or a name: 1 sigmoid-backward, 2 attention, 3 sgd-momentum, 4 fusion-count.\n"
     "Exit status: 0 right; 1 wrong, a file that does not compile (the compiler's errors are shown)\n"
     "or another error; 2 bad arguments.\n"
     "\n"
     "check compiles the file with CXX (default c++; -std=c++20 -shared) and loads it into lazygrad;\n"
     "the headers come from LAZYGRAD_INCLUDE_DIR, else the install's or the source tree's include/,\n"
     "the starters from LAZYGRAD_LEARN_DIR, else share/lazygrad/learn or the source tree's learn/. A\n"
     "check takes a second or two. See docs/learn/exercises.md.",
     cmd_learn},
    {"bench", "[--model mlp|cnn] [--batch-size B] [--steps N]",
     "measure this machine: the roofline, a training step profiled per layer, steps per second",
     "Prints the CPU's model and the compiler of CPU kernels; the roofline's ceilings, measured with\n"
     "lazygrad's own kernels (a 1024x1024 float32 matrix product, x + 1 over 64 MiB); one training step\n"
     "(random images, cross-entropy, Adam) profiled per layer (docs/profile.md: parameters, FLOPs, bytes,\n"
     "kernels, time, the share of the roofline reached, and the kernels fused across layers); then the\n"
     "step's time run fused and replayed by the Jit.\n"
     "  --model mlp|cnn   the 784-512-512-10 MLP or the LeNet-style CNN (default mlp)\n"
     "  --batch-size B    images per step (default 128)\n"
     "  --steps N         timed steps of each kind, after 3 warm-up steps (default 20)\n"
     "\n"
     "The comparisons with OpenBLAS and PyTorch are the programs under bench/ (docs/benchmarks.md).",
     cmd_bench},
    {"viz", "[--example matmul|softmax|attention|mlp-step] [--out FILE]",
     "draw a computation: its graph, its kernels and their source, as one HTML page",
     "Runs the example and writes one self-contained page of every realize in it (docs/viz.md): the\n"
     "tensor graph, which nodes fused into which kernel (by colour), and on a click a kernel's\n"
     "generated source, time, FLOPs and bytes. Nothing on the page is loaded from the network.\n"
     "  --example NAME    matmul: relu(x @ w + b); softmax: a softmax over rows; attention: causal\n"
     "                    scaled dot-product attention; mlp-step: one SGD step of a 20-32-4 MLP\n"
     "                    (default mlp-step)\n"
     "  --out FILE        where the page goes (default lazygrad-viz.html)\n"
     "\n"
     "For your own program, VIZ=1 writes the page of each realize as it runs (VIZ_OUT=FILE), and\n"
     "lazygrad::write_viz(fn, path) that of everything fn realizes.",
     cmd_viz},
    {"export", "--webgpu --model PATH --out DIR",
     "a model as a web page that runs it in the browser with WebGPU (Fashion-MNIST or GPT-2)",
     "Writes DIR/index.html, DIR/model.js (the WGSL kernels and their launches) and DIR/model.safetensors\n"
     "(the weights); nothing on the page is fetched from the internet. The model's kernels are captured in\n"
     "lazygrad's own headless Chromium (the WEBGPU device), so Chromium must be here.\n"
     "  --webgpu        the kind of export (the only one)\n"
     "  --model PATH    a checkpoint of `lazygrad train fashion-mnist` (mlp.safetensors or\n"
     "                  cnn.safetensors): a page that classifies what you draw on a canvas; or a GPT-2\n"
     "                  folder (config.json, model.safetensors, vocab.json and merges.txt or\n"
     "                  tokenizer.json): a page that generates text token by token, tokenizer and\n"
     "                  sampling in JavaScript\n"
     "  --out DIR       the folder (made if missing)\n"
     "\n"
     "A page opened from file:// cannot fetch its weights: serve the folder on localhost, e.g.\n"
     "`python3 -m http.server -d DIR 8000`, and open http://localhost:8000/ (the command prints this).\n"
     "See docs/webgpu.md.",
     cmd_export},
};

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

void print_usage(std::ostream& os) {
  os << "usage: lazygrad <command> [args...]\n"
        "       lazygrad --help | --version\n\ncommands:\n";
  size_t width = 0;
  for (const Command& c : kCommands) width = std::max(width, c.name.size());
  for (const Command& c : kCommands)
    os << "  " << c.name << std::string(width - c.name.size() + 2, ' ') << c.summary << "\n";
  os << "\nRun `lazygrad <command> --help` for one command.\n";
}

void print_command_usage(std::ostream& os, const Command& c) {
  os << "usage: lazygrad " << c.name << (c.synopsis.empty() ? "" : " ") << c.synopsis << "\n\n"
     << c.summary << "\n";
  if (!c.details.empty()) os << "\n" << c.details << "\n";
}

int cmd_help(const Args& args) {
  Options opts = parse_options(args, {});
  if (opts.positional.size() > 1) throw UsageError{"unexpected argument '" + opts.positional[1] + "'"};
  if (opts.positional.empty()) {
    print_usage(std::cout);
    return 0;
  }
  const Command* c = find_command(opts.positional[0]);
  if (c == nullptr) throw UsageError{"no command '" + opts.positional[0] + "'"};
  print_command_usage(std::cout, *c);
  return 0;
}

int cmd_info(const Args& args) {
  no_positionals(parse_options(args, {}));
  // Query everything before printing, so a failure does not leave half a report on stdout.
  const lazygrad::Settings& s = lazygrad::settings();
  const std::vector<lazygrad::DeviceInfo> devices = lazygrad::devices();
  const lazygrad::mpi::Availability mpi = lazygrad::mpi::availability();
  auto or_none = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };

  std::cout << "lazygrad " << lazygrad::version() << "\n\ndevices:\n";
  for (const lazygrad::DeviceInfo& d : devices)
    std::cout << "  " << d.name << "  " << (d.available ? "available" : "unavailable") << "  "
              << or_none(d.detail) << "\n";
  std::cout << "\ntransports:\n  MPI  " << (mpi.available ? "available" : "absent") << "  " << mpi.detail
            << (mpi.available ? "; mpirun -np N lazygrad train fashion-mnist --ddp" : "") << "\n";

  std::cout
      << "\nsettings:\n"
      << "  debug            " << s.debug << "  (DEBUG)\n"
      << "  threads          " << s.threads << "  (THREADS)\n"
      << "  noopt            " << (s.noopt ? "true" : "false") << "  (NOOPT)\n"
      << "  beam             " << s.beam << "  (BEAM; 0: the default optimizations, no search)\n"
      << "  flush_denormals  " << (s.flush_denormals ? "true" : "false") << "  (FTZ)\n"
      << "  cc               " << or_none(s.cc) << "  (CC"
      << (s.cpu_compiler == "cc" ? ")\n" : "; used with LAZYGRAD_CPU_COMPILER=cc)\n") << "  cflags           "
      << or_none(s.cflags) << "  (LAZYGRAD_CFLAGS"
      << (s.cpu_compiler == "cc" ? ")\n" : "; used with LAZYGRAD_CPU_COMPILER=cc)\n") << "  cpu_compiler     "
      << s.cpu_compiler
      << "  (LAZYGRAD_CPU_COMPILER; llvm: clang and LLVM in process, the default where built; cc: CC as a "
         "process)\n"
      << "  cache_dir        " << or_none(s.cache_dir) << "  (LAZYGRAD_CACHE)\n"
      << "  default device   " << lazygrad::default_device() << "  (DEVICE)\n";
  return 0;
}

// ---- dispatch ---------------------------------------------------------------------------------------

bool is_help(std::string_view arg) { return arg == "--help" || arg == "-h"; }

int dispatch(const Args& argv) {
  if (argv.empty()) throw UsageError{"no command given"};
  const std::string& first = argv[0];
  if (is_help(first)) {
    print_usage(std::cout);
    return 0;
  }
  if (first == "--version") {
    std::cout << "lazygrad " << lazygrad::version() << "\n";
    return 0;
  }
  if (first.starts_with("-")) throw UsageError{"unknown option '" + first + "'"};
  const Command* command = find_command(first);
  if (command == nullptr) throw UsageError{"unknown command '" + first + "'"};

  Args rest(argv.begin() + 1, argv.end());
  for (const std::string& arg : rest) {
    if (arg == "--") break;
    if (is_help(arg)) {
      print_command_usage(std::cout, *command);
      return 0;
    }
  }
  try {
    return command->run(rest);
  } catch (UsageError& e) {
    if (e.command == nullptr) e.command = command;
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  return exit_status_reporting_errors(std::cerr, [&] {
    try {
      return dispatch(Args(argv + 1, argv + argc));
    } catch (const UsageError& e) {
      std::cerr << "lazygrad: " << e.message << "\n\n";
      if (e.command != nullptr) {
        print_command_usage(std::cerr, *e.command);
      } else {
        print_usage(std::cerr);
      }
      return 2;
    }
  });
}
