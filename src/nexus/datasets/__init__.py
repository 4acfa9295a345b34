"""Datasets: the labelled-queries reader and the BFCL builders, shared by gate training and the benchmarks.

Sits just above the registry: nothing here imports the gate, the benchmarks or the CLI.
"""

from nexus.datasets.folders import AMBIGUOUS_SOURCES, dataset_folders, read_datasets
from nexus.datasets.queries import (
    LabelledTurn, QueryFileError, family, overlapping, queries_fingerprint, query_hash, read_query_records, read_turns,
    tool_disjoint, tools_fingerprint,
)

__all__ = ["LabelledTurn", "QueryFileError", "dataset_folders", "family", "overlapping", "queries_fingerprint", "query_hash",
           "read_datasets", "read_query_records", "read_turns", "tool_disjoint", "tools_fingerprint"]
