"""docs/install.md followed in environments that already have a framework: the framework stays as it was.

Each test makes a fresh virtual environment, installs a framework in it as a
user's image or laptop would have it (``tensorflow-cpu`` 2.16, ``tensorflow``,
``torch`` 2.13's CPU build), then installs the built wheel with the extra the
install docs give, and reads the installed distributions back
(``importlib.metadata``): the framework's version is unchanged and no second
distribution of it appeared (``tensorflow`` and ``tensorflow-cpu`` are one
package under two names, so either beside the other overwrites files). Then
the bridge records a real gradient there, and the bridge's own test file
(``tests/test_tf_bridge.py``, ``tests/test_torch_bridge.py``) passes there
against the installed package.

These tests make venvs and install hundreds of megabytes (from pip's cache
after the first run), so they are marked ``install``: the main suite
deselects them (``pyproject.toml``) and CI runs them in ``ci/dist.sh``
(``pytest -m install tests/test_install.py``), with the wheel it built in
``ADV_WHEEL``; without it the test builds one.

The issue measured it: ``pip install 'autodiff_viz[tf]'`` with the old pin
``tensorflow-cpu==2.21.0`` replaced a user's ``tensorflow-cpu`` 2.16.2 by 2.21.0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.install, pytest.mark.timeout(2400)]     # a framework install and a test file each

ROOT = Path(__file__).resolve().parent.parent
TF_NAMES = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-macos", "tf-nightly")
TORCH_NAMES = ("torch", "torch-cpu", "pytorch")
BASE_PYTHON = "python3.11" if subprocess.run(["which", "python3.11"], capture_output=True).returncode == 0 \
    else sys.executable

DISTRIBUTIONS = """
import json
from importlib import metadata
print(json.dumps({d.metadata["Name"].lower().replace("_", "-"): d.version for d in metadata.distributions()}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel CI built (``ADV_WHEEL``), or one built here (plain Python, a few seconds)."""
    if os.environ.get("ADV_WHEEL"):
        return Path(os.environ["ADV_WHEEL"])
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)], check=True,
                   capture_output=True, env={**os.environ, "AUTODIFF_VIZ_PURE": "1"}, timeout=600)
    return next(out.glob("*.whl"))


def _clean_env(**extra) -> dict:
    """This process's environment without what would show the venv another copy of the package: a
    ``PYTHONPATH`` naming the checkout (where ``python -m build`` leaves ``autodiff_viz.egg-info``) makes pip
    call the package installed already and skip the wheel."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **extra}


def _pip(venv, *args, env=None):
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=1200,
                          env=_clean_env(**(env or {})))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _installed(venv) -> dict:
    done = subprocess.run([str(venv / "bin" / "python"), "-c", DISTRIBUTIONS], capture_output=True, text=True,
                          check=True, timeout=120, cwd=venv, env=_clean_env())
    return json.loads(done.stdout)


def _venv_with(tmp_path, *framework):
    venv = tmp_path / "venv"
    subprocess.run([BASE_PYTHON, "-m", "venv", str(venv)], check=True, timeout=300)
    _pip(venv, *framework)
    return venv, _installed(venv)


def _run(venv, code):
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=venv, env=_clean_env(AUTODIFF_VIZ_PURE="1"))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


TF_GRADIENT = """
import numpy as np, tensorflow as tf, autodiff_viz as adv
x = tf.Variable([0.5, -1.0])
with adv.tf.record() as rec:
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.tanh(x) ** 2)
    g = tape.gradient(y, x)
trace = rec.trace(y, [x])
assert "Tanh" in trace.to_dot() or "tanh" in trace.to_dot(), trace.to_dot()[:500]
print(np.asarray(g).round(6).tolist())
"""


def _bridge_tests(venv, tmp_path, *files):
    """The bridge's own test files, run by the venv's Python against the installed package (not the checkout)."""
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *(str(ROOT / "tests" / f) for f in files)], capture_output=True, text=True,
                          timeout=1800, cwd=tmp_path,
                          env=_clean_env(AUTODIFF_VIZ_PURE="1", CUDA_VISIBLE_DEVICES=""))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.strip().splitlines()[-1], done.stdout[-500:]
    return done.stdout


@pytest.mark.parametrize("distribution, version", [("tensorflow-cpu", "2.16.2"), ("tensorflow", "2.21.0")])
def test_the_tf_bridge_keeps_the_tensorflow_distribution_the_user_has(tmp_path, wheel, distribution, version):
    """docs/install.md: next to an installed TensorFlow, ``pip install 'autodiff_viz[tf]'``. The TensorFlow
    the venv had is the one it keeps, at its version, with no other TensorFlow distribution beside it; then the
    TensorFlow bridge's tests pass there, against the installed package."""
    venv, before = _venv_with(tmp_path, f"{distribution}=={version}")
    assert before[distribution] == version and not set(TF_NAMES) - {distribution} & set(before)
    _pip(venv, f"{wheel}[tf]")
    after = _installed(venv)
    assert after[distribution] == version
    assert {n for n in TF_NAMES if n in after} == {distribution}
    assert after["keras"] == before["keras"] and after["numpy"] == before["numpy"]
    assert "autodiff-viz" in after
    grads = json.loads(_run(venv, TF_GRADIENT).strip().splitlines()[-1])
    assert grads == pytest.approx([2 * 0.46211716 * (1 - 0.46211716 ** 2), -2 * 0.76159416 * (1 - 0.76159416 ** 2)],
                                  abs=1e-5)
    # the test tools only now, after the distributions were read: they must not touch TensorFlow either
    _pip(venv, "pytest", "pytest-timeout", "hypothesis")
    assert {n: v for n, v in _installed(venv).items() if n in TF_NAMES + ("keras", "numpy")} == \
        {n: v for n, v in after.items() if n in TF_NAMES + ("keras", "numpy")}
    _bridge_tests(venv, tmp_path, "test_tf_bridge.py")
    assert "site-packages" in _run(venv, "import autodiff_viz; print(autodiff_viz.__file__)")


def test_the_torch_extra_keeps_the_installed_torch_build(tmp_path, wheel):
    """docs/install.md: ``pip install 'autodiff_viz[torch]'`` next to torch 2.13's CPU build leaves that build
    (``+cpu``) in place; the bridge's own tests then pass against the installed package."""
    venv, before = _venv_with(tmp_path, "torch==2.13.0")
    assert before["torch"].startswith("2.13.0")
    _pip(venv, f"{wheel}[torch]")
    after = _installed(venv)
    assert after["torch"] == before["torch"]
    assert {n for n in TORCH_NAMES if n in after} == {"torch"}
    assert not any(n.startswith("nvidia-") for n in after), "a CUDA runtime came with the bridge"
    assert "autodiff-viz" in after
    _pip(venv, "pytest", "pytest-timeout", "hypothesis")
    assert _installed(venv)["torch"] == before["torch"]
    _bridge_tests(venv, tmp_path, "test_torch_bridge.py")
    assert "site-packages" in _run(venv, "import autodiff_viz; print(autodiff_viz.__file__)")
