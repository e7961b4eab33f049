"""The learner's side of ``tests/test_interrupts.py``: long runs of the engine that a parent interrupts with SIGINT.

Run as ``python tests/interrupt_child.py MODE TRIALS``. For each trial it
prints ``ready <n>`` and starts a run that would take minutes (``fit`` for
a million epochs, ``evaluate``/``predict`` over a million one-sample batches,
the Jacobian of a 300,000-op chain, a plain ``GradientTape`` training loop
that never ends); the parent sends SIGINT a random 0.3–2 s later. A run the
interrupt stopped prints ``stopped <n> {json}`` with what the parent checks:
whether the model was left with a whole step (every variable moved, or none)
and the optimizer's ``iterations`` in agreement; a run that ends by itself
prints ``finished <n>`` (the interrupt was lost). After the last trial the
model trains once more (``fit`` callable again) and ``done {json}`` is printed.
"""
import json
import sys
import traceback

import numpy as np

import autodiff_viz as adv

MODE, TRIALS = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
# noisy targets: the loss cannot reach zero, so every step's update stays large enough to see in float32
y = (x @ rng.normal(size=(8, 1)) + rng.normal(size=(256, 1))).astype("float32")
model = adv.Sequential([adv.layers.Input((8,)), adv.layers.Dense(32, activation="tanh"), adv.layers.Dense(1)])
model.compile(optimizer=adv.optimizers.Adam(1e-3), loss="mse")
big = np.repeat(x, 4000, axis=0)   # a million rows: evaluate/predict with batch_size=1 never finish in time


def weights():
    return [v.numpy().copy() for v in model.trainable_variables]


class Snapshot(adv.callbacks.Callback):
    """The weights and the optimizer's step count as each training step begins."""

    def on_train_batch_begin(self, batch, logs=None):
        self.before = (weights(), int(model.optimizer.iterations))


def wholeness(before):
    """``{"iterations_moved": k, "moved": [...]}``: how far iterations went since ``before``, which variables moved."""
    old, iters = before
    moved = [bool(not np.array_equal(a, b)) for a, b in zip(old, weights())]
    return {"iterations_moved": int(model.optimizer.iterations) - iters, "moved": moved,
            "finite": bool(all(np.isfinite(w).all() for w in weights()))}


def chain(v):
    for _ in range(300_000):
        v = adv.tanh(v * 1.0001)
    return adv.sum(v)


def run(trial):
    snap = Snapshot()
    snap.before = (weights(), int(model.optimizer.iterations))
    try:
        if MODE == "fit":
            model.fit(x, y, epochs=1_000_000, batch_size=16, verbose=0, callbacks=[snap])
        elif MODE == "evaluate":
            model.evaluate(big, np.repeat(y, 4000, axis=0), batch_size=1, verbose=0)
        elif MODE == "predict":
            model.predict(big, batch_size=1)
        elif MODE == "jacobian":
            adv.jacobian(chain)(adv.constant(np.linspace(-1, 1, 50)))
        elif MODE == "loop":
            opt = model.optimizer
            while True:
                snap.before = (weights(), int(opt.iterations))
                batch = slice(16 * (opt.iterations % 16), 16 * (opt.iterations % 16) + 16)
                with adv.GradientTape() as tape:
                    loss = adv.mean((model(x[batch]) - y[batch]) ** 2)
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
        print(f"finished {trial}", flush=True)
    except KeyboardInterrupt as exc:
        where = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)[-3:]]
        print(f"stopped {trial} {json.dumps({**wholeness(snap.before), 'where': where})}", flush=True)


for trial in range(TRIALS):
    print(f"ready {trial}", flush=True)
    run(trial)
steps_before = int(model.optimizer.iterations)
history = model.fit(x, y, epochs=2, batch_size=64, verbose=0)
print("done " + json.dumps({"loss": [float(v) for v in history.history["loss"]],
                            "steps": int(model.optimizer.iterations) - steps_before}), flush=True)
