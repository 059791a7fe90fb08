"""The official benchmark datasets: a pinned registry, the local cache, pull and verify (``toolgauge data``)."""
