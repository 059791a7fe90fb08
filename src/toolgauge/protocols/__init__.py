"""Protocols: each wires a loader, an episode and its metrics into the shared engine."""
