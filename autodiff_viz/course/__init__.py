"""course: commands run over the course's notebooks (``python -m autodiff_viz.course.run_notebooks``); the top of
the house, above the face: nothing in the package imports them. See docs/architecture.md."""
