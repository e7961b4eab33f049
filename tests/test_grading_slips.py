"""Mistakes the demo class does not make, graded as a strict reviewer would: the kind is the true one, or an honest
"wrong" — never a confident wrong kind; and a student's broken code is feedback, never a grader crash.

The assignments follow CS231n's assignment 2 ``layers.py`` (``affine_backward(dout, cache)`` with
``cache = (x, w, b)`` returning ``dx`` of ``x``'s shape ``(N, d1, …, dk)``, ``dw`` ``(D, M)`` and ``db`` ``(M,)``;
``relu_backward(dout, cache)`` with ``cache = x``; ``batchnorm_backward`` returning ``dx, dgamma, dbeta``; e.g.
https://github.com/kaiweihuang/CS231n/blob/master/assignment2/cs231n/layers.py). Gradescope's ``results.json`` and
its autograder layout (``/autograder/submission``, ``/autograder/results/results.json``,
``submission_metadata.json``) are those of https://gradescope-autograders.readthedocs.io/en/latest/specs/.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from autodiff_viz.grading import assignments, check, demo, feedback, gradescope, read_records
from autodiff_viz.grading.assignments import mlp

ROOT = Path(__file__).resolve().parent.parent


def _solution(name):
    mod = assignments.load(name)
    ns = {}
    exec(mod.SETUP + "\n" + mod.STARTER + mod.SOLUTION, ns)
    return ns[mod.FUNCTION]


def _mlp(old, new):
    ns = {}
    src = "import numpy as np\n" + demo.SOLUTION
    assert old in src
    exec(src.replace(old, new), ns)
    return ns["backward"]


def _kinds(result):
    return {r["name"]: r["kind"] for r in result.record()["rows"]}


def test_a_forgotten_relu_mask_is_the_wrong_local_factor_of_relu():
    """dout seeds the tape, so the op right under the output is the one op between dx and a known gradient."""
    for slip in (lambda dout, cache: dout,                       # no mask at all
                 lambda dout, cache: dout * (dout > 0)):         # the mask of dout, not of x
        result = assignments.result("relu", slip)
        assert result.first_kind == "wrong_local_factor(relu)"
    assert assignments.result("relu", lambda dout, cache: 2 * dout * (cache > 0)).first_kind == "scale(2)"


def test_the_wrong_cache_entry_is_a_wrong_local_factor_of_its_op():
    aff, bn = _solution("affine"), _solution("batchnorm")

    def dw_from_w(dout, cache):                  # w where x belongs: dw = w.T-ish, not x.T @ dout
        x, w, b = cache
        dx, _, db = aff(dout, cache)
        return dx, np.ones((w.shape[0], 1)) @ dout.sum(axis=0, keepdims=True), db

    assert assignments.result("affine", dw_from_w).first_kind == "wrong_local_factor(matmul)"

    def dgamma_from_x(dout, cache):              # x where xhat belongs
        x, gamma, xhat, std = cache
        dx, _, dbeta = bn(dout, cache)
        return dx, (dout * x).sum(axis=0), dbeta

    result = assignments.result("batchnorm", dgamma_from_x)
    assert result.first_kind == "wrong_local_factor(multiply)" and result.comparison.first_wrong.name == "gamma"


def test_swapping_gradients_of_different_shapes_is_swapped():
    result = assignments.result("mlp", _mlp("return dh, dz, dW, db", "return dh, dz, db, dW"))
    assert _kinds(result) == {"h": "correct", "z": "correct", "b": "swapped(b, W)", "W": "swapped(W, b)"}
    aff = _solution("affine")
    result = assignments.result("affine", lambda dout, cache: (lambda dx, dw, db: (dx, db, dw))(*aff(dout, cache)))
    assert result.first_kind == "swapped(b, w)"
    # but db = dz is a missing batch sum (that it equals dz is why), not a swap
    assert assignments.result("mlp", demo.function("db_not_summed")).first_kind == "missing_batch_sum"


def test_a_mis_broadcast_db_is_a_shape_mistake():
    result = assignments.result("mlp", _mlp("db = dz.sum(axis=0)", "db = dz.sum(axis=1)"))
    assert result.first_kind == "shape" and _kinds(result)["b"] == "shape"
    assert check(student_fn=_mlp("db = dz.sum(axis=0)", "db = dz.sum(axis=1)"), show=False, partial=True,
                 points=4, **mlp.spec()) == 3.0


def test_scaled_by_two_twice_names_each_factor_and_counts_one_root():
    result = assignments.result("mlp", _mlp("dz = dh * (1 - h ** 2)", "dh = 2 * dh\n    dz = 2 * dh * (1 - h ** 2)"))
    rows = {r["name"]: r for r in result.record()["rows"]}
    assert result.first_kind == "scale(2)" and rows["h"]["root"]
    assert rows["z"]["kind"] == "scale(4)" and not rows["z"]["root"]     # it follows from h: not counted twice


@pytest.mark.parametrize("old, new", [
    ("2 * REG * W", "REG * W"),                                 # half the penalty: two paths, cannot tell which
    ("dh = 2 * (h - Y) / h.size", "dh = (h - Y) ** 2"),        # the loss, not its gradient
])
def test_what_the_tool_cannot_explain_it_calls_wrong(old, new):
    assert assignments.result("mlp", _mlp(old, new)).first_kind == "wrong"


def test_softmax_a_wrong_loss_with_a_right_gradient_gets_no_points():
    """CS231n's softmax_loss returns the loss too; a right dx must not carry a wrong loss to full marks."""
    right = _solution("softmax_loss")
    result = assignments.result("softmax_loss", lambda x, y: (3 * right(x, y)[0], right(x, y)[1]))
    assert not result.ok and result.first_kind == "returned(wrong loss)"
    assert assignments.result("softmax_loss", lambda x, y: ("1.2", right(x, y)[1])).first_kind == \
        "returned(wrong loss)"
    assert assignments.result("softmax_loss", right).ok


def test_softmax_without_the_minus_one_is_honestly_wrong():
    def forgot_minus_one(x, y):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        return -np.log(p[np.arange(len(x)), y]).mean(), p / len(x)

    assert assignments.result("softmax_loss", forgot_minus_one).first_kind == "wrong"


def _run_quietly(fn, capfd, **kwargs):
    with pytest.raises(AssertionError) as err:
        check(student_fn=fn, show=True, **mlp.spec(), **kwargs)
    out, errtext = capfd.readouterr()
    assert errtext == ""                      # nbgrader would zero a cell that writes to stderr
    return str(err.value), out


def test_broken_student_code_is_feedback_not_a_crash(capfd):
    def endless(X, Y, W, h):
        while True:
            try:
                pass
            except Exception:                # a bare except cannot swallow the time limit
                pass

    def exits(X, Y, W, h):
        sys.exit(1)

    def huge_error(X, Y, W, h):
        raise ValueError("x" * 1_000_000)

    def recursion(X, Y, W, h):
        return recursion(X, Y, W, h)

    start = time.perf_counter()
    message, _ = _run_quietly(endless, capfd, timeout=1)
    assert "[error(timeout)]" in message and time.perf_counter() - start < 20
    assert "[error(SystemExit)]" in _run_quietly(exits, capfd)[0]
    message, _ = _run_quietly(huge_error, capfd)
    assert "[error(ValueError)]" in message and len(message) < 2000
    assert "[error(RecursionError)]" in _run_quietly(recursion, capfd)[0]


def test_huge_output_and_warning_storms_stay_small(capfd):
    right = demo.function("correct")

    def chatty(X, Y, W, h):
        import warnings
        for i in range(20000):
            print("debugging", i)
            warnings.warn(f"step {i}")
        return right(X, Y, W, h)

    assert check(student_fn=chatty, **mlp.spec()) is None
    out, err = capfd.readouterr()
    assert err == "" and len(out) < 20000
    result = assignments.result("mlp", chatty)
    assert result.ok and len(result.stdout) < 5000 and len(result.warnings) == 11
    assert len(feedback.result_html(result)) < 20000


def _submission(folder: Path, code: str, email: str, as_notebook: bool = True):
    (folder / "submission").mkdir(parents=True)
    (folder / "results").mkdir()
    if as_notebook:
        import nbformat
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("my answer"),
                                             nbformat.v4.new_code_cell("%matplotlib inline\n" + code)])
        nbformat.write(nb, str(folder / "submission" / "answer.ipynb"))
    else:
        (folder / "submission" / "answer.py").write_text(code)
    (folder / "submission_metadata.json").write_text(json.dumps({"users": [{"email": email, "name": "A"}]}))


@pytest.mark.parametrize("slip, code, score, kind", [
    ("correct", None, 4.0, None),
    ("tanh_one_minus_h", None, 0.0, "wrong_local_factor(tanh)"),
    ("top_level_error", "import numpy as np\nraise RuntimeError('oops')\n", 0.0, "error(RuntimeError)"),
    ("no_function", "x = 1\n", 0.0, "missing"),
    ("endless_top_level", "while True:\n    pass\n", 0.0, "error(timeout)"),
])
def test_gradescope_run_autograder_end_to_end(tmp_path, slip, code, score, kind, monkeypatch):
    """``python -m autodiff_viz.grading.gradescope mlp`` as the whole ``run_autograder``, in Gradescope's layout."""
    pytest.importorskip("jsonschema")
    monkeypatch.setattr(sys.modules["autodiff_viz.grading.check"], "TIMEOUT", 2.0)
    _submission(tmp_path, code or demo.code(slip), f"{slip}@uni.edu", as_notebook=slip != "correct")
    if slip == "endless_top_level":            # in-process: the time limit patched to 2 s
        gradescope.run("mlp", tmp_path / "submission", tmp_path / "results" / "results.json")
    else:
        subprocess.run([sys.executable, "-m", "autodiff_viz.grading.gradescope", "mlp", "submission",
                        "results/results.json"], cwd=tmp_path, check=True, timeout=300,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "AUTODIFF_VIZ_PURE": "1"})
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    gradescope.validate(data)
    assert data["score"] == score
    assert [t["max_score"] for t in data["tests"]] == [2.0, 2.0]
    assert data["extra_data"]["autodiff_viz"]["first_kinds"]["backward"] == kind
    (rec,) = read_records(tmp_path)                     # the dashboard reads results.json as records
    assert rec["student"] == f"{slip}@uni.edu" and rec["checks"]["backward"]["first_kind"] == kind
    if kind == "wrong_local_factor(tanh)":
        assert "<svg" in data["tests"][0]["output"] and data["tests"][0]["output_format"] == "html"
    for line in mlp.SOLUTION.splitlines():             # no feedback carries the reference solution
        if line.strip() and "return" not in line and line.strip() not in (code or demo.code(slip)):
            assert line.strip() not in json.dumps(data)


@pytest.mark.parametrize("slip, kind, node", [
    ("tanh_one_minus_h", "wrong_local_factor(tanh)", "hpre"),
    ("W1_b1_swapped", "swapped(b1, W1)", "b1"),
    ("no_W2", "missing", "W2"),
    ("b2_not_summed", "missing_batch_sum", "b2"),
    ("nan_b1", "nan", "b1"),
    ("W2_transposed", "transpose", "W2"),
    ("probs_sign", "sign", "probs"),
])
def test_backprop_ninja_slips_in_pytorch(slip, kind, node):
    """The PyTorch assignment (forward recorded by the torch bridge): each slip of a learner's dict gets its kind."""
    torch = pytest.importorskip("torch")
    solution = _solution("ninja")
    edits = {
        "tanh_one_minus_h": lambda g, a: g.__setitem__("hpre", g["h"] * (1 - a[4])),
        "W1_b1_swapped": lambda g, a: g.update(W1=g["b1"], b1=g["W1"]),
        "no_W2": lambda g, a: g.pop("W2"),
        "b2_not_summed": lambda g, a: g.__setitem__("b2", g["logits"]),
        "nan_b1": lambda g, a: g.__setitem__("b1", g["b1"] * float("nan")),
        "W2_transposed": lambda g, a: g.__setitem__("W2", g["W2"].T.contiguous()),
        "probs_sign": lambda g, a: g.__setitem__("probs", -g["probs"]),
    }

    def student(*args):
        grads = solution(*args)
        assert all(isinstance(v, torch.Tensor) for v in grads.values())
        edits[slip](grads, args)
        return grads

    result = assignments.result("ninja", student)
    assert result.first_kind == kind and result.comparison.first_wrong.name == node
