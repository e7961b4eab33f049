"""docs/pictures.md cannot go stale silently (issue 33).

The page shows the default picture of four models (a CNN, an LSTM regressor,
a functional MLP with a skip connection, a transformer block) next to the
code that made it. This test re-runs ``docs/pictures/make_pictures.py`` into
a temporary folder and checks that each picture names every layer as
``summary()`` does and draws every weight with its ḡ, that the committed
SVG files are the ones the script writes, and that the page shows each
builder's code as it is in the script.
"""
import importlib.util
import inspect
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _script():
    spec = importlib.util.spec_from_file_location("make_pictures", DOCS / "pictures" / "make_pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _node_text(svg: str, node_id: str) -> str:
    m = re.search(rf'<g id="bwd_{node_id}" class="node">(.*?)</g>', svg, re.S)
    return "" if m is None else " ".join(re.findall(r">([^<]*)</text>", m.group(1)))


def test_every_picture_names_each_layer_and_shows_each_weight_with_its_gradient(tmp_path):
    script = _script()
    made = script.make(tmp_path)
    assert sorted(made) == sorted(script.PICTURES)
    for name, (trace, model) in made.items():
        svg = (tmp_path / name).read_text(encoding="utf-8")
        for layer in model.layers:
            if type(layer).__name__ == "InputLayer":
                continue
            assert f"{layer.name} ({type(layer).__name__})" in svg, (name, layer.name)
        for v in model.trainable_variables:
            text = _node_text(svg, trace.node_id_of(v))
            titled = "/".join(v.path.split("/")[-2:])        # `conv/kernel`, `lstm_cell/kernel`: with its layer
            assert text.startswith(f"{titled} {v.shape}") and "ḡ = " in text, (name, v.path, text)
        assert "(folded)" not in svg and "VJP of" not in svg
        committed = (DOCS / "pictures" / name).read_text(encoding="utf-8")
        assert re.findall(r">([^<]*)</text>", committed) == re.findall(r">([^<]*)</text>", svg), name


def test_the_page_shows_each_builders_code_and_links_each_picture():
    script = _script()
    page = (DOCS / "pictures.md").read_text(encoding="utf-8")
    for name, build in script.PICTURES.items():
        assert inspect.getsource(build) in page, build.__name__
        assert f"](pictures/{name})" in page
    for linking in ("index.md", "traces.md"):
        assert "pictures.md" in (DOCS / linking).read_text(encoding="utf-8"), linking
