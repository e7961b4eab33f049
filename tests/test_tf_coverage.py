"""The TensorFlow surface by coverage (issue 43): every public name, classified from TensorFlow itself.

``tools/tf_coverage.py`` walks TensorFlow 2.21's public API and gives each name a status (implemented,
different, out of scope, missing), with a generated parity check for every implemented name it can call
(values, dtype, shape and the gradient, against TensorFlow). Here it runs once per session:

* the committed pages (docs/tf-coverage.md, the counts in docs/coming-from.md) are what it generates now;
* no name of ``tf``, ``tf.math``, ``tf.nn``, ``tf.random``, ``tf.linalg`` is missing, and every implemented
  one whose check could be generated passes it;
* every out-of-scope name raises an AttributeError that says why and what to write (the one table in
  ``autodiff_viz/base/tf_surface.py``), naming TensorFlow, never another framework.
"""
import importlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
tf_coverage = importlib.import_module("tf_coverage")


@pytest.fixture(scope="module")
def entries():
    return tf_coverage.run()


def test_the_generated_pages_are_current(entries):
    page = (ROOT / "docs" / "tf-coverage.md").read_text()
    assert page == tf_coverage.page(entries) + "\n", \
        "docs/tf-coverage.md is stale: run python tools/tf_coverage.py --write"
    coming = (ROOT / "docs" / "coming-from.md").read_text()
    assert tf_coverage.coming_from(coming, entries) == coming, \
        "the counts in docs/coming-from.md are stale: run python tools/tf_coverage.py --write"


def test_no_name_of_the_core_namespaces_is_missing(entries):
    missing = [e.qualified for e in entries if e.namespace in tf_coverage.CHECKED and e.status == "missing"]
    assert not missing, f"TensorFlow names with no counterpart and no out-of-scope entry: {missing}"


def test_every_generated_parity_check_of_an_implemented_name_passes(entries):
    failed = {e.qualified: e.check for e in entries
              if e.namespace in tf_coverage.CHECKED and e.status == "implemented" and e.failures}
    assert not failed, failed
    checked = [e for e in entries if e.namespace in tf_coverage.CHECKED and e.check == "passed"]
    assert len(checked) >= 350, len(checked)      # the checks reach most names, not a handful


def test_every_out_of_scope_name_raises_the_reason_and_the_fix(entries):
    import autodiff_viz as adv
    for e in entries:
        if e.status != "out of scope" or tf_coverage.NAMESPACES[e.namespace] is None:
            continue
        owner = adv
        for part in [p for p in tf_coverage.NAMESPACES[e.namespace].split(".") if p]:
            owner = getattr(owner, part)
        if e.namespace not in ("tf", "tf.math", "tf.nn", "tf.random", "tf.linalg", "tf.config"):
            continue            # namespaces owned by other modules (adv.image, adv.data, adv.ops) keep their own
        with pytest.raises(AttributeError) as caught:
            getattr(owner, e.name)
        message = str(caught.value)
        assert f"TensorFlow's {e.qualified} is out of scope here (" in message and "Instead: " in message, message
        assert "PyTorch" not in message.split("Instead: ")[0], message


def test_a_device_name_is_tensorflows_not_pytorchs():
    """Issue 43: ``tf.device('/CPU:0')`` was missing and its error called it "PyTorch's spelling"."""
    import autodiff_viz as adv
    with adv.device("/CPU:0"):
        x = adv.constant([1.0, 2.0]) * 2.0
    assert x.numpy().tolist() == [2.0, 4.0]
    assert adv.config.list_physical_devices("GPU") == [] and adv.config.experimental.list_physical_devices("GPU") == []
    assert [d.device_type for d in adv.config.list_physical_devices()] == ["CPU"]
