"""Traces: the plain-data record of a forward and backward pass (see :class:`Trace`)."""
from .build import build_trace, formula, local_jacobian
from .encoding import TraceFormatError
from .model import (JACOBIAN_LIMIT, SCHEMA, SCHEMA_VERSION, VALUE_LIMIT, Location, Mark, Summary, Trace,
                    TraceEdge, TraceNode, check_value_limit)

__all__ = ["Trace", "TraceNode", "TraceEdge", "TraceFormatError", "Mark", "Location", "Summary", "build_trace",
           "formula", "local_jacobian", "check_value_limit", "SCHEMA", "SCHEMA_VERSION",
           "VALUE_LIMIT", "JACOBIAN_LIMIT"]
