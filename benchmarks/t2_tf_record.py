"""T2 (TensorFlow): the cost of ``adv.tf.record()`` on one eager Keras CNN training step.

A small Keras 3 CNN (Conv2D 16 → MaxPool → Conv2D 32 → GlobalAvgPool → Dense 10) on a batch of
32 28×28 images; one step = forward, sparse categorical cross-entropy, ``tape.gradient``, and
``optimizer.apply_gradients``, all eager. The step is timed plain and inside a recording (a fresh
recording per step, as a learner would use it), interleaved, median of the repeats.

    python benchmarks/t2_tf_record.py [repeats]
"""
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.tf  # noqa: E402,F401


def main(repeats=30):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(16, 3, activation="relu"),
                              keras.layers.MaxPooling2D(), keras.layers.Conv2D(32, 3, activation="relu"),
                              keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)])
    opt = keras.optimizers.SGD(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(32, 28, 28, 1)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, size=32))

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def recorded():
        with adv.tf.record() as rec:
            step()
        return rec

    for _ in range(3):
        step()
        recorded()
    plain, rec = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = recorded()
        rec.append(time.perf_counter() - t0)
    p, q = statistics.median(plain), statistics.median(rec)
    print(f"Keras CNN step, batch 32: plain {p * 1e3:.2f} ms, recorded {q * 1e3:.2f} ms, ratio {q / p:.2f}x "
          f"({len(r.ops)} records per step)")
    t0 = time.perf_counter()
    with adv.tf.record() as r:
        loss = step()
    tr = r.trace(loss, model)
    print(f"trace of one step: {(time.perf_counter() - t0) * 1e3:.0f} ms (recording + trace), {len(tr.nodes)} nodes")
    return q / p


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
