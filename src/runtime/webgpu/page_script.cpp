// The script (an expression) the WebGPU device installs in its Chromium page (webgpu_device.cpp):
// `globalThis.lg`, which holds the GPUDevice, the buffers (by the ids the C++ side hands out) and the
// pipelines (by program id). The C++ side calls its functions through Runtime.evaluate; calls that need no
// answer (free, write, run) are queued on the C++ side and sent together with the next one that does.
#include "runtime/webgpu/page_script.h"

namespace lazygrad::webgpu {

const char* page_script() {
  return R"JS(
globalThis.lg = (() => {
  let device = null, errors = null, firstError = "", lost = "";
  const buffers = new Map(), pipelines = new Map();
  const U = GPUBufferUsage;
  const fromBase64 = (s) => Uint8Array.fromBase64 ? Uint8Array.fromBase64(s)
                                                  : Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const toBase64 = (u8) => {
    if (u8.toBase64) return u8.toBase64();
    let s = "";
    for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
    return btoa(s);
  };
  // A validation error WebGPU reports outside an error scope (a bad binding in a queued launch):
  // kept, and thrown by the next call that answers.
  const check = () => {
    if (!firstError) return;
    const e = firstError;
    firstError = "";
    throw new Error(e);
  };
  const buffer = (id) => {
    const b = buffers.get(id);
    if (!b) throw new Error("no buffer " + id);
    return b;
  };

  // The adapter (the one --use-webgpu-adapter picks) and a device with the adapter's own limits
  // where they are above WebGPU's defaults: storage buffers per kernel, the size of a binding and of
  // a buffer (128 MiB and 256 MiB by default, too small for a model's weights).
  async function init() {
    if (!navigator.gpu) return {error: "navigator.gpu is missing (WebGPU is off in this browser)"};
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return {error: "no WebGPU adapter"};
    const want = ["maxStorageBuffersPerShaderStage", "maxStorageBufferBindingSize", "maxBufferSize",
                  "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX",
                  "maxComputeWorkgroupsPerDimension", "maxComputeWorkgroupStorageSize"];
    const requiredLimits = {};
    for (const k of want) requiredLimits[k] = adapter.limits[k];
    device = await adapter.requestDevice({requiredLimits});
    device.addEventListener("uncapturederror", (e) => { if (!firstError) firstError = e.error.message; });
    // A lost device (the GPU process died: a driver crash, a shader the compiler gave up on) does
    // not come back, and its buffers are gone: every later call says so.
    device.lost.then((info) => {
      lost = "the WebGPU device was lost (" + (info.message || info.reason) +
             "); its buffers are gone, and WEBGPU cannot run more kernels in this process";
    });
    errors = device.createBuffer({size: 8, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST});
    const limits = {};
    for (const k of want) limits[k] = device.limits[k];
    const i = adapter.info || {};
    return {limits, adapter: [i.vendor, i.architecture, i.device, i.description].filter((s) => s).join(" "),
            subnormals: await keepsSubnormals()};
  }

  // Whether f32 arithmetic keeps subnormal values: 2^-126 * 2^-3 is 2^-129 there, 0 where the
  // adapter flushes them.
  async function keepsSubnormals() {
    const code = `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(1) fn k() { x[1] = x[0] * 0.125f; }`;
    const p = await device.createComputePipelineAsync({layout: "auto", compute: {module: device.createShaderModule({code}), entryPoint: "k"}});
    const b = device.createBuffer({size: 8, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST});
    device.queue.writeBuffer(b, 0, new Float32Array([1.1754943508222875e-38, 0]));
    dispatch(p, [b], 1, 1);
    const out = new Float32Array((await readBytes(b, 8)).buffer);
    b.destroy();
    return out[1] !== 0;
  }

  async function alloc(id, size) {
    device.pushErrorScope("out-of-memory");
    device.pushErrorScope("validation");
    const b = device.createBuffer({size, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST});
    const invalid = await device.popErrorScope(), oom = await device.popErrorScope();
    if (invalid || oom) {
      b.destroy();
      return (invalid || oom).message;
    }
    buffers.set(id, b);
    return "";
  }
  function free(id) {
    buffer(id).destroy();
    buffers.delete(id);
  }
  // Bytes at a byte offset (both multiples of 4 but the last piece, which is padded).
  function write(id, offset, b64) {
    let bytes = fromBase64(b64);
    if (bytes.length % 4) {
      const padded = new Uint8Array((bytes.length + 3) & ~3);
      padded.set(bytes);
      bytes = padded;
    }
    device.queue.writeBuffer(buffer(id), offset, bytes);
  }
  async function readBytes(b, n, offset = 0) {
    const size = (n + 3) & ~3;
    const staging = device.createBuffer({size, usage: U.MAP_READ | U.COPY_DST});
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(b, offset, staging, 0, size);
    device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Uint8Array(staging.getMappedRange()).slice(0, n);
    staging.destroy();
    return out;
  }
  async function read(id, offset, n) {
    const out = await readBytes(buffer(id), n, offset);
    check();
    return toBase64(out);
  }

  // A kernel's pipeline, with its bindings' layout spelled out (kinds: r read, w written, e the
  // error word, a the arguments' uniform block): "auto" would leave out a binding the code does not
  // use. The compiler's messages, or "" when it compiled.
  async function compile(pid, code, entry, kinds) {
    // In an error scope: a shader that does not compile must not leave an uncaptured error behind
    // for the next call to throw.
    device.pushErrorScope("validation");
    const module = device.createShaderModule({code});
    const info = await module.getCompilationInfo();
    const messages = info.messages.filter((m) => m.type === "error")
                         .map((m) => `line ${m.lineNum}:${m.linePos}: ${m.message}`);
    const type = {r: "read-only-storage", w: "storage", e: "storage", a: "uniform"};
    const entries = [...kinds].map((k, binding) => ({binding, visibility: GPUShaderStage.COMPUTE,
                                                      buffer: {type: type[k]}}));
    try {
      if (!messages.length) {
        const layout = device.createPipelineLayout({bindGroupLayouts: [device.createBindGroupLayout({entries})]});
        pipelines.set(pid, await device.createComputePipelineAsync({layout, compute: {module, entryPoint: entry}}));
      }
    } catch (e) {
      messages.push(e.message);
    }
    const invalid = await device.popErrorScope();
    if (invalid && !messages.length) messages.push(invalid.message);
    return messages.join("\n");
  }
  function release(pid) { pipelines.delete(pid); }

  function dispatch(p, bound, gx, gy) {
    const entries = bound.map((b, binding) => ({binding, resource: {buffer: b}}));
    const group = device.createBindGroup({layout: p.getBindGroupLayout(0), entries});
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(p);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(gx, gy);
    pass.end();
    device.queue.submit([enc.finish()]);
  }
  // A launch: buffer ids in binding order (-1: the error word), the arguments' words (u32) when the
  // kernel has them, and the grid.
  function run(pid, ids, args, gx, gy) {
    const p = pipelines.get(pid);
    if (!p) throw new Error("no program " + pid);
    const bound = ids.map((id) => id === -1 ? errors : buffer(id));
    let block = null;
    if (args.length) {
      const words = new Uint32Array((args.length + 3) & ~3);
      words.set(args);
      block = device.createBuffer({size: words.byteLength, usage: U.UNIFORM | U.COPY_DST});
      device.queue.writeBuffer(block, 0, words);
      bound.push(block);
    }
    dispatch(p, bound, gx, gy);
    if (block) block.destroy();  // freed once the queued launch is done with it
  }
  // A launch timed from its submission to the queue's completion (DEBUG=2, BEAM): seconds.
  async function timed(pid, ids, args, gx, gy) {
    await device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    run(pid, ids, args, gx, gy);
    await device.queue.onSubmittedWorkDone();
    check();
    return (performance.now() - t0) / 1000;
  }
  // Waits for the queue; the first failing launch's error word and number since the last call.
  async function sync() {
    await device.queue.onSubmittedWorkDone();
    const words = new Int32Array((await readBytes(errors, 8)).buffer);
    if (words[0]) device.queue.writeBuffer(errors, 0, new Int32Array([0, 0]));
    check();
    return [words[0], words[1]];
  }
  // The calls that answer, failing with the loss's reason once the device is lost (the call that
  // meets it first may see only "Instance dropped": the loss is reported a moment later).
  const guarded = (fn) => async (...args) => {
    if (lost) throw new Error(lost);
    try {
      return await fn(...args);
    } catch (e) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      throw new Error(lost ? lost + ": " + e.message : e.message);
    }
  };
  return {init, alloc: guarded(alloc), free, write, read: guarded(read), compile: guarded(compile), release,
          run, timed: guarded(timed), sync: guarded(sync)};
})()
)JS";
}

}  // namespace lazygrad::webgpu
