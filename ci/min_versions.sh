#!/usr/bin/env bash
# The minimum-versions job: the lowest versions pyproject.toml declares, in their own venv (.venv-min).
#
# The oldest Python the package declares (3.10, when this machine has it), numpy, ipywidgets, anywidget and
# graphviz at their floors, and TensorFlow 2.16 (tensorflow-cpu) with the oldest Keras 3 the bridge accepts
# (ci/constraints-min.txt), installed first, as a user's environment would have them; then the package with
# its [tf] extra, as docs/install.md says, which must change none of them. Then the core tests and the
# TensorFlow bridge tests run there. PyTorch is not in this job: only torch 2.13's CPU build can be installed
# on this machine without downloading gigabytes; the bound in pyproject.toml is kept honest by its API comment.
#
#   bash ci/min_versions.sh [PYTEST ARGS...]       (VENV_MIN=... for another folder)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV_MIN=${VENV_MIN:-.venv-min}
PY="$VENV_MIN/bin/python"
say() { printf '\033[1m[min]\033[0m %s\n' "$*" >&2; }

# the core (tensor, rules, tape, transforms, layers, models, saving, drawings, diagnosis) and the TensorFlow
# bridge; the files that need torch, a browser, Jupyter or the network stay with the main suite
TESTS=(
    tests/test_tensor.py tests/test_tensor_parity.py tests/test_tape.py tests/test_tape_record.py
    tests/test_rules.py tests/test_rule_fast_paths.py tests/test_linalg.py tests/test_numpy_surface.py
    tests/test_numpy_function.py tests/test_transforms.py tests/test_anomaly.py tests/test_gradcheck_edges.py
    tests/test_compare.py tests/test_partly_lost.py tests/test_explain.py tests/test_diagnosis_trace_edges.py
    tests/test_trace.py tests/test_trace_json.py tests/test_dot.py tests/test_minidot_legend.py
    tests/test_layers.py tests/test_layers_conv.py tests/test_layers_recurrent.py tests/test_functional.py
    tests/test_models.py tests/test_saving.py tests/test_losses.py tests/test_optimizers.py
    tests/test_keras_ops.py tests/test_image_geometry.py tests/test_threads.py tests/test_random.py tests/test_plots.py
    tests/test_tf_bridge.py tests/test_tf_bridge_diagnosis.py tests/test_tf_export.py tests/test_tf_math.py
    tests/test_picture_bridges_tf.py tests/test_explain_tf_guide.py tests/test_guide_tf_autodiff_intro.py
    tests/test_guide_tf_advanced_autodiff.py tests/test_why_none_corpus_keras.py tests/test_variable_names_keras.py
    tests/test_tf_letgo.py tests/test_tf_user_line.py tests/test_install_smoke.py
)

# tests whose reference is an API only the newest versions have (numpy 2's linalg.vector_norm, pinv(rtol=),
# cholesky(upper=), asarray(copy=); scipy; the newest Keras' ops names and optimizer slot names; Keras 3.7's
# map_coordinates in constant mode fails on CPU for coordinates out of range): the package's
# own behaviour they check is tested at the floors by the other tests of their files
DESELECT=(
    tests/test_linalg.py::test_values_match_numpy tests/test_linalg.py::test_pinv_takes_numpys_cutoff_arguments
    tests/test_linalg.py::test_condition_number_and_array_api_names_match_numpy
    tests/test_numpy_surface.py::test_vector_norm_is_np_linalg_vector_norm
    tests/test_numpy_surface.py::test_gelu_hard_sigmoid_selu_follow_keras
    tests/test_tensor_parity.py::test_np_asarray_is_a_read_only_view_and_np_array_a_writable_copy
    tests/test_keras_ops.py::test_every_adv_ops_name_is_a_keras_ops_name
    tests/test_keras_ops.py::test_functional_conv_and_pools_match_tf_nn_values_and_gradients
    tests/test_keras_ops.py::test_more_keras_ops_match_keras_ops
    tests/test_keras_ops.py::test_more_keras_ops_gradients_match_tensorflow
    tests/test_keras_ops.py::test_keras_ops_namespaces_hold_the_same_functions
    tests/test_keras_ops.py::test_keras_ops_image_matches_keras
    "tests/test_image_geometry.py::test_map_coordinates_matches_keras_values_and_gradients[constant-0]"
    "tests/test_image_geometry.py::test_map_coordinates_matches_keras_values_and_gradients[constant-1]"
    tests/test_variable_names_keras.py::test_optimizer_slots_are_named_as_keras_3
)

oldest_python() {  # the oldest Python the package declares (3.10) when this machine has one, else python3
    local candidate
    for candidate in python3.10 $(pyenv root 2>/dev/null)/versions/3.10*/bin/python3.10 python3; do
        if "$candidate" -c "import sys; assert sys.version_info >= (3, 10)" 2>/dev/null; then
            echo "$candidate"; return
        fi
    done
}
python=$(oldest_python)
hash=$(cat ci/constraints-min.txt pyproject.toml setup.py | sha1sum | cut -c1-12)
if [ ! -f "$VENV_MIN/.installed-$hash" ]; then
    rm -rf "$VENV_MIN"
    say "creating $VENV_MIN with $python ($("$python" --version))"
    "$python" -m venv "$VENV_MIN"
    say "installing the floors first, as a user's environment has them (ci/constraints-min.txt)"
    "$PY" -m pip install -q --disable-pip-version-check -c ci/constraints-min.txt \
        numpy ipywidgets anywidget graphviz tensorflow-cpu keras scipy pytest pytest-timeout hypothesis 2>&1 \
        | grep -v "^WARNING: Location" >&2 || true
    "$PY" -m pip freeze > "$VENV_MIN/before.txt"
    say "installing autodiff_viz[tf] beside them (plain Python)"
    AUTODIFF_VIZ_PURE=1 "$PY" -m pip install -q --disable-pip-version-check -e ".[tf]" 2>&1 \
        | grep -v "^WARNING: Location" >&2 || true
    "$PY" -m pip freeze | grep -v -i -E "^-e |autodiff" > "$VENV_MIN/after.txt"
    if ! diff "$VENV_MIN/before.txt" "$VENV_MIN/after.txt" >&2; then
        say "FAILED: installing autodiff_viz[tf] changed the distributions above"; exit 1
    fi
    touch "$VENV_MIN/.installed-$hash"
fi

say "checking $VENV_MIN holds the declared floors"
"$PY" - <<'EOF'
import sys
from importlib import metadata
wrong = []
for line in open("ci/constraints-min.txt"):
    line = line.split("#")[0].strip()
    if line:
        name, want = line.split("==")
        have = metadata.version(name)
        if have != want:
            wrong.append(f"{name} {have} (want {want})")
import autodiff_viz
assert autodiff_viz.__file__.startswith(__import__("os").getcwd()), autodiff_viz.__file__
print(f"[min] Python {sys.version.split()[0]}; " + ", ".join(
    f"{n} {metadata.version(n)}" for n in ("numpy", "ipywidgets", "anywidget", "graphviz", "tensorflow-cpu", "keras")),
    file=sys.stderr)
sys.exit(f"[min] not at the floor: {wrong}" if wrong else 0)
EOF

say "the core and TensorFlow bridge tests at the minimum versions"
AUTODIFF_VIZ_PURE=1 exec "$PY" -m pytest -q -p no:cacheprovider "${TESTS[@]}" "${DESELECT[@]/#/--deselect=}" "$@"
