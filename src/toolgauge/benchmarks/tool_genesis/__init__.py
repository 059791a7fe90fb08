"""benchmarks/tool_genesis."""
