"""Tool-Genesis metrics with a tiny deterministic embedder.

Every expected value is derived by hand from the official rules (subway-jack/Tool-Genesis,
src/env_evaluation/l1_protocol_compliance.py, l2_semantic_correctness.py, execute_task.py,
scripts/experiment_journal/eval_oracle_sr.py); the derivation is in the comment next to it.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolgauge.benchmarks.tool_genesis.metrics import GenesisServerScore, genesis_metrics, genesis_server_score
from toolgauge.benchmarks.tool_genesis.metrics.compliance import (
    Verdict,
    check_compliance,
    check_mcp_valid,
    make_strictly_compliant,
)
from toolgauge.benchmarks.tool_genesis.metrics.schema import SchemaMatch, match_schemas, route_unit_test, tool_text
from toolgauge.benchmarks.tool_genesis.metrics.task_success import oracle_normalized, parse_rating, task_scores
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import (
    UnitTestCall,
    UnitTestScore,
    extract_text,
    reference_actual_text,
    score_unit_test,
    score_unit_tests,
    structure_f1,
    summarise_unit_tests,
)
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import UnitTestSummary as UTSummary
from toolgauge.results import EvalResults

DIM = 512


class FakeEmbedder:
    """Texts given a vector in `table` get it; every other text gets its own fresh basis vector.

    So two different unknown texts have cosine 0, a text with itself 1, and chosen pairs any cosine
    we write into the table.
    """

    def __init__(self, table: dict[str, Sequence[float]] | None = None):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in (table or {}).items()}
        self.fresh: dict[str, np.ndarray] = {}
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        rows = []
        for text in texts:
            if text in self.table:
                vec = np.zeros(DIM, dtype=np.float32)
                vec[: len(self.table[text])] = self.table[text]
            else:
                if text not in self.fresh:
                    assert len(self.fresh) < DIM - 8, "FakeEmbedder ran out of fresh basis vectors"
                    vec = np.zeros(DIM, dtype=np.float32)
                    vec[DIM - 1 - len(self.fresh)] = 1.0  # from the far end, away from table vectors
                    self.fresh[text] = vec
                vec = self.fresh[text]
            norm = np.linalg.norm(vec)
            rows.append(vec / norm if norm else vec)
        return np.stack(rows) if rows else np.zeros((0, DIM), dtype=np.float32)


def unit(cos: float, axis: int = 0) -> list[float]:
    """A 2-D unit vector at cosine `cos` from the basis vector e_axis (axis 0 or 1 of a 2-D plane)."""
    other = math.sqrt(max(0.0, 1 - cos * cos))
    return [cos, other] if axis == 0 else [other, cos]


def tool(name: str, args: dict[str, str], *, key: str = "input_schema") -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} tool",
        key: {
            "type": "object",
            "properties": {a: {"type": "string", "description": d} for a, d in args.items()},
            "required": [],
            "additionalProperties": False,
        },
    }


# ----------------------------------------------------------------------------------------------- L1


def test_minimal_payload_is_compliant():
    assert check_compliance({"tools": [tool("a", {"x": "X"})]}) == Verdict(ok=True)


@pytest.mark.parametrize(
    ("mutate", "reason_part"),
    [
        (lambda p: p.update(tools=[]), "empty"),
        (lambda p: p["tools"][0].update(name=3), "`name`"),
        (lambda p: p["tools"][0].pop("description"), "`description`"),
        (lambda p: p["tools"][0].update(parameters={}), "`parameters` is forbidden"),
        (lambda p: p["tools"][0]["input_schema"]["properties"].update(y={"anyOf": [{"type": "string"}]}), "anyOf"),
        (lambda p: p["tools"][0]["input_schema"].pop("additionalProperties"), "without `additionalProperties`"),
        (lambda p: p["tools"][0]["input_schema"].update(additionalProperties=True), "is not false"),
        (lambda p: p["tools"][0]["input_schema"].pop("required"), "without `required`"),
        (lambda p: p["tools"][0]["input_schema"].update(required=["zz"]), "not in properties"),
        (lambda p: p["tools"][0]["input_schema"].update(items={"type": "string"}), "object with `items`"),
        (lambda p: p["tools"][0]["input_schema"]["properties"].update(y={"type": "array"}), ".y.items: not an object"),
        (
            lambda p: p["tools"][0]["input_schema"]["properties"].update(
                y={"type": "array", "items": {"type": "string"}, "required": []}
            ),
            "array with `required`",
        ),
        (
            lambda p: p["tools"][0]["input_schema"]["properties"].update(y={"type": "string", "items": {}}),
            "string with `items`",
        ),
        (lambda p: p["tools"][0]["input_schema"]["properties"].update(y={"type": ["string", "null"]}), "not one type"),
    ],
)
def test_each_official_compliance_rule_fails_with_its_reason(mutate, reason_part):
    payload = {"tools": [tool("a", {"x": "X"})]}
    mutate(payload)
    verdict = check_compliance(payload)
    assert not verdict.ok
    assert reason_part in (verdict.reason or "")


def test_empty_input_schema_falls_through_to_inputSchema_like_the_official_or():
    # official: `t.get("input_schema") or t.get("inputSchema")` -> an empty dict is falsy
    good = tool("a", {"x": "X"}, key="inputSchema")
    good["input_schema"] = {}
    assert check_compliance({"tools": [good]}).ok


def test_nested_objects_need_the_full_object_keys():
    payload = {"tools": [tool("a", {})]}
    payload["tools"][0]["input_schema"]["properties"]["o"] = {"type": "object", "properties": {}}
    assert "without `required`" in (check_compliance(payload).reason or "")
    payload["tools"][0]["input_schema"]["properties"]["o"].update(required=[], additionalProperties=False)
    assert check_compliance(payload).ok


def test_mcp_validity():
    reference_style = {
        "tools": [
            {
                "name": "get",
                "description": "d",
                "input_schema": {
                    "type": "object",
                    "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
                    "required": [],
                },
            }
        ]
    }
    assert not check_compliance(reference_style).ok  # anyOf + no additionalProperties
    assert check_mcp_valid(reference_style).ok
    broken = copy.deepcopy(reference_style)
    broken["tools"][0]["input_schema"]["properties"]["x"] = {"type": "strin"}  # not a JSON type
    verdict = check_mcp_valid(broken)
    assert not verdict.ok and "not a valid JSON Schema" in (verdict.reason or "")
    not_object = {"tools": [{"name": "a", "inputSchema": {"type": "string"}}]}
    assert 'is not "object"' in (check_mcp_valid(not_object).reason or "")
    duplicate = {"tools": [tool("a", {}), tool("a", {})]}
    assert "duplicate" in (check_mcp_valid(duplicate).reason or "")
    assert not check_mcp_valid({"tools": []}).ok
    assert not check_mcp_valid([]).ok


def test_make_strictly_compliant():
    original = {
        "name": "get_coauthors",
        "description": "d",
        "input_schema": {
            "type": "object",
            "title": "args",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "field": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Field"},
                "tags": {"type": "array", "items": {}},
                "extra": {"type": "object", "additionalProperties": True},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
            },
            "required": ["name", "ghost"],
        },
    }
    before = copy.deepcopy(original)
    strict = make_strictly_compliant(original)
    assert original == before  # not modified
    assert check_compliance({"tools": [strict]}).ok
    props = strict["input_schema"]["properties"]
    assert props["field"] == {"type": "string", "title": "Field"}  # anyOf [T, null] -> T, default null dropped
    assert props["limit"] == {"type": "integer", "default": 5}  # a non-null default stays
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}  # typeless items become strings
    assert props["extra"] == {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    assert strict["input_schema"]["required"] == ["name"]  # "ghost" is not a property
    assert strict["input_schema"]["additionalProperties"] is False


@pytest.mark.realdata
def test_reference_schemas_fail_the_official_check_but_are_valid_mcp_and_pass_after_the_transform(data_dir: Path):
    servers = json.loads((data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_text(encoding="utf-8"))
    assert servers
    for server in servers:
        payload = {"tools": server["tool_definitions"]}
        assert not check_compliance(payload).ok, server["server_slug"]
        assert check_mcp_valid(payload).ok, server["server_slug"]
        strict = {"tools": [make_strictly_compliant(t) for t in server["tool_definitions"]]}
        assert check_compliance(strict).ok, (server["server_slug"], check_compliance(strict).reason)
        assert check_mcp_valid(strict).ok, server["server_slug"]


# ----------------------------------------------------------------------------------------------- L2


def test_tool_text_is_name_plus_sorted_arg_descriptions():
    assert tool_text("t", [("b", "B"), ("a", "")]) == "t a: b:B"
    assert tool_text("t", []) == "t"


def weather_case() -> tuple[list[dict], list[dict], FakeEmbedder]:
    gold = [tool("get_weather", {"city": "City name"}), tool("get_forecast", {"city": "City", "days": "Days ahead"})]
    pred = [
        tool("GetWeather", {"city": "City name"}),
        tool("fetch_forecast", {"location": "City to forecast", "num_days": "Number of days"}),
        tool("delete_all", {"really": "Are you sure"}),
    ]
    table = {
        # tools: fetch_forecast ~ get_forecast at cosine 0.8 (2-D plane on axes 0/1)
        "get_forecast city:City days:Days ahead": [1.0, 0.0],
        "fetch_forecast location:City to forecast num_days:Number of days": unit(0.8),
        # args of that pair: location ~ city 0.9, num_days ~ days 0.8, crosses near 0
        "city City": [0, 0, 1.0, 0.0],
        "location City to forecast": [0, 0, 0.9, math.sqrt(1 - 0.81)],
        "days Days ahead": [0, 0, 0, 0, 1.0, 0.0],
        "num_days Number of days": [0, 0, 0, 0, 0.8, 0.6],
    }
    return pred, gold, FakeEmbedder(table)


def test_schema_f1_exact_pass_hungarian_and_unmatched_prediction():
    pred, gold, embedder = weather_case()
    match = match_schemas(pred, gold, embedder, "reference")
    # GetWeather -> get_weather by the exact pass (lower, "_" removed); fetch_forecast -> get_forecast at 0.8;
    # delete_all is orthogonal to everything (cosine 0 < 0.3) and stays unmatched.
    assert match.tool_map == {"GetWeather": "get_weather", "fetch_forecast": "get_forecast"}
    # tool F1: pred {get_weather, get_forecast, P::delete_all} vs gold {get_weather, get_forecast}: P 2/3, R 1 -> 0.8
    assert match.tool_f1 == pytest.approx(0.8)
    # args: gold of matched tools {get_weather.city, get_forecast.city, get_forecast.days}; all three matched
    # ("city City name" is the same text on both sides -> cosine 1); delete_all.really is ignored (tool unmatched).
    assert match.arg_maps == {
        "get_weather": {"city": "city"},
        "get_forecast": {"location": "city", "num_days": "days"},
    }
    assert match.args_f1 == pytest.approx(1.0)
    assert match.schema_f1 == pytest.approx(0.9)  # (0.8 + 1) / 2


def test_identical_argument_name_with_other_description_stays_unmatched_in_reference_only():
    gold = [tool("search", {"q": "search query"})]
    pred = [tool("search", {"q": "the text to look for"})]
    # "q search query" and "q the text to look for" are unknown texts -> cosine 0 -> below 0.3
    ref = match_schemas(pred, gold, FakeEmbedder(), "reference")
    # tools 1.0 (exact); args: pred {P::search.q} vs gold {search.q} -> 0; schema (1 + 0) / 2
    assert (ref.tool_f1, ref.args_f1, ref.schema_f1) == (1.0, 0.0, 0.5)
    strict = match_schemas(pred, gold, FakeEmbedder(), "strict")
    assert (strict.tool_f1, strict.args_f1, strict.schema_f1) == (1.0, 1.0, 1.0)


def test_args_of_unmatched_reference_tools_are_ignored():
    gold = [tool("a", {"x": "X"}), tool("b", {"y": "Y"})]
    pred = [tool("a", {"x": "X"})]
    match = match_schemas(pred, gold, FakeEmbedder(), "reference")
    # tools: pred {a} vs gold {a, b}: P 1, R 1/2 -> 2/3; args: gold counts only a.x (b unmatched) -> 1
    assert match.tool_f1 == pytest.approx(2 / 3)
    assert match.args_f1 == pytest.approx(1.0)
    assert match.schema_f1 == pytest.approx((2 / 3 + 1) / 2)


@pytest.mark.parametrize(("cos", "matched"), [(0.29, False), (0.31, True)])
def test_tool_threshold(cos, matched):
    gold = [tool("alpha", {})]
    pred = [tool("beta", {})]
    embedder = FakeEmbedder({"alpha": [1.0, 0.0], "beta": unit(cos)})
    match = match_schemas(pred, gold, embedder, "reference")
    assert (match.tool_map == {"beta": "alpha"}) is matched
    # matched: tool F1 1 and no args on either side -> args F1 0 -> schema 0.5; unmatched: everything 0
    assert match.schema_f1 == (0.5 if matched else 0.0)


def test_hungarian_maximises_the_total_not_greedy():
    # Gram matrix of unit vectors [p1, p2, g1, g2]: greedy would take p1-g1 (0.9) then p2-g2 (0.3) = 1.2;
    # the maximum-weight assignment is p1-g2 (0.8) + p2-g1 (0.85) = 1.65.
    gram = np.array(
        [
            [1.0, 0.7, 0.9, 0.8],
            [0.7, 1.0, 0.85, 0.3],
            [0.9, 0.85, 1.0, 0.6],
            [0.8, 0.3, 0.6, 1.0],
        ]
    )
    vectors = np.linalg.cholesky(gram)  # rows have the wanted dot products
    texts = ["p1", "p2", "g1", "g2"]
    embedder = FakeEmbedder({t: vectors[i] for i, t in enumerate(texts)})
    match = match_schemas([tool("p1", {}), tool("p2", {})], [tool("g1", {}), tool("g2", {})], embedder)
    assert match.tool_map == {"p1": "g2", "p2": "g1"}


def test_tools_without_arguments_cap_reference_schema_f1_at_one_half():
    # datetime-context-provider's only tool takes no arguments. tool F1 1; both argument multisets are
    # empty -> official F1 of empty sets = 0 -> schema (1 + 0) / 2 = 0.5 even against itself; strict: 1.
    tools = [tool("get_time", {})]
    assert match_schemas(tools, tools, FakeEmbedder(), "reference").schema_f1 == 0.5
    assert match_schemas(tools, tools, FakeEmbedder(), "strict").schema_f1 == 1.0
    # strict still penalises predicted arguments the reference tool does not have (precision 0)
    extra = [tool("get_time", {"tz": "Time zone"})]
    assert match_schemas(extra, tools, FakeEmbedder(), "strict").schema_f1 == 0.5


def test_empty_sides_score_zero():
    assert match_schemas([], [tool("a", {})], FakeEmbedder()).schema_f1 == 0.0
    assert match_schemas([tool("a", {})], [], FakeEmbedder()).schema_f1 == 0.0


def test_route_unit_test_renames_and_drops_unmapped_args():
    match = SchemaMatch(
        tool_f1=1, args_f1=1, schema_f1=1, tool_map={"fetch": "get"}, arg_maps={"get": {"location": "city"}}
    )
    assert route_unit_test("get", {"city": "Paris", "units": "C"}, match) == ("fetch", {"location": "Paris"})
    assert route_unit_test("get", {"units": "C"}, match) == ("fetch", {})
    assert route_unit_test("other", {}, match) is None
    # eleven official tests hold a malformed JSON string; the official sends {} (non-dict -> no arguments)
    assert route_unit_test("get", '{"city": "Paris"}}', match) == ("fetch", {})


# ----------------------------------------------------------------------------------------------- L3


def text_content(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "annotations": None}]


def test_extract_text_reduces_like_the_official():
    assert extract_text('{"result": "ok"}') == "ok"
    assert extract_text('{"b": 1, "a": 2}') == '{"a": 2, "b": 1}'  # re-dumped with sorted keys
    assert extract_text('{"result": true}') == "True"  # str() of the Python value
    assert extract_text('{"result": null, "message": "hi"}') == "hi"  # empty reduction -> next key
    assert extract_text('{"content": {"text": "deep"}}') == "deep"
    assert extract_text("[1, 2]") == "[1, 2]"
    assert extract_text("  {broken ") == "{broken"
    assert extract_text("plain") == "plain"


def test_reference_actual_text_is_json_dumps_of_the_content_list():
    assert reference_actual_text(text_content("é")) == '[{"type": "text", "text": "é", "annotations": null}]'
    long = reference_actual_text(text_content("x" * 2500))
    assert '"text": "' + "x" * 2000 + '... [500 chars omitted]"' in long  # the bridge's per-string cap


def test_structure_f1():
    # actual paths {a, a.b, a.b[0], a.b[1], a.b[1].c}, expected {a, a.b, d}: 2 hits, P 2/5, R 2/3 -> F1 0.5
    assert structure_f1('{"a": {"b": [1, {"c": 2}]}}', '{"a": {"b": []}, "d": 1}') == pytest.approx(0.5)
    assert structure_f1("[]", "{}") == 1.0  # both without paths
    assert structure_f1("42", '{"a": 1}') == 0.0  # one without paths
    assert structure_f1("Hello", "hello") == 1.0  # not JSON: lower-case equality
    assert structure_f1("Hello", "bye") == 0.0
    assert structure_f1("null", "null") == 1.0  # json null counts as "not parsed" -> text equality


def test_reference_unit_test_error_gate_ignores_isError():
    e = FakeEmbedder()
    bad = score_unit_test(text_content("Error: city not found"), False, None, '{"temp": 20}', e, "reference")
    assert (bad.hard_pass, bad.soft) == (False, 0.0)
    shouted = score_unit_test(text_content("FAILED"), False, None, "ok", e, "reference")
    assert not shouted.hard_pass  # case-insensitive
    both = score_unit_test(text_content("Error: x"), False, None, "Error: y", e, "reference")
    assert both.hard_pass  # the expected output carries an error word too
    flagged = score_unit_test(text_content("fine"), True, None, "fine", e, "reference")
    assert flagged.hard_pass  # isError is never consulted


def test_reference_soft_score_of_a_perfect_text_answer():
    # actual '[{"type": "text", "text": "done", "annotations": null}]' is JSON, expected "done" is not ->
    # struct = lower-case equality = 0; embed = cosine of the two lower-cased texts = 0.6 (table) ->
    # soft = 0.5 * 0 + 0.5 * 0.6 = 0.3
    actual = '[{"type": "text", "text": "done", "annotations": null}]'
    e = FakeEmbedder({actual: [1.0, 0.0], "done": unit(0.6)})
    score = score_unit_test(text_content("done"), False, None, "done", e, "reference")
    assert score.hard_pass and score.struct_f1 == 0.0
    assert score.embed_sim == pytest.approx(0.6, abs=1e-6)
    assert score.soft == pytest.approx(0.3, abs=1e-6)


def test_call_failure_scores_zero():
    score = score_unit_test(None, False, "timed out after 30 s", "x", FakeEmbedder(), "reference")
    assert (score.hard_pass, score.soft) == (False, 0.0) and "timed out" in (score.reason or "")


def test_strict_unit_tests():
    e = FakeEmbedder()
    same = score_unit_test(text_content("done"), False, None, "done", e, "strict")
    assert same.hard_pass and same.soft == 1.0  # struct: text equality 1; embed: equal texts 1
    reordered = score_unit_test(text_content('{"b":1,"a":2}'), False, None, '{\n "a": 2, "b": 1}', e, "strict")
    assert reordered.hard_pass  # equal after JSON normalisation
    differs = score_unit_test(text_content('{"a": 3, "b": 1}'), False, None, '{"a": 2, "b": 1}', e, "strict")
    # same key paths -> struct 1; different unknown texts -> cosine 0; soft 0.5 but no hard pass
    assert not differs.hard_pass and differs.soft == pytest.approx(0.5)
    error_back = score_unit_test(
        text_content("Error executing tool: not found"), True, None, "Error: not found", e, "strict"
    )
    assert error_back.hard_pass
    no_error = score_unit_test(text_content("{}"), False, None, "Error: not found", e, "strict")
    assert not no_error.hard_pass and "expected an error" in (no_error.reason or "")
    flagged = score_unit_test(text_content('{"a": 1}'), True, None, '{"a": 1}', e, "strict")
    assert not flagged.hard_pass and flagged.soft == 0.0  # isError counts in strict


def test_batch_scoring_equals_one_by_one_and_embeds_once():
    calls = [
        UnitTestCall(content=text_content("done"), expected="done"),
        UnitTestCall(content=text_content("Error: boom"), expected='{"a": 1}'),
        UnitTestCall(call_failure="timed out", expected="x"),
        UnitTestCall(content=text_content('{"a": 2}'), expected='{"a": 1}'),
    ]
    for variant in ("reference", "strict"):
        one_by_one = [
            score_unit_test(c.content, c.is_error, c.call_failure, c.expected, FakeEmbedder(), variant) for c in calls
        ]
        batch_embedder = FakeEmbedder()
        assert score_unit_tests(calls, batch_embedder, variant) == one_by_one
        assert batch_embedder.calls >= 1


def test_summarise_unit_tests():
    scores = [
        UnitTestScore(hard_pass=True, soft=0.5, struct_f1=0, embed_sim=1),
        UnitTestScore(hard_pass=False, soft=0.0, struct_f1=0, embed_sim=0),
    ]
    ref = summarise_unit_tests(scores, not_built=2, variant="reference")
    assert (ref.ut_soft, ref.ut_hard, ref.total) == (0.25, 0.5, 2)  # unbuilt tests dropped
    strict = summarise_unit_tests(scores, not_built=2, variant="strict")
    assert (strict.ut_soft, strict.ut_hard, strict.total) == (0.125, 0.25, 4)  # unbuilt tests fail
    assert summarise_unit_tests([], not_built=3).ut_soft == 0.0


# ----------------------------------------------------------------------------------------------- L4


def test_parse_rating():
    full = "<response><reasoning>ok</reasoning><rating>Mostly Complete</rating></response>"
    assert parse_rating(full) == 4
    assert parse_rating(f"Sure. {full} Bye.") == 4  # the <response> element is cut out first
    assert parse_rating("<response><rating>incomplete</rating></response>") == 2
    assert parse_rating("<response><rating> 5 </rating></response>") == 5
    assert parse_rating("<response><rating>7</rating></response>") is None  # out of range
    assert parse_rating("<response><rating>0</rating></response>") is None
    assert parse_rating("<response><rating>great</rating></response>") is None
    # the official searches below the root only, so a bare <rating> root is unreadable
    assert parse_rating("<rating>5</rating>") is None
    assert parse_rating("<rating>5</rating>", "strict") == 5
    # an unescaped & breaks the XML parse in the official; strict falls back to the tag
    amp = "<response><reasoning>a & b</reasoning><rating>fully complete</rating></response>"
    assert parse_rating(amp) is None
    assert parse_rating(amp, "strict") == 5
    assert parse_rating("") is None


def test_task_scores():
    # scores/5: 1, 0.6, 0, 0, 0.4 -> soft 2/5 = 0.4; rated >= 3: two of five -> 0.4
    assert task_scores([5, 3, 0, None, 2]) == pytest.approx((0.4, 0.4))
    assert task_scores([]) == (0.0, 0.0)


def test_oracle_normalized():
    gen, ref = [0.6, 0.4, 0.2], [1.0, 0.2, 0.0, 0.8]
    # n = 3; strict: 0.6/1, min(1, 0.4/0.2) = 1, ref 0 -> s_gen 0.2; mean 1.8/3 = 0.6
    assert oracle_normalized(gen, ref, "strict") == pytest.approx(0.6)
    # reference keeps the official +1e-6 in the denominator
    expected = (0.6 / (1.0 + 1e-6) + min(1.0, 0.4 / (0.2 + 1e-6)) + 0.2) / 3
    assert oracle_normalized(gen, ref, "reference") == pytest.approx(expected, abs=1e-12)
    assert oracle_normalized([1.0], [1.0], "reference") < 1.0  # the epsilon shows
    assert oracle_normalized([], [1.0]) == 0.0


# ----------------------------------------------------------------------------------------------- aggregates


def three_servers(variant):
    ok, bad = Verdict(ok=True), Verdict(ok=False, reason="tools[0].input_schema: anyOf is not allowed")
    a = genesis_server_score(
        "a",
        variant=variant,
        compliance=ok,
        mcp_valid=ok,
        launches=3,
        launch_attempts=3,
        schema=SchemaMatch(tool_f1=1, args_f1=0.8, schema_f1=0.9),
        unit_tests=UTSummary(ut_soft=0.3, ut_hard=0.5, total=4, hard_passed=2, not_built=0, not_run=0),
        task_ratings=[5, 1],
        reference_task_scores=[1.0, 0.2],
    )
    b = genesis_server_score(
        "b",
        variant=variant,
        compliance=bad,
        mcp_valid=ok,
        launches=1,
        launch_attempts=3,
        schema=SchemaMatch(tool_f1=1, args_f1=0.6, schema_f1=0.8),
    )
    c = genesis_server_score(
        "c", variant=variant, compliance=ok, mcp_valid=ok, launches=0, launch_attempts=3, launch_failure="crash"
    )
    return a, b, c


def test_server_record_gating_reference():
    a, b, c = three_servers("reference")
    assert a.reached == ["L1", "L2", "L3", "L4"] and a.failures == {}
    assert (a.sr_soft, a.sr_hard) == pytest.approx((0.6, 0.5))  # (1 + 0.2) / 2; one of two >= 3
    assert a.sr_oracle_normalized == pytest.approx((1 / (1 + 1e-6) + 0.2 / (0.2 + 1e-6)) / 2)
    # b: not compliant -> L1 fails and L2 is zeroed although the server runs
    assert b.reached == ["L1"] and "not compliant" in b.failures["L1"] and b.schema_f1 == 0.0
    assert b.server_execution == 1.0 and b.compliance == 0.0 and b.compliance_mcp_valid == 1.0
    assert "did not start in 3 attempt(s): crash" in c.failures["L1"]


def test_server_record_gating_strict():
    _, b, c = three_servers("strict")
    assert b.reached == ["L1", "L2", "L3"] and b.schema_f1 == 0.8  # valid MCP + launched -> L1 passes
    assert b.failures == {"L3": "no unit test run"}
    assert c.reached == ["L1"]


def summarise(scores: Sequence[GenesisServerScore], **kwargs: Any) -> EvalResults:
    return EvalResults(benchmark="tool-genesis", metrics=genesis_metrics(scores, **kwargs))


def cascade_of(report: EvalResults) -> dict[str, int | float | None]:
    return {step: report.value("servers", step, by="cascade") for step in report.groups("cascade")}


def test_summarise_reference():
    scores = three_servers("reference")
    report = summarise(scores, total_servers=4)
    # compliance: a and c compliant of 4 -> 0.5; execution: a, b -> 0.5; schema: only a (b zeroed) -> 0.9/4
    assert report.value("compliance") == 0.5 and report.value("server_execution") == 0.5
    assert report.value("schema_f1") == pytest.approx(0.225)
    assert report.value("schema_f1", "L2", by="reached") == pytest.approx(0.9)  # reached L2: a only
    compliance_reached = report.metric("compliance", "L1", by="reached")
    assert compliance_reached is not None and compliance_reached.n == 3  # every scored server reaches L1
    assert (report.value("servers_attempted"), report.value("servers_scored")) == (4, 3)
    assert cascade_of(report) == {"Start": 4, "L1": 1, "L2": 1, "L3": 1, "L4": 1}
    assert report.value("fraction", "L1", by="cascade") == 0.25
    a, b, _ = scores
    assert b.failures["L1"].startswith("schema file not compliant")
    assert a.unit_tests_counted == 4 and a.tasks == 2
    # oracle SR: only a has a reference run -> averaged over that one server
    oracle = report.metric("sr_oracle_normalized")
    assert oracle is not None and oracle.n == 1
    assert oracle.value == pytest.approx(a.sr_oracle_normalized)


def test_summarise_strict():
    report = summarise(three_servers("strict"), total_servers=4)
    assert cascade_of(report) == {"Start": 4, "L1": 2, "L2": 2, "L3": 1, "L4": 1}
    assert report.value("schema_f1") == pytest.approx((0.9 + 0.8) / 4)
    assert report.value("schema_f1", "L2", by="reached") == pytest.approx((0.9 + 0.8) / 2)
    # L3 reached by a and b: UT_hard 0.5 and 0 -> 0.25
    assert report.value("ut_hard", "L3", by="reached") == pytest.approx(0.25)
    json.dumps(report.model_dump(mode="json"))  # JSON-ready


def test_server_explanation_names_the_levels_passed_and_where_it_stopped():
    a, b, c = three_servers("strict")
    assert a.explanation() == "passed L1, L2, L3, L4"
    assert b.explanation() == "passed L1, L2; stopped at L3: no unit test run"
    assert c.explanation().startswith("passed no level; stopped at L1: server did not start in 3 attempt(s)")


@pytest.mark.realdata
def test_reference_schemas_match_themselves_on_every_real_server(data_dir: Path):
    # Identical texts embed identically (cosine 1), so only the official rules decide: every server scores
    # 1.0 except datetime-context-provider, whose only tool takes no arguments (reference 0.5, strict 1.0).
    servers = json.loads((data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_text(encoding="utf-8"))
    embedder = FakeEmbedder()
    for server in servers:
        gold = server["tool_definitions"]
        reference = match_schemas(gold, gold, embedder, "reference").schema_f1
        assert reference == (0.5 if server["server_slug"] == "datetime-context-provider" else 1.0)
        assert match_schemas(gold, gold, embedder, "strict").schema_f1 == 1.0
        strict_rewrite = [make_strictly_compliant(t) for t in gold]
        assert match_schemas(strict_rewrite, gold, embedder, "reference").schema_f1 == reference


def test_load_embedder_without_the_extra_is_a_usage_error(monkeypatch):
    import toolgauge.embeddings.minilm as minilm
    from toolgauge.errors import UsageError

    monkeypatch.setattr(minilm, "embeddings_available", lambda: False)
    with pytest.raises(UsageError, match=r"pip install torch==2\.13\.0.*\[embeddings\]"):
        minilm.load_embedder.__wrapped__()


def test_summary_without_an_l4_run_reports_unknown_l4_rates():
    score = GenesisServerScore(slug="s")
    summary = summarise([score], l4_run=False)
    # L4 was never attempted: the rates are unknown (None), not 0; the other levels are unchanged.
    assert (summary.value("sr_soft"), summary.value("sr_hard"), summary.value("sr_oracle_normalized")) == (
        None,
        None,
        None,
    )
    reached = summary.metric("sr_soft", "L4", by="reached")
    assert reached is not None and reached.value is None and reached.n == 0
    assert summary.value("compliance") == 0.0
    assert summarise([score]).value("sr_soft") == 0.0
