"""Datasets: the labelled-queries reader and the BFCL builders, shared by gate training and the benchmarks.

Sits just above the registry: nothing here imports the gate, the benchmarks or the CLI.
"""

from nexus.datasets.queries import LabelledTurn, QueryFileError, family, read_query_records, read_turns, tool_disjoint

__all__ = ["LabelledTurn", "QueryFileError", "family", "read_query_records", "read_turns", "tool_disjoint"]
