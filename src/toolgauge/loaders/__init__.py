"""Loaders: one module per source format; bad input raises DataError."""
