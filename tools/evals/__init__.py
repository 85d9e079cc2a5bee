"""Evaluations: quality on labelled, real and blind data (docs/benchmarks.md)."""
