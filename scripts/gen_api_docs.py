"""Write docs/api.md's options tables from the options models (``python scripts/gen_api_docs.py``)."""

from __future__ import annotations

from pathlib import Path

from toolgauge.benchmarks.registry import specs
from toolgauge.options_docs import with_tables

PAGE = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def main() -> None:
    """Regenerate the tables in place."""
    PAGE.write_text(with_tables(PAGE.read_text(), specs()))


if __name__ == "__main__":
    main()
