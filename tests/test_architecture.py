"""The layers of the house (docs/architecture.md): every import runs down, none runs in a circle.

The graph is built from the source with ``ast``: every ``import`` and
``from … import`` of the package, at module level or inside a function,
counts. Each module belongs to one layer below; a module may import from its
own layer or a lower one, never from a higher one, and no set of modules may
import each other in a circle (a cycle inside one layer is as bad as one
across layers: neither can be read or tested bottom-up).

A new module gets its place in ``LAYERS``; a test that fails here names the
importing module, the line and the layer it reached up to.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autodiff_viz"

# The layers, bottom to top, as folders: a module is placed by the folder it is in, read from its path, so a module
# added to a folder needs no line here (base/, core/, records/, diagnosis/, keras_base/, views/, bridges/, torch/, tf/,
# grading/, course/). At the root stay only the package face and the Keras-style public modules, whose paths mirror
# keras.* and tf.* (ROOT_PUBLIC below; layers/, models/, datasets/, utils/ are folders among them), in the order they
# build on each other. test_the_root_holds_only_the_face_and_modules_that_mirror_keras and
# test_every_folder_of_the_package_is_a_layer_or_a_keras_style_package read the folders and the root from disk.
FOLDER_LAYERS = [
    ("base", ["base"]),                            # base/compiled.py: setup.py and dev.sh also load it by path
    ("core", ["core"]),
    ("records and diagnosis", ["records", "diagnosis"]),
    ("keras: its base", ["keras_base", "regularizers"]),
    ("keras: layers", ["layers"]),
    ("keras: losses, metrics", ["losses", "metrics"]),
    ("keras: optimizers, callbacks", ["optimizers", "callbacks"]),
    ("keras: saving", ["saving"]),
    ("keras: models", ["models"]),
    ("keras: data", ["data", "datasets"]),
    ("views", ["views"]),
    ("bridges", ["bridges", "torch", "tf"]),
    ("grading", ["grading"]),
    # course/: python -m autodiff_viz.course.run_notebooks, beside the face (nothing in the package imports it); not
    # tools/, which would shadow TensorFlow's tf.tools (out of scope) on the face once imported
    ("the package face and its namespaces, course", ["", "utils", "ops", "backend", "errors", "image", "math", "keras",
                                                     "course"]),
]
# Each module or package at the root of autodiff_viz/ (the face aside) and the public Keras or TensorFlow module
# its path mirrors: ``autodiff_viz.X`` is what ``keras.X`` / ``tf.X`` is. Anything else belongs in a layer folder.
ROOT_PUBLIC = {
    "backend": "keras.backend", "callbacks": "keras.callbacks", "data": "tf.data", "datasets": "keras.datasets",
    "errors": "tf.errors", "image": "tf.image", "keras": "tf.keras", "layers": "keras.layers",
    "losses": "keras.losses", "math": "tf.math", "metrics": "keras.metrics", "models": "keras.models",
    "ops": "keras.ops", "optimizers": "keras.optimizers", "regularizers": "keras.regularizers",
    "saving": "keras.saving", "utils": "keras.utils",
}
# Inside core/ the order is finer (docs/architecture.md): tensor → engine → rules → walks → ops → linalg →
# methods, spellings → nn, random; a core module may import only from its own step or one below.
CORE_STEPS = [["tensor", ""], ["engine"], ["rules"], ["walks"], ["ops"], ["linalg"], ["methods", "spellings"],
              ["nn", "random"]]


def _expand(folder_layers, core_steps) -> list:
    """``[(layer name, [module prefixes])]`` bottom to top, core's folder split into its steps."""
    layers = []
    for name, prefixes in folder_layers:
        if prefixes == ["core"]:
            layers += [(f"core: {', '.join(p for p in step if p) or 'the folder'}",
                        [f"core.{p}" if p else "core" for p in step]) for step in core_steps]
        else:
            layers.append((name, prefixes))
    return layers


LAYERS = _expand(FOLDER_LAYERS, CORE_STEPS)


# Course material shipped with the package: the grading kit's instructor modules are written as a teacher writes
# them (``import autodiff_viz as adv``), read by a grader's test cell and by the kit's demo, never by the house.
MATERIAL = ("grading/assignments",)


def _modules() -> dict:
    """``{dotted name relative to the package ('' for the face): path}``, course material left out."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if any(path.relative_to(PACKAGE).as_posix().startswith(m + "/") for m in MATERIAL):
            continue
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def layer_of(module: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix and module.startswith(prefix + ".")):
                if len(prefix) > best:
                    best, rank = len(prefix), i
    if rank is None:
        rank = len(LAYERS) - 1 if module == "" else None
    return rank


def _imported(module: str, node) -> list:
    """The package modules an import statement in ``module`` reaches.

    ``from P import a, b`` reaches each of ``P.a``, ``P.b`` that is a module, and ``P`` itself when a name
    is not a module (it reads ``P``'s attribute): ``from autodiff_viz import __version__`` reaches the face.
    """
    is_package = MODULES[module].name == "__init__.py"
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = [p for p in package if p]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package[:len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
        elif node.module and (node.module == "autodiff_viz" or node.module.startswith("autodiff_viz.")):
            base = node.module.split(".")[1:]
        else:
            return []
        base = ".".join(base)
        submodules = [f"{base}.{a.name}" if base else a.name for a in node.names]
        names = [n for n in submodules if n in MODULES]
        if len(names) < len(submodules):
            names.append(base)
    else:
        names = [a.name.split(".", 1)[1] if "." in a.name else "" for a in node.names
                 if a.name == "autodiff_viz" or a.name.startswith("autodiff_viz.")]
    return [n for n in names if n in MODULES]


def import_graph() -> dict:
    """``{module: [(imported module, line), ...]}`` over every import in the package."""
    graph = {}
    for module, path in MODULES.items():
        edges = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(module, node):
                    # a module reading a face of its own folder (core.rules.linalg: `from . import define`) is
                    # inside its layer; the package face is not: it is the top, and reading it runs back up
                    if target != module and not (target and module.startswith(target + ".")):
                        edges.append((target, node.lineno))
        graph[module] = edges
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target, _ in edges:
                if target not in index:
                    index[target] = low[target] = counter[0]
                    counter[0] += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in MODULES if layer_of(m) is None)
    assert not unplaced, f"modules with no layer in tests/test_architecture.py LAYERS: {unplaced}"


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles (each list imports itself in a circle): " + "; ".join(map(str, found))


def test_imports_run_down_the_layers():
    up = []
    for module, edges in import_graph().items():
        mine = layer_of(module)
        for target, line in edges:
            theirs = layer_of(target)
            if theirs is not None and mine is not None and theirs > mine:
                up.append(f"{module or '__init__'}:{line} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    assert not up, "imports that run up the layers:\n" + "\n".join(sorted(up))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_a_reader_can_hold(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= 1000, (f"{MODULES[module].relative_to(PACKAGE.parent)} has {lines} lines; "
                           "split it where its meaning splits")


def test_the_checker_sees_a_cycle_and_an_upward_import():
    """The checks themselves: a made-up graph with a cycle is reported, and an import from core to views is up."""
    assert cycles({"a": [("b", 1)], "b": [("c", 1)], "c": [("a", 1)], "d": [("a", 1)]}) == [["a", "b", "c"]]
    assert layer_of("core.engine") < layer_of("views.dot")
    assert layer_of("layers.base") < layer_of("models.model") < layer_of("views.widgets.state")


def test_a_module_is_placed_by_its_folder_and_reading_the_face_runs_up():
    """A module in a layer's folder takes the folder's layer from its path (a made-up ``records.new_thing``
    is a record, ``base.x.y`` is base); core keeps its inner order; and ``from .. import __version__`` in a
    Keras-style module is an edge to the face, the top layer: an import that runs back up."""
    assert layer_of("records.new_thing") == layer_of("records.tape") == layer_of("diagnosis.walk")
    assert layer_of("base.x.y") == layer_of("base.state") == 0
    assert layer_of("core.tensor") < layer_of("core.engine") < layer_of("core.rules.linalg") < layer_of("core.nn")
    node = ast.parse("from . import __version__, layers").body[0]
    assert set(_imported("saving", node)) == {"", "layers"}
    assert layer_of("") == len(LAYERS) - 1 > layer_of("saving")


def test_every_folder_of_the_package_is_a_layer_or_a_keras_style_package():
    """The folders are the layers: every folder under autodiff_viz/ has its place above, and every place named
    there is a folder on disk or a module at the root (no stale name standing for something moved)."""
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    roots = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    placed = {prefix for _, prefixes in FOLDER_LAYERS for prefix in prefixes if prefix}
    assert folders <= placed, f"folders with no layer in FOLDER_LAYERS: {sorted(folders - placed)}"
    stale = sorted(placed - folders - roots)
    assert not stale, f"FOLDER_LAYERS names what is not in autodiff_viz/: {stale}"


def test_the_root_holds_only_the_face_and_modules_that_mirror_keras():
    """At the root: the face and the public modules whose dotted path is Keras' or TensorFlow's (``adv.layers`` is
    ``keras.layers``, ``adv.math`` is ``tf.math``). A helper, a tool or a module no ``keras.*``/``tf.*`` path names
    lives in its layer's folder (``base/compiled.py``, ``keras_base/serialization.py``, ``utils/image_utils.py``,
    ``course/run_notebooks.py``)."""
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    roots = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    layer_folders = {"base", "core", "records", "diagnosis", "keras_base", "views", "bridges", "torch", "tf",
                     "grading", "course"}
    public = (roots | folders) - layer_folders
    extra, gone = sorted(public - set(ROOT_PUBLIC)), sorted(set(ROOT_PUBLIC) - public)
    assert not extra and not gone, f"at the root but mirroring no keras.*/tf.* module: {extra}; gone: {gone}"
    assert all(mirror.split(".")[0] in ("keras", "tf") and mirror.split(".")[1] == name
               for name, mirror in ROOT_PUBLIC.items())
    # the mirrored modules are real public ones, where TensorFlow and Keras are installed (CI's dev venv)
    if importlib.util.find_spec("tensorflow") and importlib.util.find_spec("keras"):
        code = ("import os; os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')\nimport keras, tensorflow as tf\n"
                f"for m in {sorted(ROOT_PUBLIC.values())!r}:\n"
                "    head, name = m.split('.')\n"
                "    assert getattr(keras if head == 'keras' else tf, name, None) is not None, m\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        assert done.returncode == 0, done.stderr[-2000:]


def test_readers_of_a_tape_go_through_its_public_record():
    """Diagnosis, exercise mode, traces, views and bridges read ``tape.record`` (:class:`TapeRecord`), not the
    tape's private containers; only the tape itself and the core that records into it touch those."""
    private = {"_nodes", "_tracked", "_watched", "_escapes", "_assigns", "_pauses", "_resets", "_start_id", "_end_id"}
    writers = {"tape", "core.engine", "core.tensor", "core.walks"}
    found = []
    for module, path in MODULES.items():
        if module in writers:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private and isinstance(node.value, ast.Name) \
                    and node.value.id in ("tape", "watcher", "other", "t"):
                found.append(f"{module}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not found, "read tape.record instead:\n" + "\n".join(found)
