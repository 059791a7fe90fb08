"""Parsers that turn free-text model replies into tool calls."""
