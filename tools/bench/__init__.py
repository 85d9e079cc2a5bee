"""Benchmarks: speed and memory, median and p95 (docs/benchmarks.md)."""
