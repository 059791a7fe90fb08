"""Statistics over scored units: spread of headline metrics and paired comparison of two runs."""
