"""How two runs' provenance differs, one line per difference: what ``compare`` warns about before its numbers.

Pure. Model options, benchmark options, data (by content: a data file moved but unchanged is no difference),
dataset revisions, epochs and the toolgauge version are compared; the model itself is not (that is usually
the point of the comparison).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolgauge.provenance import MODEL_OPTION_NAMES
from toolgauge.results import Provenance

# Benchmark options that the provenance reports elsewhere (model options, --limit): said once, not twice.
_REPORTED_APART = frozenset({*MODEL_OPTION_NAMES, "limit", "epochs"})


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _option_lines(what: str, a: Mapping[str, Any], b: Mapping[str, Any], skip: frozenset[str]) -> list[str]:
    return [
        f"{what} {key}: A {_shown(a.get(key))}, B {_shown(b.get(key))}"
        for key in sorted(set(a) | set(b))
        if key not in skip and a.get(key) != b.get(key)
    ]


def provenance_differences(a: Provenance | None, b: Provenance | None) -> list[str]:
    """One line per way runs A and B were made differently; a run without provenance is said once."""
    if a is None or b is None:
        missing = "A" if a is None else "B"
        return [f"run {missing} has no stored provenance (an older toolgauge): its settings cannot be compared"]
    lines = _option_lines("model option", a.model_options, b.model_options, frozenset())
    # Data paths are compared by content below: a path that moved but names the same bytes is no difference.
    ours, theirs = a.benchmark_options, b.benchmark_options
    paths = frozenset(
        k for k in set(ours) | set(theirs) if ours.get(k) in a.data_files and theirs.get(k) in b.data_files
    )
    lines += _option_lines("benchmark option", a.benchmark_options, b.benchmark_options, _REPORTED_APART | paths)
    if sorted(a.data_files.values()) != sorted(b.data_files.values()):
        lines.append(f"data files differ: A {_hashes(a.data_files)}, B {_hashes(b.data_files)}")
    lines += _option_lines("dataset", a.datasets, b.datasets, frozenset())
    if a.limit != b.limit:
        lines.append(f"limit: A {_shown(a.limit)}, B {_shown(b.limit)}")
    if a.epochs != b.epochs:
        lines.append(f"epochs: A {a.epochs}, B {b.epochs}")
    if a.toolgauge_version != b.toolgauge_version:
        lines.append(f"toolgauge version: A {a.toolgauge_version}, B {b.toolgauge_version}")
    return lines


def _hashes(files: Mapping[str, str]) -> str:
    if not files:
        return "none"
    return ", ".join(f"{path} (sha256 {digest[:12]})" for path, digest in sorted(files.items()))
