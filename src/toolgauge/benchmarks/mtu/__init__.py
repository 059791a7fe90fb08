"""benchmarks/mtu."""
