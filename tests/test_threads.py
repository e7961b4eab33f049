"""Tapes are per thread: a tape records the ops run in the thread that opened it (as TensorFlow)."""
import threading

import numpy as np

import autodiff_viz as adv
from autodiff_viz.base.state import state


def _run_threads(target, n=4):
    """Run ``target(i)`` in ``n`` threads started together; re-raise the first failure."""
    errors, barrier = [], threading.Barrier(n)

    def run(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:   # noqa: BLE001 (handed to the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_four_threads_of_tapes_each_get_their_own_gradient():
    # d/dv sum(v³) = 3v²; every thread has its own variable and value
    results = {}

    def work(i):
        v = adv.Variable([1.0 + i, -2.0 - i], name=f"v{i}")
        expected = 3 * v._value ** 2
        for _ in range(200):
            with adv.GradientTape() as tp:
                y = adv.sum(v * v * v)
            g = tp.gradient(y, v)
            assert g is not None, f"thread {i}: gradient None"
            np.testing.assert_allclose(g.numpy(), expected)
            assert len(tp.nodes) == 0 or all(n.tapes == (tp.serial,) for n in tp.nodes)
        results[i] = True

    _run_threads(work)
    assert sorted(results) == [0, 1, 2, 3]


def test_nested_tapes_in_threads_give_second_derivatives():
    # y = x⁴: dy/dx = 4x³, d²y/dx² = 12x²
    def work(i):
        x = adv.Variable(1.0 + i)
        for _ in range(50):
            with adv.GradientTape() as outer:
                with adv.GradientTape() as inner:
                    y = x * x * x * x
                dy = inner.gradient(y, x)
            d2y = outer.gradient(dy, x)
            assert dy.numpy() == 4 * (1.0 + i) ** 3
            assert d2y.numpy() == 12 * (1.0 + i) ** 2

    _run_threads(work)


def test_a_tape_open_in_one_thread_does_not_record_another_threads_ops():
    v = adv.Variable([1.0, 2.0])
    opened, done = threading.Event(), threading.Event()
    seen = {}

    def other():
        opened.wait()
        w = adv.Variable([3.0])
        z = w * 2.0 + v          # reads v too: still not this thread's tape
        seen["state"] = (list(state.recording), list(state.entered))
        seen["z"] = z
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with adv.GradientTape() as tape:
        y = adv.sum(v * v)
        opened.set()
        done.wait()
    t.join()
    assert seen["state"] == ([], [])
    assert [n.rule.name for n in tape.nodes] == ["multiply", "sum"]
    assert tape.gradient(seen["z"], v) is None
    assert not tape.recording


def test_name_scopes_and_anomaly_mode_are_per_thread():
    scopes = {}

    def other():
        scopes["other"] = state.scope_path
        scopes["anomaly"] = state.anomaly
        x = adv.constant([0.0])
        with np.errstate(divide="ignore"):
            scopes["log0"] = adv.log(x).numpy()   # -inf, and no AnomalyError in this thread

    with adv.name_scope("outer"), adv.detect_anomaly():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert state.scope_path == "outer"
    assert scopes["other"] == "" and scopes["anomaly"] is None
    assert np.isneginf(scopes["log0"][0])


def test_gradient_asked_in_another_thread_after_the_block():
    # the record belongs to the tape; the walk can run anywhere once recording ended
    x = adv.Variable([2.0])
    with adv.GradientTape() as tape:
        y = adv.sum(x * x)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("g", tape.gradient(y, x)))
    t.start()
    t.join()
    np.testing.assert_allclose(out["g"].numpy(), [4.0])
