"""tools: commands run over the package and its notebooks (``python -m autodiff_viz.tools.run_notebooks``); the top of
the house, above the face: nothing in the package imports them. See docs/architecture.md."""
