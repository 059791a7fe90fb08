"""``python -m toolgauge.cli``."""

from toolgauge.cli import main

main()
