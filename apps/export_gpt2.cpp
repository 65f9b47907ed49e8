// The GPT-2 page of `lazygrad export --webgpu` (export_pages.h): a prompt, and GPT-2 continues it in
// the browser, token by token, through its KV cache on WebGPU; the tokenizer and the sampling run
// in JavaScript. The exported function is models/gpt2.h's decode_step, whose token and position
// are Variables: the page feeds the prompt through it one token at a time, then each token it
// chooses, as models/generate.h does after the prompt.
#include <lazygrad/json.h>
#include <lazygrad/lazygrad.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../models/gpt2.h"
#include "export_pages.h"
#include "text_file.h"

namespace lazygrad::cli {

namespace {

namespace fs = std::filesystem;

// The page; @CONFIG@ stands for the model's sizes and its end-of-text token. window.page is what a
// test drives: ready, generate(prompt, options) (the new ids and text), encode(text).
const char* kPage = R"HTML(<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GPT-2 in your browser (lazygrad, WebGPU)</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 54em; padding: 0 1em; color: #222; }
  h1 { font-size: 1.4em; margin-bottom: 0.2em; }
  textarea { width: 100%; font: inherit; box-sizing: border-box; }
  label { margin-right: 1em; white-space: nowrap; }
  input[type=number] { width: 5em; font: inherit; }
  button { font: inherit; padding: 0.3em 1em; }
  #text { white-space: pre-wrap; background: #f6f6f6; border-radius: 6px; padding: 0.8em; min-height: 6em; font-family: ui-monospace, monospace; }
  #text .prompt { color: #777; }
  #status, #stats { color: #666; }
</style>
<h1>GPT-2, running in this page</h1>
<p id="status">loading the model...</p>
<textarea id="prompt" rows="3">Hello, I'm a language model,</textarea>
<p>
  <label>tokens <input id="max" type="number" min="1" value="40"></label>
  <label>temperature <input id="temperature" type="number" min="0" step="0.1" value="0"></label>
  <label>top-k <input id="topk" type="number" min="0" value="0"></label>
  <label>top-p <input id="topp" type="number" min="0" max="1" step="0.05" value="1"></label>
  <label>repetition penalty <input id="penalty" type="number" min="0.1" step="0.1" value="1"></label>
  <label>seed <input id="seed" type="number" min="0" value="0"></label>
  <button id="go" disabled>generate</button>
</p>
<div id="text"></div>
<p id="stats"></p>
<script type="module">
  import {load, model} from "./model.js";
  import {GPT2Tokenizer} from "./tokenizer.js";
  const CONFIG = @CONFIG@;
  const $ = (id) => document.getElementById(id);

  // mulberry32, a small public-domain generator: the same seed gives the same text in this page
  // (not the same as `lazygrad generate`'s: its generator is std::mt19937_64).
  function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // The next token from the last position's logits, in Hugging Face's order (lazygrad's Sampler):
  // repetition penalty, temperature (0: the argmax, the smallest id on a tie), top-k, top-p.
  function sample(logits, previous, o, random) {
    const x = Float64Array.from(logits);
    if (o.repetitionPenalty !== 1)
      for (const id of new Set(previous)) x[id] = x[id] > 0 ? x[id] / o.repetitionPenalty : x[id] * o.repetitionPenalty;
    if (o.temperature === 0) {
      let best = 0;
      for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
      return best;
    }
    let order = Array.from(x.keys()).sort((a, b) => x[b] - x[a] || a - b);
    if (o.topK > 0) order = order.slice(0, o.topK);
    const top = x[order[0]];
    let p = order.map((i) => Math.exp((x[i] - top) / o.temperature));
    let sum = p.reduce((a, b) => a + b, 0);
    if (o.topP < 1) {
      let kept = 0, mass = 0;
      while (kept < p.length && mass < o.topP * sum) mass += p[kept++];
      order = order.slice(0, kept);
      p = p.slice(0, kept);
      sum = mass;
    }
    let u = random() * sum;
    for (let i = 0; i < order.length; i++) if ((u -= p[i]) < 0) return order[i];
    return order[order.length - 1];
  }

  const ready = (async () => {
    const [m, tokenizer] = await Promise.all([
      load({onProgress: (got, total) => {
        $("status").textContent = `loading the weights: ${(got / 1e6).toFixed(1)}` + (total ? ` of ${(total / 1e6).toFixed(1)}` : "") + " MB";
      }}),
      GPT2Tokenizer.load(new URL(".", location.href))]);
    return {m, tokenizer};
  })();

  // Generates after `prompt` (text), calling onToken(id, bytes) for each new token; stops after
  // maxTokens, at the end-of-text token or when the sequence fills n_positions, as `lazygrad
  // generate` does. The prompt goes through the model one token at a time.
  async function generate(prompt, {maxTokens = 40, temperature = 0, topK = 0, topP = 1, repetitionPenalty = 1, seed = 0} = {},
                          onToken = () => {}) {
    const {m, tokenizer} = await ready;
    const ids = tokenizer.encode(prompt);
    if (!ids.length) {
      if (CONFIG.eos_token_id < 0) throw new Error("the prompt is empty, and the vocabulary has no end-of-text token to start from");
      ids.push(CONFIG.eos_token_id);
    }
    for (const id of ids)
      if (id >= CONFIG.vocab_size) throw new Error(`the prompt has token ${id}, outside the model's vocabulary of ${CONFIG.vocab_size}`);
    if (ids.length > CONFIG.n_positions) throw new Error(`the prompt has ${ids.length} tokens, more than n_positions ${CONFIG.n_positions}`);
    const options = {temperature, topK, topP, repetitionPenalty}, random = mulberry32(seed);
    const t0 = performance.now();
    let logits;
    for (let pos = 0; pos < ids.length; pos++) [logits] = await m.run([], {token: ids[pos], pos});
    const t1 = performance.now();
    const sequence = [...ids], generated = [];
    while (generated.length < maxTokens && sequence.length < CONFIG.n_positions) {
      const next = sample(logits, sequence, options, random);
      sequence.push(next);
      generated.push(next);
      onToken(next, tokenizer.tokenBytes(next));
      if (next === CONFIG.eos_token_id) break;
      if (generated.length < maxTokens && sequence.length < CONFIG.n_positions)
        [logits] = await m.run([], {token: next, pos: sequence.length - 1});
    }
    const t2 = performance.now();
    return {prompt: ids, ids: generated, promptMs: t1 - t0, generateMs: t2 - t1};
  }

  $("go").onclick = async () => {
    $("go").disabled = true;
    const text = $("text");
    text.textContent = "";
    text.appendChild(document.createElement("span")).className = "prompt";
    text.firstChild.textContent = $("prompt").value;
    const out = text.appendChild(document.createElement("span")), utf8 = new TextDecoder();
    try {
      const r = await generate($("prompt").value, {
        maxTokens: Number($("max").value), temperature: Number($("temperature").value), topK: Number($("topk").value),
        topP: Number($("topp").value), repetitionPenalty: Number($("penalty").value), seed: Number($("seed").value)},
        (id, bytes) => { if (id !== CONFIG.eos_token_id) out.textContent += utf8.decode(bytes, {stream: true}); });
      out.textContent += utf8.decode();
      $("stats").textContent = `prompt: ${r.prompt.length} tokens in ${(r.promptMs / 1000).toFixed(3)} s; ` +
        `generation: ${r.ids.length} tokens in ${(r.generateMs / 1000).toFixed(3)} s, ` +
        `${(r.ids.length / (r.generateMs / 1000)).toFixed(1)} tokens/s (${model.dispatches.length} kernel launches a token)`;
    } catch (e) {
      $("stats").textContent = "error: " + e.message;
    }
    $("go").disabled = false;
  };

  window.page = {ready, generate, encode: async (text) => (await ready).tokenizer.encode(text)};
  ready.then(({m}) => {
    $("status").textContent = `Ready: GPT-2 (${CONFIG.n_layer} layers, ${CONFIG.n_embd} wide, ${CONFIG.n_positions} positions) ` +
                              `runs with WebGPU on ${m.adapterName}.`;
    $("go").disabled = false;
  }, (e) => { $("status").textContent = "error: " + e.message; });
</script>
</html>
)HTML";

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error("cannot write " + path.string());
}

// The tokenizer as the page reads it, vocab.json and merges.txt: copied, or taken out of a
// tokenizer.json (model.vocab, and model.merges as "a b" strings or [a, b] pairs).
void write_tokenizer_files(const fs::path& model_dir, const fs::path& out_dir) {
  if (fs::exists(model_dir / "vocab.json") || !fs::exists(model_dir / "tokenizer.json")) {
    for (const char* name : {"vocab.json", "merges.txt"}) {
      if (!fs::is_regular_file(model_dir / name))
        throw Error((model_dir / name).string() + " is missing (the folder must hold " + name + ")");
      fs::copy_file(model_dir / name, out_dir / name, fs::copy_options::overwrite_existing);
    }
    return;
  }
  const fs::path file = model_dir / "tokenizer.json";
  const json::Value doc = json::parse(read_text(file));
  const json::Value* model = doc.find("model");
  const json::Value* vocab = model ? model->find("vocab") : nullptr;
  const json::Value* merges = model ? model->find("merges") : nullptr;
  if (!vocab || vocab->kind != json::Kind::Object || !merges || merges->kind != json::Kind::Array)
    throw Error(file.string() + ": no model.vocab object and model.merges array (a BPE tokenizer's)");
  std::string vocab_json = "{";
  for (const json::Member& m : vocab->members)
    vocab_json += (vocab_json.size() > 1 ? ", " : "") + json::quote(m.key) + ": " + m.value.text;
  write_text(out_dir / "vocab.json", vocab_json + "}\n");
  std::string merges_txt = "#version: 0.2\n";
  for (const json::Value& m : merges->items) {
    if (m.kind == json::Kind::String) {
      merges_txt += m.text + "\n";
    } else if (m.kind == json::Kind::Array && m.items.size() == 2) {
      merges_txt += m.items[0].text + " " + m.items[1].text + "\n";
    } else {
      throw Error(file.string() + ": a merge of model.merges is neither \"a b\" nor [a, b]");
    }
  }
  write_text(out_dir / "merges.txt", merges_txt);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

WebGpuExportSummary export_gpt2_page(const std::string& model_dir, const std::string& out_dir) {
  const fs::path dir(model_dir);
  const models::GPT2Config config = models::GPT2Config::from_file((dir / "config.json").string());
  const fs::path weights = dir / "model.safetensors";
  if (!fs::is_regular_file(weights))
    throw Error(weights.string() + " is missing (the folder must hold model.safetensors)");
  // Loaded on the CPU (checked against the config there), then moved: the function is captured on
  // WEBGPU, as export_webgpu needs.
  auto model = models::GPT2::from_hf_checkpoint(config, load_safetensors(weights.string()), weights.string());
  model->to("WEBGPU");
  NoGrad no_grad;
  model->empty_cache();
  // One window of every position: the page's single function serves the whole context (the CLI
  // keeps one Jit per 128-position window instead, to read less of the cache early on).
  Variable token(0, kInt64), pos(0, kInt64);
  Jit step([&](const std::vector<Tensor>&) {
    return std::vector<Tensor>{model->decode_step(token, pos, config.n_positions)};
  });
  step({});
  step({});  // captured
  // The page starts from an empty cache: the capture's writes into it are cleared in place (the
  // capture holds these buffers), and a buffer of zeros is left out of the weights file.
  for (const auto& block : model->blocks)
    for (Tensor* cache : {&block->attn->cache_k, &block->attn->cache_v})
      cache->assign(Tensor::zeros_like(*cache));
  std::vector<Tensor> caches;
  for (const auto& block : model->blocks)
    caches.insert(caches.end(), {block->attn->cache_k, block->attn->cache_v});
  realize(caches);

  fs::create_directories(out_dir);
  write_tokenizer_files(dir, out_dir);
  write_text(fs::path(out_dir) / "tokenizer.js", gpt2_tokenizer_js());
  // The end of text: "<|endoftext|>" where the vocabulary has it and the model's ids reach it.
  const json::Value vocab = json::parse(read_text(fs::path(out_dir) / "vocab.json"));
  const json::Value* eos = vocab.find("<|endoftext|>");
  const int64_t eos_id = eos && std::stoll(eos->text) < config.vocab_size ? std::stoll(eos->text) : -1;
  const std::string page_config = "{\"n_layer\": " + std::to_string(config.n_layer) +
                                  ", \"n_head\": " + std::to_string(config.n_head) +
                                  ", \"n_embd\": " + std::to_string(config.n_embd) +
                                  ", \"n_positions\": " + std::to_string(config.n_positions) +
                                  ", \"vocab_size\": " + std::to_string(config.vocab_size) +
                                  ", \"eos_token_id\": " + std::to_string(eos_id) + "}";
  WebGpuExportOptions options;
  options.variables = {{"token", token}, {"pos", pos}};
  options.names = model->state_dict();
  options.output_names = {"logits"};
  options.index_html = replace_all(kPage, "@CONFIG@", page_config);
  return export_webgpu(step, out_dir, options);
}

}  // namespace lazygrad::cli
