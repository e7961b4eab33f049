"""What recording costs on real library architectures: one table, plain vs recorded, measured in the same run.

The models are built by their own libraries from small configurations with random weights (nothing is
downloaded, no torchvision): ``transformers``' BERT, GPT-2, ViT and ResNet (PyTorch);
``keras.applications`` MobileNetV2 and ResNet50 (``weights=None``, 32×32 inputs), the keras.io "Text
classification with Transformer" model and a Keras LSTM classifier (TensorFlow). One step is a whole
training step, as a learner writes it: forward, loss, backward (``loss.backward()`` /
``tape.gradient``) and the optimizer's update (``opt.step()`` / ``apply_gradients``).

Columns (CPU seconds of the process, the fastest of interleaved repeats — the machine is shared, and CPU time
is what other jobs disturb least —, each model in a process of its own (:func:`row_fresh`), its plain and recorded
steps in the same one, so every ratio compares two numbers of one run):

* ``plain`` / ``recorded`` — the step alone and the step inside ``adv.torch.record()`` /
  ``adv.tf.record()`` (a fresh recording per step); ``ratio`` = recorded ÷ plain (target ≤ 1.3).
* ``back to back`` — the same ratio with the steps run one after the other, as in a training loop, without
  the garbage collection before each timed step (see :func:`_fastest`).
* ``ops`` — records in one step's recording; ``µs/op`` = (recorded − plain) ÷ ops: everything the
  recording adds to the step, spread over its records. The cost of one recorded op alone is the second
  table: a chain of small elementwise ops, plain vs recorded, in a fresh process (targets ≤ 15 µs PyTorch, ≤ 40 µs
  TensorFlow).
* ``trace`` — ``rec.trace(loss, model)`` of one recorded step (s), with putting back the values a TensorFlow
  recording let go of (the first question asked of it does that, once); ``JSON`` — its ``to_json()`` size.
* ``peak MB`` — the step's peak resident memory above the memory before it (freed memory handed back
  first, the high-water mark reset: see :func:`peak_above`), plain / recorded (the recording kept
  alive), and their ratio (target ≤ 1.3): the medians of ``--memory-runs`` interleaved steps in a fresh
  process per model whose resident size follows its live tensors (:func:`memory_fresh`): the tiny models' peaks
  are a few MB, which what a process ran before moves. ``graph kept`` — a plain PyTorch step whose
  ``backward(retain_graph=True)`` keeps its graph, as a recording keeps it for the trace, ÷ the plain step: what
  keeping the graph alone costs.
* ``exact_values=False: time | peak`` — the same ratios of a step recorded with ``record(exact_values=False)``,
  which puts memory before time: values from 4,096 entries and what autograd saved inside an op are let go of
  and computed again when a trace reads them (PyTorch only).
* ``everything kept: time | peak | rec.trace s`` — a step recorded with the option that keeps every value:
  PyTorch's ``record(rerun_models=False)``, which keeps every op of a library model's call (by default the
  model's call, from its second one, when its values outweigh its weights, is kept as its boundary and run
  again by the trace: ``autodiff_viz/torch/rerun.py``; the warm-up steps before the timed ones make those
  calls); TensorFlow's ``record(keep_values=True)``, which holds every value the ops made (by default a value
  nobody else holds is freed as in a plain step and computed again when the recording is first read:
  ``autodiff_viz/tf/letgo.py``).

A second table times ``rec.trace`` at 1×, 2× and 4× depth (BERT layers, ResNet stages, keras.io
transformer blocks): linear in depth means the 4× row costs about four times the 1× row.

    python benchmarks/real_models.py                  # every model (about 3 minutes on 2 cores)
    python benchmarks/real_models.py --models bert,lstm --repeats 5
    python benchmarks/real_models.py --no-depth       # skip the depth table
    python benchmarks/real_models.py --models resnet --no-depth --memory-sides 32,112,224
    python benchmarks/real_models.py --memory-of vit --memory-runs 9    # one model's peaks, as JSON
"""
from __future__ import annotations

import os

# One BLAS thread, set before numpy loads: on a shared machine, BLAS and intra-op
# thread pools fighting for the cores make every figure (plain and recorded alike) many times slower and noisy.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):      # numpy's BLAS; torch: set_num_threads(1) below
    os.environ.setdefault(_var, "1")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_LIBC = ctypes.CDLL("libc.so.6")
# CPU time of this process (every thread), not wall time: on a machine shared with other jobs, wall time
# counts the moments the scheduler gives our cores away, which no repeat count averages out.
_clock = time.process_time


# ---------------------------------------------------------------------------
# PyTorch models (transformers, tiny configurations)
# ---------------------------------------------------------------------------
def torch_model(kind: str, depth: int = 1, side: int = 32):
    """``(model, inputs dict, optimizer)`` of a transformers architecture with random weights, ready for a step;
    ``side``: ResNet's image size."""
    import torch
    import transformers as hf
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if kind == "bert":
        cfg = hf.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2 * depth, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=64, num_labels=3)
        model = hf.BertForSequenceClassification(cfg)
        inputs = {"input_ids": torch.randint(0, 512, (8, 32), generator=g),
                  "labels": torch.randint(0, 3, (8,), generator=g)}
    elif kind == "gpt2":
        cfg = hf.GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2 * depth, n_head=4)
        model = hf.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, 512, (8, 32), generator=g)
        inputs = {"input_ids": ids, "labels": ids}
    elif kind == "vit":
        cfg = hf.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                           num_hidden_layers=2 * depth, num_attention_heads=4, intermediate_size=128, num_labels=10)
        model = hf.ViTForImageClassification(cfg)
        inputs = {"pixel_values": torch.randn(8, 3, 32, 32, generator=g),
                  "labels": torch.randint(0, 10, (8,), generator=g)}
    elif kind == "resnet":      # ResNet-18's shape: basic blocks, [2, 2, 2, 2], 64…512 channels
        cfg = hf.ResNetConfig(num_channels=3, embedding_size=64, hidden_sizes=[64, 128, 256, 512],
                              depths=[2 * depth] * 4, layer_type="basic", num_labels=10)
        model = hf.ResNetForImageClassification(cfg)
        inputs = {"pixel_values": torch.randn(8, 3, side, side, generator=g),
                  "labels": torch.randint(0, 10, (8,), generator=g)}
    else:
        raise ValueError(kind)
    model.train()
    return model, inputs, torch.optim.AdamW(model.parameters(), lr=1e-3)


def torch_step(model, inputs, opt, retain_graph=False):
    """One whole training step; returns the loss. ``retain_graph``: the backward pass keeps its graph."""
    opt.zero_grad(set_to_none=True)
    loss = model(**inputs).loss
    loss.backward(retain_graph=retain_graph)
    opt.step()
    return loss


# ---------------------------------------------------------------------------
# Keras models
# ---------------------------------------------------------------------------
def keras_transformer(blocks: int = 1, maxlen: int = 32, vocab: int = 1000, embed: int = 32):
    """The keras.io "Text classification with Transformer" model (its TransformerBlock and
    TokenAndPositionEmbedding, smaller sizes), ``blocks`` blocks deep."""
    import keras
    from keras import layers, ops

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = layers.Dropout(rate)
            self.dropout2 = layers.Dropout(rate)

        def call(self, inputs, training=False):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output, training=training)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output, training=training)
            return self.layernorm2(out1 + ffn_output)

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            maxlen = ops.shape(x)[-1]
            positions = ops.arange(start=0, stop=maxlen, step=1)
            positions = self.pos_emb(positions)
            x = self.token_emb(x)
            return x + positions

    inputs = layers.Input(shape=(maxlen,))
    x = TokenAndPositionEmbedding(maxlen, vocab, embed)(inputs)
    for _ in range(blocks):
        x = TransformerBlock(embed, 2, 32)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def tf_model(kind: str, depth: int = 1):
    """``(model, x, y, loss_fn, optimizer)`` of a Keras architecture with random weights."""
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=False)
    if kind == "mobilenetv2":
        model = keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)
        x, y = rng.normal(size=(8, 32, 32, 3)), rng.integers(0, 10, size=8)
    elif kind == "resnet50":
        model = keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
        x, y = rng.normal(size=(8, 32, 32, 3)), rng.integers(0, 10, size=8)
    elif kind == "kerasio":
        model = keras_transformer(depth)
        x, y = rng.integers(0, 1000, size=(8, 32)), rng.integers(0, 2, size=8)
    elif kind == "lstm":
        model = keras.Sequential([keras.Input((20,)), keras.layers.Embedding(1000, 32), keras.layers.LSTM(32),
                                  keras.layers.Dense(2, activation="softmax")])
        x, y = rng.integers(0, 1000, size=(8, 20)), rng.integers(0, 2, size=8)
    else:
        raise ValueError(kind)
    x = tf.constant(x.astype("float32" if x.dtype.kind == "f" else "int32"))
    return model, x, tf.constant(y), sparse, keras.optimizers.Adam(1e-3)


def tf_step(model, x, y, loss_fn, opt):
    import tensorflow as tf
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


TORCH = ("bert", "gpt2", "vit", "resnet")
TF = ("mobilenetv2", "resnet50", "kerasio", "lstm")
#: each recorder's option that keeps every value the step made, for the ``everything kept`` columns
KEEP_ALL = {"torch": {"rerun_models": False}, "tf": {"keep_values": True}}


def build(kind, depth=1):
    """``(framework, step function, model)``: the step is a closure over the model's data and optimizer."""
    if kind in TORCH:
        model, inputs, opt = torch_model(kind, depth)
        return "torch", (lambda: torch_step(model, inputs, opt)), model
    model, x, y, loss_fn, opt = tf_model(kind, depth)
    return "tf", (lambda: tf_step(model, x, y, loss_fn, opt)), model


def recorder(framework):
    import autodiff_viz as adv
    return adv.torch.record if framework == "torch" else adv.tf.record


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------
def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def peak_above(fn) -> tuple:
    """``(peak resident bytes above the start while fn runs, fn's result)``.

    Freed memory is first handed back to the system (``malloc_trim``), then Linux's high-water mark of the
    process is reset (``/proc/self/clear_refs``), so the peak is the step's own, whatever ran before.
    """
    gc.collect()
    _LIBC.malloc_trim(0)
    start = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    out = fn()
    return max(_status("VmHWM") - start, 1), out


def _fastest(step, recorded, repeats, collect) -> tuple:
    """The fastest plain and recorded step (CPU seconds) of ``repeats`` interleaved pairs.

    ``collect``: a full garbage collection before each step, so no collection of the setup's objects lands in a
    timed step. It also leaves the caches cold (it walks every object of the process: a plain ViT-tiny step
    takes 4.9 ms after one and 3.0 ms without), which hides part of what the recorder's Python costs. Without
    it, the steps run back to back, as in a training loop.
    """
    plain, rec_t = [], []
    for _ in range(repeats):
        if collect:
            gc.collect()
        t0 = _clock()
        step()
        plain.append(_clock() - t0)
        if collect:
            gc.collect()
        t0 = _clock()
        rec = recorded()
        rec_t.append(_clock() - t0)
        del rec
    return min(plain), min(rec_t)


def recorded_step(framework: str, step, **options):
    """``step`` inside a fresh recording (``record(**options)``): returns ``(recording, loss)``, for the caller to
    keep alive or drop."""
    record = recorder(framework)

    def recorded():
        with record(**options) as rec:
            loss = step()
        return rec, loss
    return recorded


def memory_of(kind: str, runs: int) -> dict:
    """The median peaks (bytes, :func:`peak_above`) of ``runs`` interleaved steps of each kind — ``plain``,
    ``recorded`` and, for PyTorch, ``kept`` (the graph kept by ``retain_graph=True``, no recording), ``lean``
    (recorded with ``exact_values=False``) — and ``whole`` (``rerun_models=False``; TensorFlow:
    ``keep_values=True``) — in this process, after two of each."""
    if kind in TORCH:
        model, inputs, opt = torch_model(kind)
        step = functools.partial(torch_step, model, inputs, opt)
        steps = {"plain": step, "recorded": recorded_step("torch", step),
                 "kept": functools.partial(torch_step, model, inputs, opt, retain_graph=True),
                 "lean": recorded_step("torch", step, exact_values=False),
                 "whole": recorded_step("torch", step, **KEEP_ALL["torch"])}
    else:
        framework, step, _model = build(kind)
        steps = {"plain": step, "recorded": recorded_step(framework, step),
                 "whole": recorded_step(framework, step, **KEEP_ALL[framework])}
    return median_peaks(steps, runs)


def median_peaks(steps: dict, runs: int) -> dict:
    """``{name: median peak (bytes, :func:`peak_above`)}`` of ``runs`` interleaved calls of each of ``steps``,
    after two of each; what a call returns is dropped before the next one is measured."""
    for fn in steps.values():
        fn()
        fn()
    peaks: dict = {k: [] for k in steps}
    for _ in range(runs):
        for k, fn in steps.items():
            m, held = peak_above(fn)
            peaks[k].append(m)
            del held
    return {k: statistics.median(v) for k, v in peaks.items()}


def memory_fresh(kind: str, runs: int) -> dict:
    """:func:`memory_of` in a new Python process (``--memory-of``): nothing this one ran before moves the peaks.

    Its C library hands every block of 64 KB or more back to the system when it is freed
    (``MALLOC_MMAP_THRESHOLD_``): by default glibc raises that threshold as large blocks come and go, so what the
    resident size counts of a freed tensor depended on what ran before, and a ResNet-18 step's peak moved by half
    from run to run. With it fixed, the resident size follows the live tensors."""
    return _fresh("--memory-of", kind, "--memory-runs", str(runs), env={"MALLOC_MMAP_THRESHOLD_": "65536"})


def row_fresh(kind: str, repeats: int, memory_runs: int) -> dict:
    """:func:`measure` in a new Python process (``--row-of``): a model's steps run in a process no other model ran in.

    A step's time includes the page faults of the memory it takes from the system, and how many there are depends
    on what the C library kept from before: by default glibc moves the size above which a block is mapped anew as
    blocks come and go. One ResNet-18 step took 9,184 page faults or 18,336 (8 to 31 ms of system time) depending on
    what the process had run, and the table's ResNet-18 row, measured after the two Keras models in one process,
    gave 1.34× in one run and 1.16× in the next. The plain and recorded steps of one row still share a process:
    each ratio compares two numbers of one run."""
    return _fresh("--row-of", kind, "--repeats", str(repeats), "--memory-runs", str(memory_runs))


def _fresh(*args, env=None):
    """What this script prints last, as JSON, when run in a new Python process with ``args`` (and ``env`` added to
    the environment)."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, **(env or {})})
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(kind, repeats, memory_runs=7):
    """One row of the cost table."""
    framework, step, model = build(kind)
    recorded = recorded_step(framework, step)
    for _ in range(2):
        step()
        recorded()
    p, r = _fastest(step, recorded, repeats, collect=True)
    warm_p, warm_r = _fastest(step, recorded, repeats, collect=False)
    rec, loss = recorded()
    t0 = _clock()
    n_ops = len(rec)          # reading the records puts back the values a TensorFlow recording let go of
    settle = _clock() - t0
    traces = []
    for _ in range(2):
        t0 = _clock()
        trace = rec.trace(loss, model)
        traces.append(_clock() - t0)
    size = len(trace.to_json())
    del rec, loss, trace
    lean = None
    if framework == "torch":
        lean = _ratio(step, recorded_step(framework, step, exact_values=False), repeats)   # memory before time
    whole_step = recorded_step(framework, step, **KEEP_ALL[framework])
    whole = _ratio(step, whole_step, repeats)
    rec, loss = whole_step()
    t0 = _clock()
    rec.trace(loss, model)
    whole_trace = _clock() - t0
    del rec, loss
    mem = memory_fresh(kind, memory_runs)
    mem_plain, mem_rec = mem["plain"], mem["recorded"]
    return {"model": kind, "framework": framework, "plain_ms": p * 1e3, "recorded_ms": r * 1e3, "ratio": r / p,
            "warm_ratio": warm_r / warm_p, "ops": n_ops, "us_per_op": (r - p) / max(n_ops, 1) * 1e6,
            "trace_s": settle + min(traces),
            "json_mb": size / 1e6, "mem_plain_mb": mem_plain / 1e6, "mem_rec_mb": mem_rec / 1e6,
            "mem_ratio": mem_rec / mem_plain, "kept_ratio": mem["kept"] / mem_plain if "kept" in mem else None,
            "lean_ratio": lean, "lean_mem_ratio": mem["lean"] / mem_plain if "lean" in mem else None,
            "whole_ratio": whole, "whole_mem_ratio": mem["whole"] / mem_plain if "whole" in mem else None,
            "whole_trace_s": whole_trace}


def _ratio(step, recorded, repeats) -> float:
    """The fastest ``recorded`` step ÷ the fastest plain ``step`` (:func:`_fastest`), after one of it."""
    recorded()
    p, r = _fastest(step, recorded, repeats, collect=True)
    return r / p


def per_op(framework, links=100, repeats=30):
    """µs per recorded op over the plain op: a chain of ``2 × links`` small elementwise ops (16 numbers), then a sum.

    Small tensors, so the figure is what the recording adds to one op, not the arithmetic.
    """
    if framework == "torch":
        import torch
        x, a = torch.randn(16, requires_grad=True), torch.randn(16)

        def chain():
            h = x
            for _ in range(links):
                h = torch.tanh(h * a)
            return h.sum()
    else:
        import tensorflow as tf
        x, a = tf.Variable(tf.random.normal((16,))), tf.random.normal((16,))

        def chain():
            with tf.GradientTape():
                h = x * 1.0
                for _ in range(links):
                    h = tf.tanh(h * a)
                return tf.reduce_sum(h)
    record = recorder(framework)

    def recorded():
        with record() as rec:
            chain()
        return len(rec)

    n = recorded()
    plain, rec_t = [], []
    for _ in range(repeats):
        t0 = _clock()
        chain()
        plain.append(_clock() - t0)
        t0 = _clock()
        recorded()
        rec_t.append(_clock() - t0)
    return min(plain) / n * 1e6, (min(rec_t) - min(plain)) / n * 1e6, n


def per_op_fresh(framework) -> tuple:
    """:func:`per_op` in a new Python process (``--per-op``): the chain's ops are a few microseconds each, and in
    this process every garbage collection also walks the models measured before (a recorded op makes more
    objects than a plain one, so it pays more of those walks): TensorFlow's figure was 47.9 µs after the models
    and 26 to 27 µs in a new process, the same code, in one session."""
    return tuple(_fresh("--per-op", framework))


def depth_row(kind, depths=(1, 2, 4)):
    """``rec.trace`` seconds and recorded op counts at each depth."""
    out = {"model": kind}
    for d in depths:
        framework, step, model = build(kind, d)
        record = recorder(framework)
        step()
        with record() as rec:
            loss = step()
        t = []
        for _ in range(2):
            t0 = _clock()
            rec.trace(loss, model)
            t.append(_clock() - t0)
        out[d] = (min(t), len(rec))
        del rec, loss, model
        gc.collect()
    return out


def memory_row(side: int) -> dict:
    """ResNet-18 (batch 8, ``side``×``side`` images): the step's peak plain and recorded, and what the recording
    holds when the step is over — the copies of the parameters ``opt.step()`` wrote (kept so a trace shows, and
    autograd can differentiate, the values of the backward pass) and the tensors its ops read and made (kept by
    reference; a plain step frees them during ``backward``)."""
    import torch
    model, inputs, opt = torch_model("resnet", 1, side)
    record = recorder("torch")

    def recorded():
        with record() as rec:
            torch_step(model, inputs, opt)
        return rec

    torch_step(model, inputs, opt)
    recorded()
    plain, rec_mb = [], []
    for _ in range(3):
        plain.append(peak_above(lambda: torch_step(model, inputs, opt))[0])
        m, rec = peak_above(recorded)
        rec_mb.append(m)
    copies = sum(v.numel() * v.element_size() for _k, _t, _v, v in rec._saved if isinstance(v, torch.Tensor))
    kept = sum(g.numel() * g.element_size() for c in rec._captures.values() for g in c.gradients().values()
               if not any(g is p.grad for p in model.parameters()))
    storages = {}
    for op in rec.ops:
        for t in op.inputs + op.outputs:
            if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter) and t.device.type == "cpu":
                storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return {"side": side, "plain": statistics.median(plain) / 1e6, "recorded": statistics.median(rec_mb) / 1e6,
            "copies": copies / 1e6, "kept": sum(storages.values()) / 1e6, "grads": kept / 1e6,
            "params": sum(p.numel() * p.element_size() for p in model.parameters()) / 1e6}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(TORCH + TF))
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--no-depth", action="store_true")
    p.add_argument("--depth-models", default="bert,resnet,kerasio")
    p.add_argument("--memory-runs", type=int, default=7, help="steps of each kind whose peaks' median is shown")
    p.add_argument("--memory-of", default="", help=argparse.SUPPRESS)     # memory_fresh's child process
    p.add_argument("--row-of", default="", help=argparse.SUPPRESS)        # row_fresh's child process
    p.add_argument("--per-op", default="", help=argparse.SUPPRESS)        # per_op_fresh's child process
    p.add_argument("--memory-sides", default="",
                   help="ResNet-18's memory at these image sizes, e.g. 32,112,224 (a third table)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    import autodiff_viz  # noqa: F401
    kinds = [k for k in (args.memory_of or args.row_of or args.models).split(",") if k]
    if args.per_op == "torch" or any(k in TORCH for k in kinds):
        import torch
        torch.set_num_threads(1)
    if args.memory_of:
        print(json.dumps(memory_of(args.memory_of, args.memory_runs)))
        return 0
    if args.per_op:
        print(json.dumps(per_op(args.per_op)))
        return 0
    if args.row_of:
        print(json.dumps(measure(args.row_of, args.repeats, args.memory_runs)))
        return 0
    # TensorFlow keeps its own thread pools: with one inter-op thread its eager ops run slower, not steadier
    print("| model | plain ms | recorded ms | ratio | back to back | ops | µs/op | rec.trace s | JSON MB | "
          "peak MB plain / rec | ratio | graph kept | `exact_values=False`: time | peak | "
          "everything kept: time | peak | rec.trace s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in kinds:
        r = row_fresh(kind, args.repeats, args.memory_runs)
        kept, lean, lean_mem, whole, whole_mem = ("–" if r[k] is None else f"{r[k]:.2f}×" for k in (
            "kept_ratio", "lean_ratio", "lean_mem_ratio", "whole_ratio", "whole_mem_ratio"))
        whole_trace = "–" if r["whole_trace_s"] is None else f"{r['whole_trace_s']:.2f}"
        print(f"| {r['model']} ({r['framework']}) | {r['plain_ms']:.1f} | {r['recorded_ms']:.1f} | "
              f"{r['ratio']:.2f}× | {r['warm_ratio']:.2f}× | {r['ops']} | {r['us_per_op']:.1f} | {r['trace_s']:.2f} | "
              f"{r['json_mb']:.2f} | "
              f"{r['mem_plain_mb']:.1f} / {r['mem_rec_mb']:.1f} | {r['mem_ratio']:.2f}× | {kept} | {lean} | "
              f"{lean_mem} | {whole} | {whole_mem} | {whole_trace} |", flush=True)
    frameworks = [f for f, group in (("torch", TORCH), ("tf", TF)) if any(k in group for k in kinds)]
    if frameworks:
        print("\n| framework | plain µs/op | recording adds µs/op | ops recorded |")
        print("|---|---:|---:|---:|")
        for framework in frameworks:
            plain_us, extra_us, n = per_op_fresh(framework)
            print(f"| {framework} | {plain_us:.1f} | {extra_us:.1f} | {n} |", flush=True)
    if not args.no_depth:
        print("\n| model | trace s at 1× (ops) | 2× | 4× | 4× ÷ 1× |")
        print("|---|---:|---:|---:|---:|")
        for kind in [k for k in args.depth_models.split(",") if k]:
            r = depth_row(kind)
            cells = " | ".join(f"{r[d][0]:.2f} ({r[d][1]})" for d in (1, 2, 4))
            print(f"| {kind} | {cells} | {r[4][0] / r[1][0]:.1f} |", flush=True)
    sides = [int(v) for v in args.memory_sides.split(",") if v]
    if sides:
        print("\n| ResNet-18, batch 8 | peak MB plain | recorded | ratio | parameters MB | copies kept MB | "
              "tensors kept MB | gradients kept MB |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for side in sides:
            r = memory_row(side)
            print(f"| {side}×{side} | {r['plain']:.1f} | {r['recorded']:.1f} | {r['recorded'] / r['plain']:.2f}× | "
                  f"{r['params']:.1f} | {r['copies']:.1f} | {r['kept']:.1f} | {r['grads']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
