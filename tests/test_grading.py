"""The grading kit (issue 45): check in a test cell, the mistake kinds, records, Gradescope's results.json.

The submissions are generated (``autodiff_viz.grading.demo``): each is the
solution with one slip made, so the kind the grader must report is known.

The ready assignments follow their sources: CS231n's assignment 2 ``layers.py``
(``affine_backward(dout, cache)`` → ``dx, dw, db``, ``relu_backward``,
``batchnorm_backward`` → ``dx, dgamma, dbeta``, ``softmax_loss(x, y)`` →
``loss, dx``; e.g. https://github.com/kaiweihuang/CS231n/blob/master/assignment2/cs231n/layers.py),
and Karpathy's "Building makemore Part 4: Becoming a Backprop Ninja"
(https://youtu.be/q8SA3rM6ckI: ``counts``, ``counts_sum``, ``counts_sum_inv``,
``probs``, ``logprobs`` of a tanh MLP's cross-entropy, every one by hand in
PyTorch). Gradescope's ``results.json``:
https://gradescope-autograders.readthedocs.io/en/latest/specs/.
"""
import json
import subprocess
import sys

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.grading import assignments, check, demo, gradescope, read_records, write_record
from autodiff_viz.grading.assignments import mlp


@pytest.mark.parametrize("slip", list(demo.SLIPS))
def test_each_slip_gets_its_kind(slip):
    result = assignments.result("mlp", demo.function(slip))
    assert result.first_kind == demo.expected(slip)
    assert result.ok == (demo.expected(slip) is None)


def test_the_kind_is_in_the_message_and_the_assertion():
    with pytest.raises(AssertionError) as err:
        check(student_fn=demo.function("tanh_one_minus_h"), show=False, **mlp.spec())
    text = str(err.value)
    assert "'z'" in text and "[wrong_local_factor(tanh)]" in text and "1 − y²" in text


def test_success_returns_none_and_partial_credit_returns_a_number():
    assert check(student_fn=demo.function("correct"), show=False, **mlp.spec()) is None
    assert check(student_fn=demo.function("correct"), show=False, partial=True, points=4, **mlp.spec()) == 4.0
    # db summed over everything: three of four gradients right
    assert check(student_fn=demo.function("db_summed_over_all"), show=False, partial=True, points=4,
                 **mlp.spec()) == 3.0


def test_warnings_and_stderr_of_the_student_stay_off_stderr(capfd):
    def noisy(X, Y, W, h):
        import warnings
        print("debug", file=sys.stderr)
        warnings.warn("np.float is deprecated", DeprecationWarning)
        with np.errstate(all="warn"):
            np.log(np.zeros(1))
        return demo.function("correct")(X, Y, W, h)

    assert check(student_fn=noisy, **mlp.spec()) is None
    out, err = capfd.readouterr()
    assert err == ""
    result = assignments.result("mlp", noisy)
    assert result.ok and result.stderr == "debug\n"
    assert any("DeprecationWarning" in w for w in result.warnings)


def test_the_students_code_can_change_nothing_the_grader_keeps():
    def vandal(X, Y, W, h):
        right = demo.function("correct")(X.copy(), Y.copy(), W.copy(), h.copy())
        X[:] = 0
        h[:] = 0
        return right

    assert assignments.result("mlp", vandal).ok
    assert assignments.result("mlp", demo.function("correct")).ok


@pytest.mark.parametrize("returned, kind", [(None, "returned(NoneType)"), ("text", "returned(str)"),
                                            ({"h": 1.0, "q": 2.0}, "returned(unknown names)")])
def test_what_a_function_returns_wrongly_is_feedback(returned, kind):
    result = assignments.result("mlp", lambda X, Y, W, h: returned)
    assert not result.ok and result.first_kind == kind and result.error


def test_a_missing_key_is_a_missing_row():
    right = demo.function("correct")
    result = assignments.result("mlp", lambda X, Y, W, h: dict(zip(("h", "z", "W"), right(X, Y, W, h))))
    assert result.first_kind == "missing"
    assert [r["kind"] for r in result.record()["rows"] if r["name"] == "b"] == ["missing"]


@pytest.mark.parametrize("name", assignments.NAMES)
def test_every_ready_assignment_passes_its_solution_and_fails_a_zero(name):
    mod = assignments.load(name)
    ns = {}
    exec(mod.SETUP + "\n" + mod.STARTER + mod.SOLUTION, ns)
    for seed in (0, 1):
        assert assignments.result(name, ns[mod.FUNCTION], seed).ok, (name, seed)

    def zeros(*args, **kwargs):
        out = ns[mod.FUNCTION](*args, **kwargs)
        if isinstance(out, dict):
            return {k: v * 0 for k, v in out.items()}
        return tuple(v * 0 for v in out) if isinstance(out, tuple) else out * 0

    bad = assignments.result(name, zeros)
    assert not bad.ok


def test_classic_slips_of_the_cs231n_assignments():
    ns = {}
    exec(assignments.load("batchnorm").STARTER + assignments.load("batchnorm").SOLUTION, {"np": np}, ns)
    bn = ns["batchnorm_backward"]

    def dgamma_unsummed(dout, cache):
        dx, dgamma, dbeta = bn(dout, cache)
        return dx, dout * cache[2], dbeta

    assert assignments.result("batchnorm", dgamma_unsummed).first_kind == "missing_batch_sum"
    ns = {}
    exec(assignments.load("affine").STARTER + assignments.load("affine").SOLUTION, ns)
    aff = ns["affine_backward"]

    def dx_not_reshaped(dout, cache):
        dx, dw, db = aff(dout, cache)
        return dx.reshape(dx.shape[0], -1), dw, db

    assert assignments.result("affine", dx_not_reshaped).first_kind == "shape"


def test_ninja_in_pytorch_finds_the_forgotten_path():
    mod = assignments.load("ninja")
    ns = {}
    exec(mod.SETUP + "\n" + mod.STARTER + mod.SOLUTION.replace(
        "    dcounts = dcounts + dcounts_sum * torch.ones_like(counts)\n", ""), ns)
    result = assignments.result("ninja", ns["manual_backward"])
    assert result.first_kind == "lost_path(counts_sum)" and result.comparison.first_wrong.name == "counts"


def test_records_only_where_a_grader_runs(tmp_path, monkeypatch):
    result = assignments.result("mlp", demo.function("sign_dW"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("ADV_GRADING_RECORDS", raising=False)
    assert write_record(result) is None and not list(tmp_path.rglob("*.json"))
    folder = tmp_path / "course" / "autograded" / "ada" / "mlp"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    path = write_record(result)
    assert path == tmp_path / "course" / "grading_records" / "mlp" / "ada.json"
    (rec,) = read_records(tmp_path / "course" / "grading_records")
    assert rec["student"] == "ada" and rec["checks"]["backward"]["first_kind"] == "sign"


def test_to_dict_is_json_and_names_every_kind():
    x = adv.constant([[1.0, -2.0], [0.5, 0.25]])
    W = adv.Variable([[0.5], [0.25]], name="W")
    with adv.GradientTape() as tape:
        z = x @ W
        h = adv.tanh(z)
        loss = adv.sum(h ** 2)
    dh = 2 * h.numpy()
    cmp = tape.compare(loss, {"h": dh, "z": dh * (1 - h.numpy()), "W": -(x.numpy().T @ (dh * (1 - h.numpy() ** 2)))})
    data = json.loads(cmp.to_json())
    assert [(r["name"], r["kind"]) for r in data["rows"]] == [
        ("h", "correct"), ("z", "wrong_local_factor(tanh)"), ("W", "sign")]
    assert data["first_kind"] == "wrong_local_factor(tanh)"
    assert [str(k) for k in cmp.kinds()] == [r["kind"] for r in data["rows"]]


def test_gradescope_results_json_validates_against_the_documented_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    graded = [(assignments.result("mlp", demo.function(s)), 4) for s in ("correct", "tanh_one_minus_h", "exception")]
    path = gradescope.write(tmp_path / "results" / "results.json", graded)
    data = json.loads(path.read_text())
    gradescope.validate(data)
    assert data["score"] == 4.0
    assert [t["status"] for t in data["tests"]] == ["passed", "failed", "failed"]
    wrong = data["tests"][1]
    assert wrong["output_format"] == "html" and "<svg" in wrong["output"] and 'width="100%"' in wrong["output"]
    assert wrong["extra_data"]["first_kind"] == "wrong_local_factor(tanh)"
    assert data["tests"][2]["extra_data"]["first_kind"] == "error(ValueError)"
    with pytest.raises(jsonschema.ValidationError):
        gradescope.validate({**data, "tests": [{**data["tests"][0], "status": "ok"}]})
    with pytest.raises(jsonschema.ValidationError):
        gradescope.validate({"output": "no score, no tests"})


def test_feedback_html_is_inline_styled_and_escaped():
    from autodiff_viz.grading import feedback

    def hostile(X, Y, W, h):
        raise ValueError("<script>alert(1)</script>")

    page = feedback.result_html(assignments.result("mlp", hostile))
    assert "<script>" not in page and "&lt;script&gt;" in page
    page = feedback.result_html(assignments.result("mlp", demo.function("transposed_dW")))
    assert "<th style='border:1px solid" in page and "viewBox" in page and 'width="100%"' in page


def test_the_package_part_costs_little_per_submission():
    """Not a speed assertion (benchmarks/grading.py measures): the Result records what it spent."""
    result = assignments.result("mlp", demo.function("correct"))
    assert 0 < result.seconds < 60


def test_grading_imports_no_framework_until_asked():
    code = "import autodiff_viz.grading, sys; print('torch' in sys.modules, 'tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_wrong_result_reads_as_zero_points_under_nbgrader(monkeypatch):
    wrong = assignments.result("mlp", demo.function("sign_dW"))
    right = assignments.result("mlp", demo.function("correct"))
    assert repr(wrong) == "Result('backward', first_kind='sign')"
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert repr(wrong) == "0" and float(repr(wrong)) == 0
    assert repr(right) == "Result('backward', ok)"
