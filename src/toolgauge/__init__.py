"""toolgauge: measure how well language models use tools and build them."""

__version__ = "0.1.0"
