"""BFCL's score files for a stored BFCL run, as ``bfcl evaluate`` writes them (bfcl-eval 2026.3.23, BFCL v4).

The layout is BFCL's score folder (``--score-dir``)::

    <out>/<model_name>/non_live/BFCL_v4_<category>_score.json
    <out>/<model_name>/live/BFCL_v4_<category>_score.json
    <out>/data_overall.csv, data_non_live.csv, data_live.csv

A score file is JSONL: the first line ``{"accuracy", "correct_count", "total_count"}``, then one line
per failed entry with the fields BFCL's runner writes for it, in its order
(``eval_checker/eval_runner.py``: ``_evaluate_single_ast_entry``, ``_evaluate_single_relevance_entry``;
``eval_runner_helper.py::save_eval_results``). Entries are in BFCL's order (``utils.sort_key``).
``prompt`` is the entry as BFCL loads it (the data line itself, for these categories) and
``possible_answer`` its ground truth, read from the run's data folder; the verdicts, error types,
messages and decoded calls are toolgauge's (which agree with BFCL's checker: docs/benchmarks.md).

The CSVs follow ``generate_leaderboard_csv``: BFCL's aggregates (a category the run lacks counts 0 and
shows N/A), its column headers and its formatting, for one row. BFCL takes the model's display name,
link, organisation, licence and prices from its registry; toolgauge has none of these (N/A, and no
cost), and latency statistics come from the run's per-sample latencies.

Error texts that quote a decoder's exception are the ones BFCL's decoders raise (toolgauge's decoders
give the same text where they decode as BFCL does). The nested error list of a parallel
``cannot_find_match`` is rebuilt from toolgauge's message. Only model-derived fields are redacted:
``prompt`` and ``possible_answer`` are the user's data, written as BFCL writes them.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.export_memory import memory_lines
from toolgauge.benchmarks.bfcl.export_multi_turn import multi_turn_lines
from toolgauge.benchmarks.bfcl.memory import BFCL_MEMORY_CATEGORIES
from toolgauge.benchmarks.bfcl.multi_turn_check import BFCL_MULTI_TURN_CATEGORIES
from toolgauge.benchmarks.bfcl.overall import Part, bfcl_summary
from toolgauge.errors import DataError, UsageError
from toolgauge.export.source import RunSource
from toolgauge.jsonl import read_jsonl_objects
from toolgauge.redact import redact_tree, secret_values
from toolgauge.results import SampleScore

VERSION_PREFIX = "BFCL_v4"
RELEVANCE_CATEGORIES = frozenset({"irrelevance", "live_irrelevance", "live_relevance"})
WRONG_FORMAT = "ast_decoder:decoder_wrong_output_format"
# What BFCL's runner writes as the error of every such entry (_evaluate_single_ast_entry).
WRONG_FORMAT_MESSAGE = (
    "Did not output in the specified format. Note: the model_result is wrapped in a string to ensure json "
    "serializability."
)
NO_MATCH = "parallel_function_checker_no_order:cannot_find_match"
# Copied from the run's data folder, not from the model: never redacted (a documented "user:password@host"
# URL in a function description is no secret of the user's).
DATA_FIELDS = frozenset({"prompt", "possible_answer"})

# bfcl_eval/constants/column_headers.py
COLUMNS_NON_LIVE = [
    "Rank", "Model", "Non-Live Overall Acc", "AST Summary", "Simple AST", "Python Simple AST", "Java Simple AST",
    "JavaScript Simple AST", "Multiple AST", "Parallel AST", "Parallel Multiple AST", "Irrelevance Detection",
]  # fmt: skip
COLUMNS_LIVE = [
    "Rank", "Model", "Live Overall Acc", "AST Summary", "Python Simple AST", "Python Multiple AST",
    "Python Parallel AST", "Python Parallel Multiple AST", "Irrelevance Detection", "Relevance Detection",
]  # fmt: skip
COLUMNS_MULTI_TURN = ["Rank", "Model", "Multi Turn Overall Acc", "Base", "Miss Func", "Miss Param", "Long Context"]
COLUMNS_AGENTIC = [
    "Rank", "Model", "Agentic Overall Acc", "Web Search Summary", "Web Search Base", "Web Search No Snippet",
    "Memory Summary", "Memory KV", "Memory Vector", "Memory Recursive Summarization",
]  # fmt: skip
COLUMNS_OVERALL = [
    "Rank", "Overall Acc", "Model", "Model Link", "Total Cost ($)", "Latency Mean (s)",
    "Latency Standard Deviation (s)", "Latency 95th Percentile (s)", "Non-Live AST Acc", "Non-Live Simple AST",
    "Non-Live Multiple AST", "Non-Live Parallel AST", "Non-Live Parallel Multiple AST", "Live Acc",
    "Live Simple AST", "Live Multiple AST", "Live Parallel AST", "Live Parallel Multiple AST", "Multi Turn Acc",
    "Multi Turn Base", "Multi Turn Miss Func", "Multi Turn Miss Param", "Multi Turn Long Context",
    "Web Search Acc", "Web Search Base", "Web Search No Snippet", "Memory Acc", "Memory KV", "Memory Vector",
    "Memory Recursive Summarization", "Relevance Detection", "Irrelevance Detection",
    "Format Sensitivity Max Delta", "Format Sensitivity Standard Deviation", "Organization", "License",
]  # fmt: skip
NA = "N/A"


def model_dir_name(model: str) -> str:
    """A model spec as a BFCL model folder name: ``/`` as ``_`` (as BFCL does), other unsafe characters as ``-``."""
    name = model.replace("/", "_")
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip(".") or "model"


def group_of(category: str) -> str:
    """BFCL's folder for a category (``get_directory_structure_by_category``)."""
    if category.startswith("multi_turn"):
        return "multi_turn"
    if category.startswith(("memory", "web_search")):
        return "agentic"
    return "live" if "live" in category else "non_live"


def sort_key(entry_id: str) -> tuple[str, int]:
    """BFCL's ``utils.sort_key`` for single-turn ids: (category, index), ``live_x_12-3-4`` by its 12."""
    category, index = entry_id.split(":")[0].rsplit("_", 1)
    return category, int(index.split("-")[0])


def write_bfcl_scores(folder: Path, source: RunSource, *, model_name: str | None = None) -> list[Path]:
    """Write the run's BFCL score files and leaderboard CSVs into ``folder``; return the files written.

    Raises:
        UsageError: the run is not a BFCL run, or has no verdicts (it could not be rescored).
        DataError: the run's data folder lacks a category's files.
    """
    run = source.run
    if run.benchmark != "bfcl":
        raise UsageError(f"run {run.id} is a {run.benchmark} run: --format bfcl exports BFCL runs only")
    if source.scores is None:
        raise UsageError(f"--format bfcl needs the run's verdicts: {source.note}")
    name = model_name or model_dir_name(run.model)
    data = Path(str(run.config["data"]))
    by_category: dict[str, list[SampleScore]] = {}
    for unit in source.scores:
        by_category.setdefault(str(unit.metadata["category"]), []).append(unit)
    written: list[Path] = []
    table: dict[str, tuple[float, int]] = {}
    secrets = secret_values()  # model outputs may quote a key a server echoed
    for category, units in by_category.items():
        units.sort(key=lambda u: sort_key(u.id))
        correct = sum(unit.value == 1.0 for unit in units)
        if category in BFCL_MEMORY_CATEGORIES:
            lines = memory_lines(source, data, category, units, name)
        elif category in BFCL_MULTI_TURN_CATEGORIES:
            prompts, _ = _category_data(data, category)
            lines = multi_turn_lines(source, data, category, units, name, prompts)
        else:
            prompts, answers = _category_data(data, category)
            lines = [_failed_entry(u, category, name, prompts, answers) for u in units if u.value != 1.0]
        accuracy = correct / len(units)
        table[category] = (accuracy, len(units))
        header = {"accuracy": accuracy, "correct_count": correct, "total_count": len(units)}
        path = folder / name / group_of(category) / f"{VERSION_PREFIX}_{category}_score.json"
        if category in BFCL_MEMORY_CATEGORIES:  # BFCL's sub-folder: agentic/memory/<backend>/
            path = folder / name / "agentic" / "memory" / category.removeprefix("memory_") / path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            for line in (header, *lines):
                safe = {k: v if k in DATA_FIELDS else redact_tree(v, secrets=secrets) for k, v in line.items()}
                fh.write(json.dumps(safe, ensure_ascii=False) + "\n")
        written.append(path)
    latencies = [s.latency_s for s in source.states.values() if s.latency_s]
    for file_name, header_row, row in leaderboard_rows(table, name, latencies):
        path = folder / file_name
        path.write_text(_score_csv(header_row, row, file_name), encoding="utf-8")
        written.append(path)
    return written


def _category_data(data: Path, category: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The category's entries as BFCL loads them (id -> the data line) and ground truths (id -> list)."""
    prompt_path = data / f"{VERSION_PREFIX}_{category}.json"
    prompts_list = [record for _, record in read_jsonl_objects(prompt_path, what="samples")]
    prompts = {str(p.get("id")): p for p in prompts_list}
    if category in RELEVANCE_CATEGORIES:
        return prompts, {}
    answer_path = data / "possible_answer" / f"{VERSION_PREFIX}_{category}.json"
    answer_list = [record for _, record in read_jsonl_objects(answer_path, what="possible answers")]
    if len(answer_list) != len(prompts_list):
        raise DataError(str(answer_path), f"{len(answer_list)} possible answers for {len(prompts_list)} entries")
    # BFCL pairs prompts and ground truths by position, not by id.
    answers = {str(p.get("id")): a.get("ground_truth") for p, a in zip(prompts_list, answer_list, strict=True)}
    return prompts, answers


def _failed_entry(
    unit: SampleScore, category: str, model_name: str, prompts: Mapping[str, Any], answers: Mapping[str, Any]
) -> dict[str, Any]:
    """One failed entry's line, with BFCL's fields in BFCL's order."""
    error_type = unit.scores.get("error_type")
    errors = list(unit.metadata.get("errors") or [])
    output = unit.metadata.get("output")
    decoded = unit.metadata.get("decoded")
    head: dict[str, Any] = {"id": unit.id, "model_name": model_name, "test_category": category, "valid": False}
    prompt = prompts.get(unit.id)
    if category in RELEVANCE_CATEGORIES:
        return {**head, "prompt": prompt, "model_result": output, "decoded_result": decoded, "error": errors,
                "error_type": error_type}  # fmt: skip
    ground_truth = answers.get(unit.id)
    if error_type == WRONG_FORMAT:
        errors = [WRONG_FORMAT_MESSAGE]
    elif error_type == NO_MATCH and errors:
        errors = _no_match_errors(str(errors[0]), decoded, ground_truth)
    entry = {**head, "error": errors, "error_type": error_type, "prompt": prompt}
    if error_type == "ast_decoder:decoder_failed":
        return {**entry, "model_result_raw": output, "possible_answer": ground_truth}
    if error_type == WRONG_FORMAT:
        # str() of what BFCL's decoder returned (the verdict keeps it: {} for Java, None for JavaScript)
        shown = str(unit.metadata.get("wrong_shape", decoded))
        return {**entry, "model_result_raw": str(output), "model_result_decoded": shown,
                "possible_answer": ground_truth}  # fmt: skip
    return {
        **entry,
        "model_result_raw": output,
        "model_result_decoded": decoded,
        "possible_answer": ground_truth,
    }


def _no_match_errors(message: str, decoded: Any, ground_truth: Any) -> list[Any]:
    """BFCL's error list of a parallel ``cannot_find_match``, rebuilt from toolgauge's one-line message.

    BFCL writes the head sentence, then one ``{"Model Result Index i": {sub_error, sub_error_type,
    model_output_item, possible_answer_item}}`` per model call it tried; toolgauge's checker writes the
    same facts as ``<head> model call i: <type>: <message> | ...`` (``benchmarks/bfcl/metrics.py``).
    """
    head, sep, rest = message.partition(" of possible answers. ")
    found = re.search(r"for index (\d+)$", head)
    if not sep or found is None:
        return [message]
    answer = int(found.group(1))
    out: list[Any] = [head + " of possible answers."]
    for part in re.split(r" \| (?=model call \d+: )", rest):
        tried = re.fullmatch(r"model call (\d+): (\S+): (.*)", part, flags=re.DOTALL)
        if tried is None:
            return [message]
        index = int(tried.group(1))
        item = {
            "sub_error": [tried.group(3)],
            "sub_error_type": tried.group(2),
            "model_output_item": decoded[index] if isinstance(decoded, list) and index < len(decoded) else None,
            "possible_answer_item": ground_truth[answer]
            if isinstance(ground_truth, list) and answer < len(ground_truth)
            else None,
        }
        out.append({f"Model Result Index {index}": item})
    return out


# -- the leaderboard CSVs (eval_runner_helper.py::generate_leaderboard_csv) ---------------------------------------


def _latency_stats(latencies: Sequence[float]) -> tuple[Any, Any, Any]:
    """Mean, standard deviation and 95th percentile (numpy's linear rule), rounded to 2 places; N/A when too few."""
    if len(latencies) < 2:
        return NA, NA, NA
    ordered = sorted(latencies)
    rank = 0.95 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    p95 = ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
    return round(statistics.mean(latencies), 2), round(statistics.stdev(latencies), 2), round(p95, 2)


def leaderboard_rows(
    table: Mapping[str, tuple[float, int]], model: str, latencies: Sequence[float]
) -> list[tuple[str, list[str], list[Any]]]:
    """``(file name, header, row)`` for data_overall.csv, data_non_live.csv and data_live.csv."""
    summary = bfcl_summary(table)
    s, sub, group = summary.categories, summary.subtotals, summary.groups
    live_parts = [s["live_simple"], s["live_multiple"], s["live_parallel"], s["live_parallel_multiple"]]
    multi_turn = [s["multi_turn_base"], s["multi_turn_miss_func"], s["multi_turn_miss_param"],
                  s["multi_turn_long_context"]]  # fmt: skip
    mean, std, p95 = _latency_stats(latencies)

    def d(x: Part) -> Any:
        # BFCL shows "N/A" for a score over a category not run; a weighed group's number is printed anyway.
        return x.accuracy if x.complete else NA

    def g(name: str) -> float:
        return group[name].accuracy

    simple, web_search, memory = sub["simple"], sub["web_search"], sub["memory"]
    non_live_row = [NA, model, g("non_live"), d(sub["non_live_ast"]), d(simple), d(s["simple_python"]),
                    d(s["simple_java"]), d(s["simple_javascript"]), d(s["multiple"]), d(s["parallel"]),
                    d(s["parallel_multiple"]), d(s["irrelevance"])]  # fmt: skip
    live_row = [NA, model, g("live"), d(sub["live_ast"]), *(d(p) for p in live_parts), d(s["live_irrelevance"]),
                d(s["live_relevance"])]  # fmt: skip
    multi_turn_row = [NA, model, g("multi_turn"), *(d(p) for p in multi_turn)]
    agentic_row = [NA, model, g("agentic"), d(web_search), d(s["web_search_base"]), d(s["web_search_no_snippet"]),
                   d(memory), d(s["memory_kv"]), d(s["memory_vector"]), d(s["memory_rec_sum"])]  # fmt: skip
    overall_row = [
        NA, summary.overall.accuracy, model, NA, NA, mean, std, p95,
        d(sub["non_live_ast"]), d(simple), d(s["multiple"]), d(s["parallel"]), d(s["parallel_multiple"]),
        g("live"), *(d(p) for p in live_parts),
        g("multi_turn"), *(d(p) for p in multi_turn),
        d(web_search), d(s["web_search_base"]), d(s["web_search_no_snippet"]),
        d(memory), d(s["memory_kv"]), d(s["memory_vector"]), d(s["memory_rec_sum"]),
        d(s["live_relevance"]), d(group["irrelevance"]), NA, NA, NA, NA,
    ]  # fmt: skip
    return [
        ("data_overall.csv", COLUMNS_OVERALL, overall_row),
        ("data_non_live.csv", COLUMNS_NON_LIVE, non_live_row),
        ("data_live.csv", COLUMNS_LIVE, live_row),
        ("data_multi_turn.csv", COLUMNS_MULTI_TURN, multi_turn_row),
        ("data_agentic.csv", COLUMNS_AGENTIC, agentic_row),
    ]


# Columns write_score_csv_file leaves as plain numbers (latency), per file.
_PLAIN_COLUMNS = {"data_overall.csv": {4, 5, 6, 7, 32, 33}}


def _score_csv(header: Sequence[str], row: Sequence[Any], file_name: str) -> str:
    """BFCL's ``write_score_csv_file`` for one row: rank 1, numbers as percentages, no newline at the end."""
    plain = _PLAIN_COLUMNS.get(file_name, set())
    cells = ["1"]
    for j, value in enumerate(row[1:], start=1):
        if isinstance(value, str):
            cells.append(value)
        elif j in plain:
            cells.append(str(value))
        else:
            cells.append(f"{value * 100:.2f}%")
    return ",".join(header) + "\n" + ",".join(cells)
