"""benchmarks/bfcl."""
