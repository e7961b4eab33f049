"""Traces: the plain-data record of a forward and backward pass (see :class:`Trace`)."""
from .model import (JACOBIAN_LIMIT, SCHEMA, SCHEMA_VERSION, VALUE_LIMIT, Location, Mark, Summary, Trace,
                    TraceEdge, TraceFormatError, TraceNode, build_trace, check_folder, check_value_limit, formula,
                    local_jacobian)

__all__ = ["Trace", "TraceNode", "TraceEdge", "TraceFormatError", "Mark", "Location", "Summary", "build_trace",
           "formula", "local_jacobian", "check_folder", "check_value_limit", "SCHEMA", "SCHEMA_VERSION",
           "VALUE_LIMIT", "JACOBIAN_LIMIT"]
