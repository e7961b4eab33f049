"""Benchmarks of autodiff_viz against numpy, PyTorch, HIPS autograd and JAX (run: bash dev.sh bench)."""
