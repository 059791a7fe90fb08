"""Scoring functions: pure computations over loaded items and parsed predictions."""
