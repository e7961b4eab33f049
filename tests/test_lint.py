"""The code is clean under the project's linter (ruff, configured in pyproject.toml), as CI checks it."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_finds_nothing_in_the_package_tests_benchmarks_and_examples():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "autodiff_viz", "tests", "benchmarks", "examples"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check (see [tool.ruff] in pyproject.toml):\n{done.stdout}{done.stderr}"
