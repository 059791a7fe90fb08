"""Tool-Genesis L2 Schema-F1: match predicted tools and arguments to the reference ones by meaning.

Re-implements ``_schema_fidelity`` of subway-jack/Tool-Genesis (``src/env_evaluation/l2_semantic_correctness.py``):

1. Tools. Text of a tool = ``name + " " + " ".join(sorted(f"{arg}:{arg_desc}"))`` (just the name when it has
   no arguments; the tool description is not used). First an exact pass pairs each predicted tool, in order,
   with the first unused reference tool whose ``lower(name).replace("_", "")`` is equal. The rest are paired
   by maximum-weight matching (scipy ``linear_sum_assignment``) on cosine similarity, pairs below 0.3
   forbidden, with zero-valued dummy columns so a predicted tool may stay unmatched.
2. Arguments of each matched pair: text ``f"{name} {desc}"``, the same matching and threshold. The
   ``reference`` variant has no exact-name pass here (an identical argument name can stay unmatched when
   its descriptions differ); ``strict`` adds one, with the tool-name normalisation. When no matched tool
   has an argument on either side, ``strict`` counts args_F1 as 1 (``reference``: the F1 of two empty
   sets, 0).
3. tool_F1 = set F1 of (matched reference names + ``"P::"`` unmatched predicted names) against the reference
   names; args_F1 = set F1 of (matched reference ``tool.arg`` + ``"P::"`` unmatched predicted ``tool.arg``)
   against the arguments of the *matched* reference tools only; schema_F1 = their mean (0 when both are 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field
from scipy.optimize import linear_sum_assignment

from toolgauge.embeddings.base import Embedder, cosine_matrix

GenesisVariant = Literal["reference", "strict"]

MATCH_THRESHOLD = 0.3  # TOOL_MATCH_THRESHOLD and ARG_MATCH_THRESHOLD of the official code
_FORBIDDEN = -1e9  # the official BIG_NEG


class _Arg(BaseModel):
    name: str
    description: str


class _Tool(BaseModel):
    name: str
    args: list[_Arg]


class MatchedPair(BaseModel, frozen=True):
    """One predicted name paired with one reference name, with the similarity that paired them (1.0 = exact)."""

    pred: str
    gold: str
    score: float


class SchemaMatch(BaseModel):
    """Schema-F1 and the maps that route unit tests to the predicted server.

    ``tool_map``: predicted tool name → reference tool name. ``arg_maps``: reference tool name →
    {predicted argument → reference argument} for the predicted tool matched to it.
    """

    tool_f1: float
    args_f1: float
    schema_f1: float
    tool_map: dict[str, str] = Field(default_factory=dict)
    arg_maps: dict[str, dict[str, str]] = Field(default_factory=dict)
    tool_pairs: list[MatchedPair] = Field(default_factory=list)
    arg_pairs: list[MatchedPair] = Field(default_factory=list)


def _extract_tools(tools: Sequence[Any]) -> list[_Tool]:
    """Tools and their (argument, description) lists, read as the official ``_extract_tools`` reads them."""
    out: list[_Tool] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        params = tool.get("input_schema") or tool.get("inputSchema") or tool.get("parameters")
        args: list[_Arg] = []
        if isinstance(params, dict):
            props = params.get("properties") or {}
            if isinstance(props, dict):
                for key, value in props.items():
                    if isinstance(key, str):
                        desc = value.get("description") if isinstance(value, dict) else ""
                        args.append(_Arg(name=key, description=str(desc or "")))
        elif isinstance(params, list):
            for param in params:
                if isinstance(param, dict) and param.get("name"):
                    args.append(_Arg(name=str(param["name"]), description=str(param.get("description") or "")))
        out.append(_Tool(name=str(tool.get("name") or ""), args=args))
    return out


def tool_text(name: str, args: Sequence[tuple[str, str]]) -> str:
    """The text embedded for a tool: its name, then its sorted ``arg:description`` strings."""
    if not args:
        return name
    parts = sorted(f"{arg}:{desc}" for arg, desc in args if arg)
    return f"{name} {' '.join(parts)}"


def _norm_name(name: str) -> str:
    return name.replace("_", "").lower()


def _hungarian(sim: np.ndarray[Any, Any]) -> list[int]:
    """Maximum-weight assignment of rows to columns; -1 where a row stays unmatched (the official routine)."""
    if sim.size == 0:
        return [-1] * sim.shape[0]
    scores = sim.astype(np.float32)  # the official code builds a float32 matrix; keep its tie-breaking
    scores[scores < MATCH_THRESHOLD] = _FORBIDDEN
    n_rows, n_cols = scores.shape
    augmented = np.concatenate([scores, np.zeros((n_rows, n_rows), dtype=np.float32)], axis=1)
    rows, cols = linear_sum_assignment(augmented, maximize=True)
    assign = [-1] * n_rows
    for r, c in zip(rows, cols, strict=True):
        if c < n_cols and augmented[r, c] > _FORBIDDEN / 2:
            assign[int(r)] = int(c)
    return assign


def _f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    """Set F1 (duplicates collapse, as in the official ``_f1``)."""
    pred_set, gold_set = set(pred), set(gold)
    hits = len(pred_set & gold_set)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(pred_set), hits / len(gold_set)
    return 2 * precision * recall / (precision + recall)


def match_schemas(
    pred_tools: Sequence[Any],
    gold_tools: Sequence[Any],
    embedder: Embedder,
    variant: GenesisVariant = "reference",
) -> SchemaMatch:
    """Match predicted tools to reference tools and compute tool / argument / schema F1.

    Args:
        pred_tools: The predicted tools (dicts as in a ``{"tools": [...]}`` file: ``name``, ``description``,
            ``input_schema`` or ``inputSchema``). Non-dict entries are skipped.
        gold_tools: The reference tools, same shape.
        embedder: Embeds tool and argument texts.
        variant: ``reference`` (official rules) or ``strict`` (adds an exact-name pass for arguments).

    Returns:
        The F1 figures, the tool and argument maps, and the matched pairs with their similarities.
    """
    pred = _extract_tools(pred_tools)
    gold = _extract_tools(gold_tools)
    if not pred or not gold:
        return SchemaMatch(tool_f1=0.0, args_f1=0.0, schema_f1=0.0)

    texts = [tool_text(t.name, [(a.name, a.description) for a in t.args]) for t in pred + gold]
    # One batch for tool texts and every argument text: a caching embedder (MiniLM) then answers the
    # per-pair argument calls below from its cache.
    arg_texts = [f"{a.name} {a.description}" for t in pred + gold for a in t.args]
    vectors = embedder.embed(texts + arg_texts)[: len(texts)]
    pred_vec, gold_vec = vectors[: len(pred)], vectors[len(pred) :]

    tool_map: dict[str, str] = {}
    tool_pairs: list[MatchedPair] = []
    used_gold: set[int] = set()
    used_pred: set[int] = set()
    by_norm: dict[str, list[int]] = {}
    for j, gt in enumerate(gold):
        by_norm.setdefault(_norm_name(gt.name), []).append(j)
    for i, pt in enumerate(pred):
        pick = next((j for j in by_norm.get(_norm_name(pt.name), []) if j not in used_gold), None)
        if pick is None:
            continue
        tool_map[pt.name] = gold[pick].name
        tool_pairs.append(MatchedPair(pred=pt.name, gold=gold[pick].name, score=1.0))
        used_gold.add(pick)
        used_pred.add(i)

    rest_pred = [i for i in range(len(pred)) if i not in used_pred]
    rest_gold = [j for j in range(len(gold)) if j not in used_gold]
    if rest_pred and rest_gold:
        sim = cosine_matrix(pred_vec[rest_pred], gold_vec[rest_gold])
        for a, b in enumerate(_hungarian(sim)):
            if b == -1:
                continue
            pt, gt = pred[rest_pred[a]], gold[rest_gold[b]]
            tool_map[pt.name] = gt.name
            tool_pairs.append(MatchedPair(pred=pt.name, gold=gt.name, score=float(sim[a, b])))
            used_gold.add(rest_gold[b])

    unmatched_pred = [f"P::{t.name}" for t in pred if t.name not in tool_map]
    tool_f1 = _f1(list(tool_map.values()) + unmatched_pred, [t.name for t in gold])

    arg_maps: dict[str, dict[str, str]] = {}
    arg_pairs: list[MatchedPair] = []
    matched_gold_args: list[str] = []
    unmatched_pred_args: list[str] = []
    gold_args_global: list[str] = []
    for p_name, g_name in tool_map.items():
        p_tool = next(t for t in pred if t.name == p_name)
        g_tool = next(t for t in gold if t.name == g_name)
        gold_args_global.extend(f"{g_name}.{a.name}" for a in g_tool.args if a.name)
        pairs = _match_args(p_tool.args, g_tool.args, embedder, variant)
        per_tool = arg_maps.setdefault(g_name, {})
        for p_arg, g_arg, score in pairs:
            per_tool[p_arg] = g_arg
            matched_gold_args.append(f"{g_name}.{g_arg}")
            arg_pairs.append(MatchedPair(pred=f"{p_name}.{p_arg}", gold=f"{g_name}.{g_arg}", score=score))
        matched_pred = {p for p, _, _ in pairs}
        unmatched_pred_args.extend(
            f"P::{p_name}.{a.name}" for a in p_tool.args if a.name and a.name not in matched_pred
        )

    args_f1 = _f1(matched_gold_args + unmatched_pred_args, gold_args_global)
    if variant == "strict" and tool_map and not gold_args_global and not unmatched_pred_args:
        # Matched tools that take no arguments on either side: nothing to get wrong. The official F1 of two
        # empty sets is 0, which caps a perfect schema of argument-less tools at 0.5.
        args_f1 = 1.0
    schema_f1 = (tool_f1 + args_f1) / 2 if (tool_f1 > 0 or args_f1 > 0) else 0.0
    return SchemaMatch(
        tool_f1=tool_f1,
        args_f1=args_f1,
        schema_f1=schema_f1,
        tool_map=tool_map,
        arg_maps={g: m for g, m in arg_maps.items() if m},
        tool_pairs=tool_pairs,
        arg_pairs=arg_pairs,
    )


def _match_args(
    p_args: Sequence[_Arg], g_args: Sequence[_Arg], embedder: Embedder, variant: GenesisVariant
) -> list[tuple[str, str, float]]:
    """(predicted arg, reference arg, similarity) pairs for one matched tool pair."""
    if not p_args or not g_args:
        return []
    pairs: list[tuple[str, str, float]] = []
    p_rest, g_rest = list(range(len(p_args))), list(range(len(g_args)))
    if variant == "strict":
        for i in list(p_rest):
            key = _norm_name(p_args[i].name)
            j = next((j for j in g_rest if _norm_name(g_args[j].name) == key), None)
            if j is not None:
                pairs.append((p_args[i].name, g_args[j].name, 1.0))
                p_rest.remove(i)
                g_rest.remove(j)
        if not p_rest or not g_rest:
            return pairs
    p_vec = embedder.embed([f"{p_args[i].name} {p_args[i].description}" for i in p_rest])
    g_vec = embedder.embed([f"{g_args[j].name} {g_args[j].description}" for j in g_rest])
    sim = cosine_matrix(p_vec, g_vec)
    matched: dict[str, tuple[str, float]] = {}
    for a, b in enumerate(_hungarian(sim)):
        if b != -1:
            # Keyed by predicted name: a repeated predicted name keeps its last pair, as the official dict does.
            matched[p_args[p_rest[a]].name] = (g_args[g_rest[b]].name, float(sim[a, b]))
    pairs.extend((p, g, s) for p, (g, s) in matched.items())
    return pairs


def route_unit_test(gold_tool: str, arguments: Any, match: SchemaMatch) -> tuple[str, dict[str, Any]] | None:
    """Route one reference unit test to the predicted server through the inverse tool and argument maps.

    Argument keys with no mapped predicted argument are dropped silently (so a test may arrive with
    ``{}``), as the official code does. Arguments that are not an object (eleven official tests hold a
    malformed JSON string) are sent as ``{}``, also as the official code does.

    Args:
        gold_tool: The reference tool the test calls.
        arguments: The test's arguments (reference names).
        match: The schema match of the predicted server.

    Returns:
        ``(predicted tool name, renamed arguments)``, or None when no predicted tool matches ``gold_tool``
        (the tool was not built).
    """
    inverse_tools = {g: p for p, g in match.tool_map.items()}
    pred_tool = inverse_tools.get(gold_tool)
    if not pred_tool:
        return None
    inverse_args = {g: p for p, g in match.arg_maps.get(gold_tool, {}).items()}
    given = arguments if isinstance(arguments, dict) else {}
    renamed = {inverse_args[k]: v for k, v in given.items() if k in inverse_args}
    return pred_tool, renamed
