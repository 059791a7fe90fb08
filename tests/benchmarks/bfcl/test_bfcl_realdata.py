"""BFCL on the real v4 data: gold ceilings, the seven defective entries, the irrelevance loophole.

The expected counts are those bfcl-eval 2026.3.23 gives on the same outputs (measured with
``benchmarks/bfcl_agreement.py``, which includes every gold output; see
docs/benchmarks/bfcl-agreement.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgauge.benchmarks.bfcl.io import (
    IRRELEVANCE_GOLD_TEXT,
    assistant_turn_to_bfcl_output,
    bfcl_gold_turn,
    bfcl_native_messages,
    bfcl_prompt_messages,
    bfcl_tools,
)
from toolgauge.benchmarks.bfcl.loader import BfclEntry, load_bfcl
from toolgauge.benchmarks.bfcl.metrics import score_bfcl, unsatisfiable_reason

pytestmark = pytest.mark.realdata

CATEGORIES = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "irrelevance",
]
CEILING = {
    "simple_python": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 198,
    "live_simple": 256,
    "live_multiple": 1050,
    "irrelevance": 240,
}
UNSATISFIABLE = {
    "live_simple_106-63-0",
    "live_simple_112-68-0",
    "live_multiple_507-149-4",
    "live_multiple_964-207-0",
    "live_multiple_862-181-3",
    "parallel_multiple_12",
    "parallel_multiple_26",
}


@pytest.fixture(scope="module")
def entries(bfcl_dir: Path) -> list[BfclEntry]:
    return load_bfcl(bfcl_dir, CATEGORIES)


@pytest.mark.parametrize(
    ("style", "underscore_to_dot", "java", "javascript"),
    [("prompt", False, 86, 50), ("native", True, 89, 50), ("native", False, 89, 50)],
)
def test_gold_ceiling(
    entries: list[BfclEntry], style: str, underscore_to_dot: bool, java: int, javascript: int
) -> None:
    outputs = {
        e.id: assistant_turn_to_bfcl_output(bfcl_gold_turn(e, style=style, underscore_to_dot=underscore_to_dot), style)  # type: ignore[arg-type]
        for e in entries
    }
    results = score_bfcl(entries, outputs, underscore_to_dot=underscore_to_dot).results
    correct = {name: results.value("correct", name, by="category") for name in results.groups("category")}
    assert correct == {**CEILING, "simple_java": java, "simple_javascript": javascript}
    assert results.groups("category") == CATEGORIES
    assert results.value("unsatisfiable") == 7
    assert results.value("irrelevance_correct_but_unparsable") == 0  # gold is a plain refusal
    simple = (1 + java / 100 + javascript / 50) / 3
    assert results.value("accuracy", "simple", by="aggregate") == pytest.approx(simple)
    assert results.value("accuracy", "non_live", by="aggregate") == pytest.approx((simple + 1 + 1 + 198 / 200) / 4)
    assert results.value("accuracy", "live", by="aggregate") == pytest.approx((256 + 1050) / (258 + 1053))
    assert results.value("accuracy", "irrelevance", by="aggregate") == 1.0


def test_unsatisfiable_flags_exactly_the_known_entries(entries: list[BfclEntry]) -> None:
    assert {e.id for e in entries if unsatisfiable_reason(e)} == UNSATISFIABLE


def test_irrelevance_loophole_is_counted(entries: list[BfclEntry]) -> None:
    irrelevance = [e for e in entries if e.category == "irrelevance"][:30]
    outputs: dict[str, str | list[dict[str, object]]] = {}
    for index, e in enumerate(irrelevance):
        name = e.functions[0]["name"]
        if index < 10:  # malformed tool-call attempts: BFCL counts them as correct abstentions
            outputs[e.id] = f'<tool_call>{{"name": "{name}", "arguments": {{}}</tool_call>'
        elif index < 20:
            outputs[e.id] = IRRELEVANCE_GOLD_TEXT
        else:  # a real call: wrong
            outputs[e.id] = f"[{name}()]"
    results = score_bfcl(irrelevance, outputs, underscore_to_dot=False).results
    assert results.value("correct", "irrelevance", by="category") == 20
    loophole = [(m.name, m.value, m.n) for m in results.metrics if m.name.startswith("irrelevance_")]
    assert loophole == [("irrelevance_correct", 20, 30), ("irrelevance_correct_but_unparsable", 10, 30)]


def test_model_facing_views(entries: list[BfclEntry]) -> None:
    entry = next(e for e in entries if e.id == "simple_python_1")
    assert entry.functions[0]["name"] == "math.factorial"
    tools = bfcl_tools(entry, underscore_to_dot=True)
    assert tools[0].name == "math_factorial"
    assert tools[0].parameters["type"] == "object"
    assert tools[0].description.endswith("Note that the provided function is in Python 3 syntax.")
    prompt = bfcl_prompt_messages(entry)
    assert prompt[0].role == "system" and '"name": "math.factorial"' in (prompt[0].content or "")
    assert [m.role for m in bfcl_native_messages(entry)] == ["user"]
    float_entry = next(
        e for e in entries if any(p.get("type") == "float" for p in e.functions[0]["parameters"]["properties"].values())
    )
    float_tool = bfcl_tools(float_entry, underscore_to_dot=False)[0]
    assert any(
        p.get("format") == "float" and p["type"] == "number" for p in float_tool.parameters["properties"].values()
    )
