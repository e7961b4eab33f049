"""Views of a trace: DOT, SVG, the tape as a table, plots, the standalone page and the widgets (see ARCHITECTURE.md)."""
