"""What a user of the installed package does first, checked against whichever copy of the package is imported.

In the main suite this runs against the checkout. CI's ``ci/dist.sh`` copies
this file alone out of the checkout and runs it with a fresh virtual
environment into which only the built **wheel** (or sdist) was installed,
with ``ADV_SMOKE_INSTALLED=1``: then a file the package needs at run time but
the wheel left out (a module, a widget asset, a template) fails here, where a
checkout would hide it.
"""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import autodiff_viz as adv

INSTALLED = os.environ.get("ADV_SMOKE_INSTALLED") == "1"


def small_tape():
    w = adv.Variable([0.5, -1.0], name="w")
    x = adv.constant([1.0, 2.0], name="x")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.tanh(w) * x)
    return tape, w, x, loss


def test_the_version_is_the_distributions_and_an_installed_copy_comes_from_site_packages():
    """``__version__`` is what the metadata says (installed) or ``pyproject.toml`` says (a checkout on the
    path); under ``ADV_SMOKE_INSTALLED=1`` the copy imported is the one in site-packages, not a checkout."""
    from importlib import metadata
    if INSTALLED:
        where = Path(adv.__file__).resolve()
        assert any(where.is_relative_to(Path(sysconfig.get_paths()[key]).resolve()) for key in ("purelib", "platlib"))
        assert adv.__version__ == metadata.version("autodiff_viz")
    else:
        pyproject = (Path(adv.__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
        assert f'version = "{adv.__version__}"' in pyproject


def test_the_package_ships_its_type_marker():
    """``py.typed`` (PEP 561) is in the installed package, so editors and type checkers read its annotations."""
    assert (Path(adv.__file__).parent / "py.typed").is_file()


def test_a_tape_gives_the_chain_rule_gradient():
    tape, w, x, loss = small_tape()
    grad = tape.gradient(loss, w)
    np.testing.assert_allclose(np.asarray(grad), (1 - np.tanh([0.5, -1.0]) ** 2) * [1.0, 2.0])
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?.*", adv.__version__)


def test_a_trace_draws_to_svg_with_graphviz():
    tape, w, x, loss = small_tape()
    svg = tape.trace(loss, [w, x]).to_svg()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "tanh" in svg and "</svg>" in svg


def test_the_explorer_exports_self_contained_html(tmp_path):
    tape, w, x, loss = small_tape()
    page = html.unescape(adv.show(tape, target=loss, sources=[w, x]).static_html())
    assert page.count("<svg") >= 2 and "advMount" in page
    assert not re.findall(r'(?:src|href)\s*=\s*["\'](https?:[^"\']*)', page)      # nothing fetched
    path = tape.trace(loss, [w, x]).save(tmp_path / "trace.html")
    assert Path(path).read_text(encoding="utf-8").count("<svg") >= 2


@pytest.mark.parametrize("bridge, framework, says", [
    ("torch", "torch", "pip install 'autodiff_viz[torch]' (torch>=2.4"),
    ("tf", "tensorflow", "pip install 'tensorflow-cpu>=2.16'"),
])
def test_a_bridge_without_its_framework_says_what_to_install(bridge, framework, says):
    """``adv.torch`` / ``adv.tf`` where the framework is not installed (hidden here in a fresh interpreter):
    an ImportError that names the extra or the range to install, never an exact pin."""
    code = (f"import sys; sys.modules[{framework!r}] = None\n"
            "import autodiff_viz as adv\n"
            "try:\n"
            f"    adv.{bridge}\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AUTODIFF_VIZ_PURE": os.environ.get("AUTODIFF_VIZ_PURE", "")})
    assert done.returncode == 0, done.stderr
    assert says in done.stdout and "==" not in done.stdout, done.stdout
