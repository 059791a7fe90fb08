"""Sweeps: many models x benchmarks from one file, on the local executor or a Ray cluster (docs/sweeps.md)."""
