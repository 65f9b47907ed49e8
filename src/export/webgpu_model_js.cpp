// model.js's runtime (webgpu_model_js.h). Plain ES2020 and WebGPU, no dependencies. It does what
// the WEBGPU device does in lazygrad's own page (runtime/webgpu/page_script.cpp), for one fixed
// list of launches: a GPUBuffer per captured buffer, a pipeline per distinct kernel with its
// bindings' layout spelled out, one bind group per launch made once, and per call one compute pass
// with every dispatch in the captured order (WebGPU orders the dispatches of a pass and makes each
// one's writes visible to the next).
#include "export/webgpu_model_js.h"

namespace lazygrad {

const char* webgpu_model_runtime_js() {
  return R"JS(
// ---- the runtime (the same in every exported model) ----------------------------------------------

export const model = MODEL;

// Typed arrays by lazygrad dtype: 16-bit floats come as their bits, bools as bytes.
export const TYPED = {float32: Float32Array, int32: Int32Array, uint32: Uint32Array, int16: Int16Array,
               uint16: Uint16Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
               float16: Uint16Array, bfloat16: Uint16Array, int64: BigInt64Array, uint64: BigUint64Array};

// WebGPU copies whole 4-byte words: a byte count that is not a multiple of 4 is padded.
const roundUp4 = (n) => Math.max(4, Math.ceil(n / 4) * 4);
function padded(bytes) {
  if (bytes.byteLength % 4 === 0) return bytes;
  const out = new Uint8Array(roundUp4(bytes.byteLength));
  out.set(bytes);
  return out;
}
const asBytes = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

// The weights file, whole, reporting progress (bytes so far, bytes in all or 0) as it comes.
async function fetchBytes(url, onProgress) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    const hint = location.protocol === "file:"
      ? " (a page opened from file:// cannot fetch its weights: serve the folder, e.g. " +
        "`python3 -m http.server -d FOLDER 8000`, and open http://localhost:8000/)" : "";
    throw new Error(`cannot fetch ${url}: ${e.message}${hint}`);
  }
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status} ${response.statusText}`);
  const total = Number(response.headers.get("content-length")) || 0;
  if (!onProgress || !response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader(), pieces = [];
  let got = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    pieces.push(value);
    got += value.byteLength;
    onProgress(got, total);
  }
  const out = new Uint8Array(got);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

// A safetensors file: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and [begin, end) byte offsets into the data that follows. Name -> bytes.
function readSafetensors(bytes, where) {
  if (bytes.byteLength < 8) throw new Error(`${where}: ${bytes.byteLength} bytes, too short for safetensors`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (8 + n > bytes.byteLength) throw new Error(`${where}: its header says ${n} bytes, past the end of the file`);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const data = bytes.subarray(8 + n), tensors = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const [begin, end] = t.data_offsets;
    if (!(begin <= end && end <= data.byteLength))
      throw new Error(`${where}: tensor ${name}'s bytes [${begin}, ${end}) lie outside the file's data`);
    tensors.set(name, data.subarray(begin, end));
  }
  return tensors;
}

// A scalar argument as the 32-bit words the kernel reads (kinds: i i32, u u32, f f32, w 64 bits as
// two words, low first; a 64-bit value may be a BigInt).
const wordF32 = new Float32Array(1), wordU32 = new Uint32Array(wordF32.buffer);
const argumentWords = (kinds) => [...kinds].reduce((n, k) => n + (k === "w" ? 2 : 1), 0);
function argumentWord(kind, value, name) {
  if (kind === "f") {
    wordF32[0] = Number(value);
    return [wordU32[0]];
  }
  if (kind === "w") {
    const bits = BigInt.asUintN(64, BigInt(value));
    return [Number(bits & 0xffffffffn), Number(bits >> 32n)];
  }
  if (!Number.isInteger(Number(value))) throw new Error(`variable ${name} is ${value}, not an integer`);
  const [lo, hi] = kind === "u" ? [0, 0xffffffff] : [-0x80000000, 0x7fffffff];
  if (value < lo || value > hi) throw new Error(`variable ${name} is ${value}, which a 32-bit argument does not hold`);
  return [Number(value) >>> 0];
}

// What a kernel's error word means (lazygrad's engine/realize.cpp): bit 0 an integer //, bit 1 an
// integer %, from bit 3 on its index checks, in order.
function kernelError(bits, d) {
  const name = MODEL.kernels[d.kernel].name;
  for (let i = 0; i < d.indexErrors.length; i++)
    if (bits & (1 << (3 + i))) return new Error(`${d.indexErrors[i]} (in kernel ${name})`);
  return new Error(`${bits & 1 ? "floor_divide (//)" : "remainder (%)"}: integer division by zero in kernel ${name}`);
}

class Model {
  constructor(device, adapterName, buffers, pipelines, errors) {
    this.device = device;
    this.adapterName = adapterName;  // vendor, architecture, description, as the adapter says
    this.inputs = MODEL.inputs;
    this.outputs = MODEL.outputs;
    this.variables = MODEL.variables;
    this.buffers = buffers;
    this.errors = errors;
    this.pending = Promise.resolve();  // calls run one after another: they share the buffers
    const U = GPUBufferUsage;
    // Per launch: its uniform block (the scalar arguments, then its number for the error word)
    // and its bind group, made once.
    this.launches = MODEL.dispatches.map((d, index) => {
      const kernel = MODEL.kernels[d.kernel];
      const words = argumentWords(d.kinds) + (d.errors ? 1 : 0);
      const block = words ? device.createBuffer({size: Math.ceil(words / 4) * 16, usage: U.UNIFORM | U.COPY_DST}) : null;
      if (block && !d.vars.length) device.queue.writeBuffer(block, 0, new Uint32Array([index, 0, 0, 0]));
      let next = 0;
      const entries = [...kernel.bindings].map((k, binding) => ({
        binding,
        resource: {buffer: k === "e" ? errors.word : k === "a" ? block : buffers[d.buffers[next++]]},
      }));
      const pipeline = pipelines[d.kernel];
      const group = device.createBindGroup({layout: pipeline.getBindGroupLayout(0), entries});
      // Groups along x up to the limit per dimension, then rows of them (the kernel reads both).
      const max = device.limits.maxComputeWorkgroupsPerDimension;
      const gx = Math.min(d.groups, max), gy = Math.ceil(d.groups / gx);
      if (gy > max) throw new Error(`kernel ${kernel.name}: ${d.groups} work-groups are more than one dispatch holds`);
      return {d, index, block, words, pipeline, group, gx, gy};
    });
    this.staging = MODEL.outputs.map((o) =>
      device.createBuffer({size: roundUp4(MODEL.buffers[o.buffer].bytes), usage: U.MAP_READ | U.COPY_DST}));
  }

  // Runs the function: inputs in order (an array) or by name (an object) as typed arrays of their
  // dtype (a plain array of numbers is converted), variables by name. Resolves to the outputs, in
  // order, as typed arrays (float32: Float32Array, ...).
  run(inputs = [], variables = {}) {
    const call = this.pending.then(() => this.#run(inputs, variables, null));
    this.pending = call.catch(() => {});
    return call;
  }

  // Each launch's time: the launch `repeats` times in one submission, from the submission to the
  // queue's completion, over repeats (one launch alone would measure the queue's latency, some
  // milliseconds). Then a run as run() gives the outputs. Resolves to {outputs, kernels: [{name,
  // ms}]}. For timing: a function that updates its own state adding to it would add repeats times.
  profile(inputs = [], variables = {}, repeats = 20) {
    const call = this.pending.then(async () => {
      const kernels = [];
      const outputs = await this.#run(inputs, variables, {kernels, repeats});
      return {outputs, kernels};
    });
    this.pending = call.catch(() => {});
    return call;
  }

  #writeInputs(inputs) {
    const list = Array.isArray(inputs) ? inputs : MODEL.inputs.map((i) => inputs[i.name]);
    if (list.length !== MODEL.inputs.length)
      throw new Error(`the function takes ${MODEL.inputs.length} inputs, not ${list.length}`);
    MODEL.inputs.forEach((spec, i) => {
      const Typed = TYPED[spec.dtype];
      let a = list[i];
      if (a === undefined) throw new Error(`input ${spec.name} is missing`);
      if (Array.isArray(a)) a = Typed.from(a);
      const numel = spec.shape.reduce((x, y) => x * y, 1);
      if (!(a instanceof Typed) || a.length !== numel)
        throw new Error(`input ${spec.name} must be a ${Typed.name} of ${numel} elements (shape [${spec.shape}], ` +
                        `${spec.dtype}), not a ${a.constructor.name} of ${a.length}`);
      this.device.queue.writeBuffer(this.buffers[spec.buffer], 0, padded(asBytes(a)));
    });
  }

  // Every Variable's value, checked against the range each launch that positions a read or write
  // with it allows, before any launch: as lazygrad checks them before a replay.
  #writeVariables(variables) {
    const values = MODEL.variables.map((v) => {
      const value = variables[v.name];
      if (value === undefined) throw new Error(`variable ${v.name} is missing`);
      return value;
    });
    for (const {d} of this.launches)
      for (const [i, lo, hi] of d.bounds)
        if (values[d.vars[i]] < lo || values[d.vars[i]] > hi)
          throw new Error(`kernel ${MODEL.kernels[d.kernel].name}: variable ${MODEL.variables[d.vars[i]].name} is ` +
                          `${values[d.vars[i]]}, outside the [${lo}, ${hi}] its narrow or narrow_assign allows`);
    for (const l of this.launches) {
      if (!l.d.vars.length) continue;
      const words = new Uint32Array(Math.ceil(l.words / 4) * 4);
      let at = 0;
      l.d.vars.forEach((v, i) => {
        for (const w of argumentWord(l.d.kinds[i], values[v], MODEL.variables[v].name)) words[at++] = w;
      });
      if (l.d.errors) words[at] = l.index;
      this.device.queue.writeBuffer(l.block, 0, words);
    }
  }

  async #run(inputs, variables, timings) {
    this.#writeInputs(inputs);
    this.#writeVariables(variables);
    const device = this.device;
    const dispatch = (pass, l) => {
      pass.setPipeline(l.pipeline);
      pass.setBindGroup(0, l.group);
      pass.dispatchWorkgroups(l.gx, l.gy);
    };
    if (timings) {
      for (const l of this.launches) {
        await device.queue.onSubmittedWorkDone();
        const t0 = performance.now();
        const enc = device.createCommandEncoder();
        const pass = enc.beginComputePass();
        for (let r = 0; r < timings.repeats; r++) dispatch(pass, l);
        pass.end();
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
        timings.kernels.push({name: MODEL.kernels[l.d.kernel].name, ms: (performance.now() - t0) / timings.repeats});
      }
    }
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    for (const l of this.launches) dispatch(pass, l);
    pass.end();
    MODEL.outputs.forEach((o, i) => enc.copyBufferToBuffer(this.buffers[o.buffer], 0, this.staging[i], 0, this.staging[i].size));
    if (this.errors.any) enc.copyBufferToBuffer(this.errors.word, 0, this.errors.staging, 0, 8);
    device.queue.submit([enc.finish()]);
    const reads = this.staging.map((s) => s.mapAsync(GPUMapMode.READ));
    if (this.errors.any) reads.push(this.errors.staging.mapAsync(GPUMapMode.READ));
    await Promise.all(reads);
    const outputs = MODEL.outputs.map((o, i) => {
      const bytes = new Uint8Array(this.staging[i].getMappedRange()).slice(0, MODEL.buffers[o.buffer].bytes);
      this.staging[i].unmap();
      return new TYPED[o.dtype](bytes.buffer);
    });
    if (this.errors.any) {
      const [bits, launch] = new Int32Array(this.errors.staging.getMappedRange().slice(0));
      this.errors.staging.unmap();
      if (bits) {
        device.queue.writeBuffer(this.errors.word, 0, new Int32Array([0, 0]));
        throw kernelError(bits, MODEL.dispatches[launch]);
      }
    }
    return outputs;
  }
}

// Opens the adapter and a device with the limits the kernels need, creates the buffers, fills the
// weights from the safetensors file beside this module (or `weights`, a URL), compiles the
// kernels. `onProgress(bytes, total)` follows the weights' download.
export async function load({weights = new URL(MODEL.weights, import.meta.url), onProgress = null} = {}) {
  if (!navigator.gpu)
    throw new Error("this browser has no WebGPU (navigator.gpu is missing: it needs a browser with WebGPU on, " +
                    "and a secure context: https, or http://localhost)");
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error("no WebGPU adapter");
  // The adapter's own limits (WebGPU's defaults are 8 storage buffers a kernel and 128 MiB a
  // binding), refused up front where they are below what the kernels need.
  const requiredLimits = {};
  for (const [key, need] of Object.entries(MODEL.limits)) {
    if (adapter.limits[key] < need)
      throw new Error(`the model needs ${key} ${need}, and this adapter allows ${adapter.limits[key]}`);
    requiredLimits[key] = adapter.limits[key];
  }
  const device = await adapter.requestDevice({requiredLimits});
  device.addEventListener("uncapturederror", (e) => console.error("WebGPU: " + e.error.message));
  const info = adapter.info || {};
  const adapterName = [info.vendor, info.architecture, info.description].filter((s) => s).join(" ") || "(unnamed)";
  const U = GPUBufferUsage;
  const buffers = MODEL.buffers.map((b) =>
    device.createBuffer({size: roundUp4(b.bytes), usage: U.STORAGE | U.COPY_SRC | U.COPY_DST}));
  const compiling = MODEL.kernels.map(async (k) => {
    device.pushErrorScope("validation");
    const module = device.createShaderModule({code: k.code});
    const messages = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error")
                         .map((m) => `line ${m.lineNum}:${m.linePos}: ${m.message}`);
    const type = {r: "read-only-storage", w: "storage", e: "storage", a: "uniform"};
    const entries = [...k.bindings].map((b, binding) => ({binding, visibility: GPUShaderStage.COMPUTE, buffer: {type: type[b]}}));
    let pipeline = null;
    try {
      const layout = device.createPipelineLayout({bindGroupLayouts: [device.createBindGroupLayout({entries})]});
      if (!messages.length) pipeline = await device.createComputePipelineAsync({layout, compute: {module, entryPoint: k.entry}});
    } catch (e) {
      messages.push(e.message);
    }
    const invalid = await device.popErrorScope();
    if (invalid) messages.push(invalid.message);
    if (messages.length) throw new Error(`kernel ${k.name} does not compile here:\n${messages.join("\n")}`);
    return pipeline;
  });
  const bytes = await fetchBytes(weights, onProgress);
  const tensors = readSafetensors(bytes, String(weights));
  MODEL.buffers.forEach((b, i) => {
    if (!b.weight) return;  // a buffer that starts as zeros, as a new one is
    const t = tensors.get(b.weight);
    if (!t) throw new Error(`${weights} has no tensor ${b.weight}`);
    if (t.byteLength !== b.bytes) throw new Error(`${weights}: ${b.weight} has ${t.byteLength} bytes, not ${b.bytes}`);
    device.queue.writeBuffer(buffers[i], 0, padded(t));
  });
  const pipelines = await Promise.all(compiling);
  const errors = {any: MODEL.dispatches.some((d) => d.errors),
                  word: device.createBuffer({size: 8, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST}),
                  staging: device.createBuffer({size: 8, usage: U.MAP_READ | U.COPY_DST})};
  return new Model(device, adapterName, buffers, pipelines, errors);
}
)JS";
}

const char* webgpu_default_page_html() {
  return R"HTML(<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
  body { font: 15px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 60em; padding: 0 1em; }
  pre { background: #f4f4f4; padding: 1em; overflow-x: auto; }
  button { font: inherit; padding: 0.3em 1em; }
</style>
<h1>@TITLE@</h1>
<p id="status">loading the model...</p>
<p><button id="run" disabled>run on zeros</button></p>
<pre id="out"></pre>
<script type="module">
  // A page for any exported function (lazygrad's export_webgpu): it runs the function on zeros,
  // every variable at its smallest allowed value, and shows each output's first values.
  import {load, model, TYPED} from "./model.js";
  const status = document.getElementById("status"), out = document.getElementById("out");
  const button = document.getElementById("run");
  const describe = (t) => `${t.name}: ${t.dtype} [${t.shape.join(", ")}]`;
  window.lazygrad = {ready: load({onProgress: (got, total) => {
    status.textContent = `loading the weights: ${(got / 1e6).toFixed(1)}` + (total ? ` of ${(total / 1e6).toFixed(1)}` : "") + " MB";
  }})};
  try {
    const m = await window.lazygrad.ready;
    status.textContent = `ready on ${m.adapterName}. Inputs: ${model.inputs.map(describe).join("; ") || "none"}. ` +
                         `Variables: ${model.variables.map((v) => v.name).join(", ") || "none"}. ` +
                         `Outputs: ${model.outputs.map(describe).join("; ")}.`;
    button.disabled = false;
    button.onclick = async () => {
      const inputs = model.inputs.map((i) => new TYPED[i.dtype](i.shape.reduce((a, b) => a * b, 1)));
      const variables = Object.fromEntries(model.variables.map((v) => [v.name, v.min]));
      const t0 = performance.now();
      const outputs = await m.run(inputs, variables);
      const ms = performance.now() - t0;
      out.textContent = outputs.map((o, k) => `${describe(model.outputs[k])}\n  ${Array.from(o.slice(0, 16)).join(", ")}` +
                                             (o.length > 16 ? ", ..." : "")).join("\n") + `\n\n${ms.toFixed(2)} ms`;
    };
  } catch (e) {
    status.textContent = "error: " + e.message;
  }
</script>
</html>
)HTML";
}

}  // namespace lazygrad
