"""Metrics more than one benchmark scores with (pure: no engine, store, models or tools)."""
