"""tape.explain on the "gradient is None" cases of TensorFlow's autodiff guide.

Porting the guide found three cases where the diagnosis named the wrong
cause: a tape reset (blamed on ``watch_accessed_variables=False``), a variable
replaced by a tensor (blamed on ``layer.output``), and a Python ``if`` (a
variable target said to be "computed before the tape"). Each test checks the
reason, the words of the cause and of the fix, and that the fix gives the
gradient TensorFlow gives. The last tests pin the texts that were right
already (a non-trainable variable, a constant never watched,
``watch_accessed_variables=False``), so the new branches do not take them over.

Lines the diagnosis must point at carry a ``# <- tag`` comment (see :func:`line_of`).
"""
import os

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv

HERE = os.path.abspath(__file__)


def line_of(tag: str) -> str:
    return code_lines.line_of(HERE, tag)


# ---------------------------------------------------------------------------
# 1. tape.reset() forgot the ops that used the source
# ---------------------------------------------------------------------------
def test_reset_forgot_the_ops_that_used_the_source():
    x = adv.Variable(2.0, name="x")
    y = adv.Variable(3.0, name="y")
    with adv.GradientTape() as t:
        y_sq = y * y  # <- before-reset
        t.reset()
        z = x * x + y_sq
    assert t.gradient(z, y) is None
    e = t.explain(z, y)
    assert e.reason == "computed_outside_tape"
    assert e.location == line_of("before-reset")
    assert "watch_accessed_variables=False" not in e.message
    assert "recorded before tape.reset()" in e.message and "'y_sq'" in e.message
    assert "compute it after tape.reset()" in e.message and "do not reset" in e.message
    with adv.GradientTape() as t:                # the fix: compute it after the reset
        t.reset()
        y_sq = y * y
        z = x * x + y_sq
    assert t.explain(z, y).reason == "connected"
    assert float(t.gradient(z, y)) == pytest.approx(6.0)        # d(y²)/dy = 2y


def test_reset_on_a_watched_constant_is_not_blamed_on_watching():
    c = adv.constant(2.0, name="c")
    with adv.GradientTape() as t:
        t.watch(c)
        h = c * c  # <- watched-then-reset
        t.reset()
        z = h + 1.0
    e = t.explain(z, c)
    assert e.reason == "computed_outside_tape" and e.location == line_of("watched-then-reset")
    assert "never watched" not in e.message and "recorded before tape.reset()" in e.message
    assert "tape.watch(x) again" in e.message


def test_source_read_again_after_the_reset_still_names_the_forgotten_op():
    y = adv.Variable(3.0, name="y")
    with adv.GradientTape(persistent=True) as t:
        y_sq = y * y  # <- forgotten
        t.reset()
        doubled = y * 2.0          # the tape watches y again ...
        z = y_sq + 1.0             # ... but z still goes through the forgotten op
    assert t.gradient(doubled, y) is not None and t.gradient(z, y) is None
    e = t.explain(z, y)
    assert e.reason == "computed_outside_tape" and e.location == line_of("forgotten")
    assert "'y_sq'" in e.message and "tape.reset()" in e.message


# ---------------------------------------------------------------------------
# 2. x = x + 1 replaced the variable with a tensor
# ---------------------------------------------------------------------------
def test_variable_replaced_by_a_tensor_before_the_tape():
    x = adv.Variable(2.0, name="x")
    x = x + 1  # <- rebound
    with adv.GradientTape() as tape:
        y = x + 1
    assert tape.gradient(y, x) is None
    e = tape.explain(y, x)
    assert e.reason == "computed_outside_tape"
    assert e.location == line_of("rebound")
    assert "layer" not in e.message
    assert "is not a variable" in e.message and "computed from the variable 'x'" in e.message
    assert "before the tape's `with` block" in e.message
    assert "x.assign_add(1)" in e.message and "x.assign(" in e.message
    assert "tape.watch(x)" in e.message
    x = adv.Variable(2.0, name="x")                # the fix: change the variable in place
    x.assign_add(1)
    with adv.GradientTape() as tape:
        y = x + 1
    assert tape.explain(y, x).reason == "connected"
    assert float(tape.gradient(y, x)) == 1.0 and float(x) == 3.0


def test_variable_plus_a_number_names_the_unnamed_variable():
    x2 = adv.Variable(2.0) + 1.0  # <- plus-number
    with adv.GradientTape() as tape:
        y = x2 * 3.0
    e = tape.explain(y, x2)
    assert e.reason == "computed_outside_tape" and e.location == line_of("plus-number")
    assert "layer" not in e.message
    assert "computed from a variable (an unnamed variable of shape (), float64)" in e.message
    assert "x2.assign_add(1)" in e.message and "tape.watch(x2)" in e.message
    adv.layers.set_random_seed(0)                  # a tensor made inside a layer keeps the layer text
    dense = adv.layers.Dense(2, name="dense")
    with adv.GradientTape():
        out = dense(adv.constant(np.ones((1, 3))))
    with adv.GradientTape() as tape:
        loss = adv.sum(out ** 2)
    e = tape.explain(loss, out)
    assert e.reason == "computed_outside_tape"
    assert "layer.output" in e.message and "assign_add" not in e.message


# ---------------------------------------------------------------------------
# 3. a Python `if` chose a variable as the result
# ---------------------------------------------------------------------------
@pytest.fixture
def guide_if():
    x = adv.constant(1.0, name="x")
    v0 = adv.Variable(2.0, name="v0")
    v1 = adv.Variable(2.0, name="v1")
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:  # <- if
            result = v0
        else:
            result = v1 ** 2
    return tape, x, v0, v1, result


def test_python_if_that_picks_a_variable(guide_if):
    tape, x, v0, v1, result = guide_if
    assert tape.gradient(result, x) is None
    e = tape.explain(result, x)
    assert e.reason == "not_used"
    assert "was computed" not in e.message
    assert "'v0' (shape (), float64) is the variable itself" in e.message
    assert "no recorded op links it to 'x'" in e.message
    assert "comparison 'greater'" in e.message and "Python `if`" in e.message
    assert "control flow is invisible to the gradient" in e.message
    assert "only the branch taken" in e.message
    assert e.location == line_of("if") and e.op == "greater"
    assert "unconnected_gradients='zero'" in e.message and "adv.nn.sigmoid" in e.message


def test_the_variable_the_if_picked_is_connected(guide_if):
    tape, x, v0, v1, result = guide_if
    e = tape.explain(result, v0)
    assert e.reason == "connected" and "the source itself" in e.message
    assert tape.explain(result, v1).reason == "not_used"
    assert tape.explain(v0, v0).connected


def test_variable_target_without_a_comparison():
    x = adv.constant(1.0, name="x")
    v = adv.Variable(2.0, name="v")
    with adv.GradientTape() as tape:
        tape.watch(x)
        x * 2.0
    e = tape.explain(v, x)
    assert e.reason == "not_used"
    assert "is the variable itself" in e.message and "was computed" not in e.message
    assert "if" not in e.message.split("Fix:")[0].split()


def test_python_if_that_picks_a_computed_branch():
    a = adv.constant(1.0, name="a")
    v0 = adv.Variable(2.0, name="v0")
    with adv.GradientTape() as tape:
        tape.watch(a)
        if a > 0.0:  # <- if-op
            r = v0 * 3.0
        else:
            r = a
    e = tape.explain(r, a)
    assert e.reason == "not_used" and e.location == line_of("if-op")
    assert "Python `if`" in e.message and "only the branch taken" in e.message


# ---------------------------------------------------------------------------
# The texts that were right stay right, next to a reset
# ---------------------------------------------------------------------------
def test_unwatched_sources_keep_their_texts_on_a_tape_that_was_reset():
    frozen = adv.Variable(2.0, trainable=False, name="frozen")
    c = adv.constant(3.0, name="c")
    w = adv.Variable(1.0, name="w")
    y = adv.Variable(3.0, name="y")
    with adv.GradientTape(persistent=True) as tape:
        y_sq = y * y  # <- default-before-reset
        tape.reset()
        z = frozen * w + c * w + y_sq  # <- plain
    e = tape.explain(z, y)
    assert (e.reason, e.location) == ("computed_outside_tape", line_of("default-before-reset"))
    assert "tape.reset()" in e.message and "watch_accessed_variables" not in e.message
    e = tape.explain(z, frozen)
    assert (e.reason, e.location) == ("not_watched", line_of("plain"))
    assert "trainable=False" in e.message and "watch_accessed_variables" not in e.message
    assert "reset" not in e.message
    e = tape.explain(z, c)
    assert (e.reason, e.location) == ("not_watched", line_of("plain"))
    assert "constant that this tape never watched" in e.message and "reset" not in e.message


def test_watch_accessed_variables_false_keeps_its_text_across_a_reset():
    w = adv.Variable(1.0, name="w")
    y = adv.Variable(3.0, name="y")
    with adv.GradientTape(watch_accessed_variables=False) as tape:
        y_sq = y * y  # <- never-recorded
        tape.reset()
        z = w * 2.0 + y_sq  # <- no-auto
    e = tape.explain(z, w)
    assert (e.reason, e.location) == ("not_watched", line_of("no-auto"))
    assert "watch_accessed_variables=False" in e.message and "reset" not in e.message
    e = tape.explain(z, y)          # never recorded at all: the flag, not the reset, is the cause
    assert (e.reason, e.location) == ("not_watched", line_of("never-recorded"))
    assert "watch_accessed_variables=False" in e.message and "reset" not in e.message
    y = adv.Variable(3.0, name="y")
    with adv.GradientTape() as tape:            # the same lines on a default tape: the reset is the cause
        y_sq = y * y
        tape.reset()
        z = w * 2.0 + y_sq
    e = tape.explain(z, y)
    assert "tape.reset()" in e.message and "watch_accessed_variables=False" not in e.message
