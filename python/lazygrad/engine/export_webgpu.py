"""export_webgpu: a TinyJit-captured function written out as a web page that runs it with WebGPU
(docs/webgpu.md). The function must have run twice (the second call is the capture), with every
tensor it reads on the WEBGPU device:

    @TinyJit
    def classify(x):
        return model(x).softmax(-1)

    x = Tensor.zeros(1, 1, 28, 28, device="WEBGPU")
    classify(x); classify(x)
    export_webgpu(classify, "page", state_dict=get_state_dict(model))

writes page/index.html, page/model.js and page/model.safetensors. Serve the folder
(`python3 -m http.server -d page 8000`) and open http://localhost:8000/: a page opened from file://
cannot fetch its weights.
"""
from lazygrad._C import nn as _C_nn
from lazygrad.engine.jit import TinyJit


def export_webgpu(jit, dir, state_dict=None, input_names=None, output_names=None, title="lazygrad"):
    """Writes the folder; returns what it wrote ({"dispatches", "kernels", "weights", "weight_bytes",
    "buffer_bytes"}). jit: a TinyJit (or lazygrad._C.nn.Jit) called at least twice. state_dict names
    the weights in model.safetensors (others are "buffer<N>"); input_names and output_names name the
    page's run() arguments and results."""
    inner = jit._jit if isinstance(jit, TinyJit) else jit
    if inner is None:
        raise ValueError("export_webgpu: the TinyJit has not been called yet (call it twice: the second call is captured)")
    return _C_nn.export_webgpu(inner, str(dir), dict(state_dict or {}), list(input_names or []),
                               list(output_names or []), title)


__all__ = ["export_webgpu"]
