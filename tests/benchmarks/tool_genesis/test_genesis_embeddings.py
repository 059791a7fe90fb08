"""The real all-MiniLM-L6-v2 embedder (the `embeddings` extra) on a handful of strings and the first real server."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolgauge.benchmarks.tool_genesis.metrics.compliance import make_strictly_compliant
from toolgauge.benchmarks.tool_genesis.metrics.schema import match_schemas, route_unit_test
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import score_unit_test
from toolgauge.embeddings.minilm import MiniLMEmbedder, embeddings_available, load_embedder

pytestmark = pytest.mark.skipif(not embeddings_available(), reason="the `embeddings` extra is not installed")


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    loaded = load_embedder()
    assert isinstance(loaded, MiniLMEmbedder)
    return loaded


def test_rows_are_normalised_and_identical_texts_have_cosine_one(embedder: MiniLMEmbedder):
    vectors = embedder.embed(["get the weather for a city", "get the weather for a city", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-5)


def test_related_texts_are_closer_than_unrelated_ones(embedder: MiniLMEmbedder):
    anchor, related, unrelated = embedder.embed(
        ["weather forecast for a city", "get the weather forecast in a town", "delete a user account"]
    )
    assert float(anchor @ related) > float(anchor @ unrelated) + 0.2


def test_repeated_texts_are_embedded_once(embedder: MiniLMEmbedder):
    embedder.embed(["cache probe one", "cache probe two"])
    before = embedder.cached_texts
    again = embedder.embed(["cache probe two", "cache probe one", "cache probe one"])
    assert embedder.cached_texts == before
    assert np.array_equal(again[1], again[2])


def test_load_embedder_is_one_instance_per_process():
    assert load_embedder() is load_embedder()


@pytest.mark.realdata
def test_reference_schemas_of_the_first_real_server_match_themselves(data_dir: Path, embedder: MiniLMEmbedder):
    servers = json.loads((data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_text(encoding="utf-8"))
    gold = servers[0]["tool_definitions"]
    for variant in ("reference", "strict"):
        match = match_schemas(gold, gold, embedder, variant)
        assert (match.tool_f1, match.args_f1, match.schema_f1) == (1.0, 1.0, 1.0), variant
        # the gold writer's strict-compliant schemas keep names and descriptions, so they match fully too
        strict_schemas = [make_strictly_compliant(t) for t in gold]
        assert match_schemas(strict_schemas, gold, embedder, variant).schema_f1 == 1.0, variant


@pytest.mark.realdata
def test_a_perfect_answer_scores_below_one_in_reference_and_one_in_strict(data_dir: Path, embedder: MiniLMEmbedder):
    servers = json.loads((data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_text(encoding="utf-8"))
    gold = servers[0]["tool_definitions"]
    match = match_schemas(gold, gold, embedder, "reference")
    gold_tool, cases = next(iter(servers[0]["unit_test"].items()))
    case = cases[0]
    routed = route_unit_test(gold_tool, case["arguments"], match)
    assert routed == (gold_tool, case["arguments"])
    content = [{"type": "text", "text": case["function_output_content"], "annotations": None}]
    reference = score_unit_test(content, False, None, case["function_output_content"], embedder, "reference")
    # reference: the content-list wrapper has key paths [0], [0].type... that the expected object lacks
    # -> struct 0, so soft = 0.5 * cosine < 0.5 although the answer is the recorded one
    assert reference.hard_pass and reference.struct_f1 == 0.0 and 0.0 < reference.soft < 0.5
    strict = score_unit_test(content, False, None, case["function_output_content"], embedder, "strict")
    assert strict.hard_pass and strict.soft == pytest.approx(1.0)
