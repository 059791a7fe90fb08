"""benchmarks/wildtoolbench."""
