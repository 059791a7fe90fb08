"""What reading calls out of reply text shares across benchmarks (each benchmark keeps its own parser)."""
