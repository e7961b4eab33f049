"""The public names are typed: editors complete and check what learners type (PEP 561's ``py.typed``).

Two checks. Every public function — each name of ``adv.__all__`` that is a
function, and the functions and methods ``adv.torch`` and ``adv.tf`` export —
has an annotation on every parameter and on its return. And ``mypy``, with the
configuration in ``pyproject.toml`` (``[tool.mypy]``), passes over the package
face, the bridges' faces and ``tests/typing_usage.py``, which types what the docs
show and pins what an editor infers with ``assert_type``.
"""
from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import autodiff_viz as adv

ROOT = Path(__file__).resolve().parent.parent


def _unannotated(function) -> list:
    """The parameters of ``function`` (``self`` aside) with no annotation, and ``return`` if that has none."""
    signature = inspect.signature(function)
    missing = [p.name for p in signature.parameters.values()
               if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _public_functions(module, names) -> dict:
    found = {}
    for name in names:
        value = getattr(module, name)
        if inspect.isfunction(value):
            found[f"{module.__name__}.{name}"] = value
        elif inspect.isclass(value) and value.__module__.startswith(module.__name__):
            for method_name, method in vars(value).items():
                if inspect.isfunction(method) and not method_name.startswith("_"):
                    found[f"{module.__name__}.{name}.{method_name}"] = method
    return found


def test_every_public_function_of_the_face_is_annotated():
    functions = _public_functions(adv, [n for n in adv.__all__ if inspect.isfunction(getattr(adv, n))])
    assert len(functions) > 150
    missing = {name: gaps for name, f in functions.items() if (gaps := _unannotated(f))}
    assert not missing, f"public functions without annotations: {missing}"


@pytest.mark.parametrize("bridge", ["torch", "tf"])
def test_every_public_function_of_a_bridge_is_annotated(bridge):
    import importlib.util
    if importlib.util.find_spec({"torch": "torch", "tf": "tensorflow"}[bridge]) is None:
        pytest.skip(f"{bridge}'s framework is not installed here")      # the bridge loads it, quietly
    module = getattr(adv, bridge)
    functions = _public_functions(module, module.__all__)
    assert f"{module.__name__}.record" in functions and f"{module.__name__}.Recording.trace" in functions
    missing = {name: gaps for name, f in functions.items() if (gaps := _unannotated(f))}
    assert not missing, f"public functions without annotations: {missing}"


def test_the_package_says_it_is_typed():
    assert (Path(adv.__file__).parent / "py.typed").exists()


def test_mypy_passes_on_the_public_surface_and_a_learners_code():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found in 4 source files" in done.stdout


def test_mypy_catches_a_wrong_type_in_a_learners_code(tmp_path):
    """The check can fail: a learner passing a string where an axis goes is reported, with the op's name."""
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import autodiff_viz as adv\nadv.sum(adv.constant([1.0]), axis='rows')\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                           str(ROOT / "pyproject.toml"), str(wrong)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1 and '"sum"' in done.stdout and "axis" in done.stdout, done.stdout
