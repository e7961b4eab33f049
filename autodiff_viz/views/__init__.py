"""Views of a trace: DOT, SVG, the tape as a table, plots, the standalone page and the widgets.

See docs/architecture.md for where the views sit in the house.

Importing this package gives the records their drawing methods (:mod:`.methods`): ``Trace.to_dot``,
``Trace.to_svg``, ``tape.show``, ``comparison.show`` … The package face imports it, so they are always there.
"""
from . import methods as _methods

_methods.install()
