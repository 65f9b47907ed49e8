// The Fashion-MNIST page of `lazygrad export --webgpu` (export_pages.h): draw a piece of clothing on
// a canvas, and the classifier trained by `lazygrad train fashion-mnist` says what it is, with the
// ten classes' probabilities, each stroke classified in the browser with WebGPU.
#include <lazygrad/lazygrad.h>

#include <string>

#include "export_pages.h"
#include "train_step.h"

namespace lazygrad::cli {

namespace {

// The page. window.page is what a test drives: ready (resolves once the model is loaded),
// classify(pixels) (784 floats in [0, 1], row by row: the class, the logits and the probabilities)
// and show(pixels) (draws them on the canvas, then classifies them).
const char* kPage = R"HTML(<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fashion-MNIST in your browser (lazygrad, WebGPU)</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 54em; padding: 0 1em; color: #222; }
  h1 { font-size: 1.4em; margin-bottom: 0.2em; }
  .row { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
  .row > div:first-child { width: 280px; }
  canvas#draw { background: #000; border-radius: 6px; touch-action: none; cursor: crosshair; }
  canvas#seen { image-rendering: pixelated; width: 84px; height: 84px; border: 1px solid #ccc; }
  button { font: inherit; padding: 0.3em 1em; margin-top: 0.6em; }
  table { border-collapse: collapse; }
  td { padding: 0.15em 0.4em; white-space: nowrap; }
  td.bar { width: 16em; }
  .bar div { height: 1em; background: #4a7bd0; border-radius: 3px; }
  tr.top td { font-weight: 600; }
  #answer { font-size: 1.3em; margin: 0.3em 0; min-height: 1.4em; }
  #status { color: #666; }
</style>
<h1>What is it? A Fashion-MNIST classifier running in this page</h1>
<p id="status">loading the model...</p>
<div class="row">
  <div>
    <canvas id="draw" width="280" height="280"></canvas><br>
    <button id="clear">clear</button>
    <p>Draw in white on black, large, as the data set's 28 &times; 28 pictures are.</p>
  </div>
  <div>
    <div id="answer"></div>
    <table id="classes"></table>
    <p>What the model sees: <canvas id="seen" width="28" height="28"></canvas></p>
    <p id="timing"></p>
  </div>
</div>
<script type="module">
  import {load, model} from "./model.js";
  const CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];
  const status = document.getElementById("status"), answer = document.getElementById("answer");
  const draw = document.getElementById("draw"), seen = document.getElementById("seen");
  const drawCtx = draw.getContext("2d"), seenCtx = seen.getContext("2d", {willReadFrequently: true});
  const table = document.getElementById("classes");
  const rows = CLASSES.map((name) => {
    const tr = table.insertRow();
    tr.insertCell().textContent = name;
    const bar = tr.insertCell();
    bar.className = "bar";
    bar.appendChild(document.createElement("div")).style.width = "0%";
    const value = tr.insertCell();
    return {tr, bar: bar.firstChild, value};
  });

  function clear() {
    drawCtx.fillStyle = "#000";
    drawCtx.fillRect(0, 0, draw.width, draw.height);
  }
  clear();

  // The canvas as the model takes it: 28 x 28 grey levels in [0, 1] (the data set's pixels / 255).
  function pixelsOfCanvas() {
    seenCtx.imageSmoothingEnabled = true;
    seenCtx.imageSmoothingQuality = "high";
    seenCtx.drawImage(draw, 0, 0, 28, 28);
    const rgba = seenCtx.getImageData(0, 0, 28, 28).data, pixels = new Float32Array(784);
    for (let i = 0; i < 784; i++) pixels[i] = rgba[4 * i] / 255;
    return pixels;
  }
  // Pixels (784 in [0, 1]) drawn on both canvases, large and as the model sees them.
  function drawPixels(pixels) {
    const image = seenCtx.createImageData(28, 28);
    for (let i = 0; i < 784; i++) {
      const v = Math.round(pixels[i] * 255);
      image.data.set([v, v, v, 255], 4 * i);
    }
    seenCtx.putImageData(image, 0, 0);
    drawCtx.imageSmoothingEnabled = false;
    drawCtx.drawImage(seen, 0, 0, draw.width, draw.height);
  }

  let classifier = null;
  async function classify(pixels) {
    const m = await ready;
    const t0 = performance.now();
    const [logits, probabilities] = await m.run([pixels]);
    const ms = performance.now() - t0;
    let best = 0;
    for (let k = 1; k < logits.length; k++) if (logits[k] > logits[best]) best = k;
    rows.forEach((r, k) => {
      r.bar.style.width = (100 * probabilities[k]).toFixed(1) + "%";
      r.value.textContent = (100 * probabilities[k]).toFixed(1) + "%";
      r.tr.className = k === best ? "top" : "";
    });
    answer.textContent = `${CLASSES[best]} (${(100 * probabilities[best]).toFixed(1)}%)`;
    document.getElementById("timing").textContent = `${ms.toFixed(1)} ms for this image (${model.dispatches.length} kernel launches)`;
    return {label: best, logits: Array.from(logits), probabilities: Array.from(probabilities)};
  }

  // Drawing: white strokes, classified as they are drawn (one at a time: a stroke's newest state).
  let drawing = false, last = null, queued = false;
  function stroke(e) {
    const r = draw.getBoundingClientRect(), p = [(e.clientX - r.left) * draw.width / r.width, (e.clientY - r.top) * draw.height / r.height];
    drawCtx.strokeStyle = "#fff";
    drawCtx.lineWidth = 22;
    drawCtx.lineCap = drawCtx.lineJoin = "round";
    drawCtx.beginPath();
    drawCtx.moveTo(...(last || p));
    drawCtx.lineTo(...p);
    drawCtx.stroke();
    last = p;
    if (!queued) {
      queued = true;
      requestAnimationFrame(async () => {
        queued = false;
        await classify(pixelsOfCanvas());
      });
    }
  }
  draw.addEventListener("pointerdown", (e) => { drawing = true; last = null; draw.setPointerCapture(e.pointerId); stroke(e); });
  draw.addEventListener("pointermove", (e) => { if (drawing) stroke(e); });
  draw.addEventListener("pointerup", () => { drawing = false; });
  document.getElementById("clear").onclick = () => { clear(); classify(pixelsOfCanvas()); };

  const ready = load({onProgress: (got, total) => {
    status.textContent = `loading the weights: ${(got / 1e6).toFixed(2)}` + (total ? ` of ${(total / 1e6).toFixed(2)}` : "") + " MB";
  }});
  window.page = {ready, classify, show: (pixels) => { drawPixels(pixels); return classify(pixels); }};
  ready.then((m) => { status.textContent = `Ready: the model runs with WebGPU on ${m.adapterName}.`; },
             (e) => { status.textContent = "error: " + e.message; });
</script>
</html>
)HTML";

}  // namespace

WebGpuExportSummary export_fashion_mnist_page(const std::string& checkpoint, const std::string& out_dir) {
  const SafetensorsMetadata meta = load_safetensors_metadata(checkpoint);
  const auto kind = meta.find("model");
  if (kind == meta.end() || (kind->second != "mlp" && kind->second != "cnn"))
    throw Error(checkpoint + ": not a checkpoint of `lazygrad train fashion-mnist` (its metadata has no " +
                "\"model\": \"mlp\" or \"cnn\")");
  // Built and loaded on the CPU (the initialization draws random numbers, which WGSL cannot), then
  // moved: the function is captured on WEBGPU, as export_webgpu needs.
  std::shared_ptr<nn::Module> model = make_model(kind->second);
  model->load_state_dict(load_safetensors(checkpoint));
  model->eval();
  model->to("WEBGPU");
  NoGrad no_grad;
  Jit classify([&](const std::vector<Tensor>& in) {
    Tensor logits = (*model)(in[0]);
    return std::vector<Tensor>{logits, logits.softmax(-1)};
  });
  const Tensor image = Tensor::zeros({1, 1, 28, 28}, kFloat32, "WEBGPU");
  classify({image});
  classify({image});  // captured
  WebGpuExportOptions options;
  options.names = model->state_dict();
  options.input_names = {"image"};
  options.output_names = {"logits", "probabilities"};
  options.index_html = kPage;
  return export_webgpu(classify, out_dir, options);
}

}  // namespace lazygrad::cli
