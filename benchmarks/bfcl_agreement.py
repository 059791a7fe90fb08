"""Agreement between toolgauge's BFCL checker and bfcl-eval's own, on perturbed real outputs.

Generates thousands of outputs from the real BFCL data (gold answers and systematic
perturbations, prompt-style text and FC-style calls), scores each with toolgauge and with
bfcl-eval 2026.3.23 (run as a subprocess in a throwaway venv that has bfcl-eval installed), and
reports how often the verdicts (valid + error_type) agree, listing every disagreement.
toolgauge's side is read from the per-entry scores the CLI writes (``SampleScore``: ``value``,
``scores["valid"]``, ``scores["error_type"]``), so what is compared is what a user gets.

    .venv/bin/python benchmarks/bfcl_agreement.py --bfcl-python /tmp/bfcl-venv/bin/python \
        --data-dir ../shared/data/bfcl --out /tmp/bfcl_agreement.json

bfcl-eval is never imported here: the BFCL side runs in its own interpreter.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.io import bfcl_calls_output, bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import BfclEntry, load_bfcl
from toolgauge.benchmarks.bfcl.metrics import check_bfcl_entry
from toolgauge.benchmarks.bfcl.protocol import JudgedEntry
from toolgauge.results import SampleScore

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
    "live_relevance",
]
PROMPT_MODEL = "gpt-4o-2024-11-20"  # BFCL registry entry with underscore_to_dot=False
FC_MODEL = "gpt-4o-2024-11-20-FC"  # underscore_to_dot=True

# Runs inside the bfcl-eval venv: BFCL's own runner helpers decide every verdict.
BFCL_SIDE = r'''
import json, os, sys, tempfile
os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl_root_"))
from bfcl_eval.constants.enums import Language, ReturnFormat
from bfcl_eval.eval_checker.eval_runner import _evaluate_single_ast_entry, _evaluate_single_relevance_entry
from bfcl_eval.model_handler.utils import default_decode_ast_prompting

class Handler:
    """decode_ast of BFCL's OpenAI handler: json.loads for FC output, prompting decoder for text."""
    def decode_ast(self, result, language, has_tool_call_tag):
        if isinstance(result, str):
            return default_decode_ast_prompting(result, language, has_tool_call_tag)
        out = []
        for call in result:
            name = list(call.keys())[0]
            out.append({name: json.loads(call[name])})
        return out

def read(path):
    return {e["id"]: e for e in map(json.loads, open(path)) }

data_dir = sys.argv[1]
prompts, answers = {}, {}
handler = Handler()
for line in sys.stdin:
    case = json.loads(line)
    cat = case["category"]
    if cat not in prompts:
        prompts[cat] = read(os.path.join(data_dir, f"BFCL_v4_{cat}.json"))
        pa = os.path.join(data_dir, "possible_answer", f"BFCL_v4_{cat}.json")
        answers[cat] = read(pa) if os.path.exists(pa) else {}
    entry = prompts[cat][case["test_id"]]
    try:
        if "relevance" in cat:
            res = _evaluate_single_relevance_entry(handler, entry["id"], case["output"], entry, case["model"], cat)
        else:
            if "javascript" in cat:
                lang, fmt = Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
            elif "java" in cat:
                lang, fmt = Language.JAVA, ReturnFormat.JAVA
            else:
                lang, fmt = Language.PYTHON, ReturnFormat.PYTHON
            res = _evaluate_single_ast_entry(handler, entry["id"], case["output"],
                answers[cat][entry["id"]]["ground_truth"], entry, case["model"], cat, language=lang,
                return_format=fmt)
        out = {"case": case["case"], "valid": res["valid"], "error_type": None if res["valid"] else res["error_type"]}
    except Exception as e:
        out = {"case": case["case"], "valid": False, "error_type": "toolgauge:checker_crash", "exception": repr(e)}
    print(json.dumps(out), flush=True)
'''


def first_options(entry: BfclEntry) -> list[tuple[str, dict[str, Any]]]:
    turn = bfcl_gold_turn(entry, style="native", underscore_to_dot=False)
    if "java" in entry.category:  # native Java/JS arguments are source strings; rebuild from answers
        return [_gold_python(call) for call in entry.ground_truth or []]
    return [(call.name, dict(call.arguments)) for call in turn.tool_calls]


def _gold_python(call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((name, params),) = call.items()
    args = {}
    for param, options in params.items():
        real = [o for o in options if o != ""]
        if real:
            args[param] = expand(real[0])
    return name, args


def expand(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: expand(next((o for o in v if o != ""), "")) for k, v in value.items() if any(o != "" for o in v)}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [expand(v) for v in value]
    return value


def value_variants(value: Any, rng: random.Random) -> list[tuple[str, Any]]:
    """Perturbed versions of one argument value."""
    out: list[tuple[str, Any]] = []
    if isinstance(value, bool):
        out += [("bool->int", int(value)), ("bool->str", str(value).lower()), ("bool flip", not value)]
    elif isinstance(value, int):
        out += [
            ("int->float", float(value)),
            ("int->str", str(value)),
            ("int+1", value + 1),
            ("int->bool", bool(value)),
        ]
    elif isinstance(value, float):
        out += [("float->str", str(value)), ("float*2", value * 2 + 1)]
        if value.is_integer():
            out.append(("float->int", int(value)))
    elif isinstance(value, str):
        out += [
            ("str upper", value.upper()),
            ("str punct", value.replace(" ", "-") + "."),
            ("str spaced", " ".join(value)),
            ("str wrong", value + "zz"),
            ("str->int", 7),
        ]
        if "'" not in value:
            out.append(("str quote", value + "'"))
    elif isinstance(value, list):
        if len(value) > 1:
            out.append(("list reversed", list(reversed(value))))
        out += [("list drop", value[:-1]), ("list->str", ", ".join(map(str, value))), ("list->tuple", tuple(value))]
        if value and isinstance(value[0], str):
            out.append(("list upper", [v.upper() if isinstance(v, str) else v for v in value]))
    elif isinstance(value, dict):
        if value:
            key = rng.choice(list(value))
            out.append(("dict drop key", {k: v for k, v in value.items() if k != key}))
            out.append(("dict wrong value", {**value, key: "zz"}))
        out.append(("dict extra key", {**value, "zz_extra": 1}))
    elif value is None:
        out.append(("none->str", "None"))
    return out


def call_variants(
    entry: BfclEntry, calls: list[tuple[str, dict[str, Any]]], rng: random.Random
) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    out: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [("gold", calls)]
    docs = {d["name"]: d for d in entry.functions}
    for index, (name, args) in enumerate(calls):

        def replace(new_name: str, new_args: dict[str, Any], i: int = index) -> list[tuple[str, dict[str, Any]]]:
            changed = list(calls)
            changed[i] = (new_name, new_args)
            return changed

        doc = docs.get(name, {"parameters": {"properties": {}, "required": []}})
        required = [p for p in doc["parameters"].get("required", []) if p in args]
        if required:
            drop = rng.choice(required)
            out.append(("drop required", replace(name, {k: v for k, v in args.items() if k != drop})))
        optional = [p for p in doc["parameters"].get("properties", {}) if p not in args]
        if optional:
            out.append(("extra schema param", replace(name, {**args, rng.choice(optional): "x"})))
        out.append(("extra unknown param", replace(name, {**args, "zz_unknown": 1})))
        out.append(("wrong name", replace(name + "_x", args)))
        out.append(("name case", replace(name.upper(), args)))
        for param in args:
            for label, new in value_variants(args[param], rng):
                out.append((f"{param}: {label}", replace(name, {**args, param: new})))
    if len(calls) > 1:
        shuffled = list(calls)
        rng.shuffle(shuffled)
        out += [("calls shuffled", shuffled), ("calls reversed", list(reversed(calls))), ("drop call", calls[:-1])]
    out.append(("duplicate call", calls + calls[:1]))
    out.append(("no calls", []))
    return out


TEXT_NOISE = [
    "",
    "[]",
    "I cannot help with that.",
    "None of the functions apply.",
    '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    "[f(]",
    "```python\n[f(a=1)]\n```",
]


def build_cases(entries: list[BfclEntry], rng: random.Random, per_entry: int) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def add(entry: BfclEntry, label: str, output: Any, model: str) -> None:
        cases.append(
            {
                "case": len(cases),
                "test_id": entry.id,
                "category": entry.category,
                "label": label,
                "output": output,
                "model": model,
            }
        )

    for entry in entries:
        if entry.category in ("irrelevance", "live_relevance"):
            first = entry.functions[0]
            props = first["parameters"].get("properties", {})
            arg = {next(iter(props)): 1} if props else {}
            for text in [*TEXT_NOISE, f"[{first['name']}()]", f"{first['name']}(x=1", "[{}]"]:
                add(entry, "text", text, PROMPT_MODEL)
            add(entry, "fc call", [{first["name"].replace(".", "_"): json.dumps(arg)}], FC_MODEL)
            add(entry, "fc bad json", [{first["name"]: "{bad"}], FC_MODEL)
            add(entry, "fc empty", [], FC_MODEL)
            add(entry, "fc non-dict args", [{first["name"]: "[1]"}], FC_MODEL)
            continue
        calls = first_options(entry)
        variants = call_variants(entry, calls, rng)
        chosen = variants[:1] + rng.sample(variants[1:], min(per_entry, len(variants) - 1))
        for label, variant in chosen:
            try:
                add(
                    entry,
                    f"prompt {label}",
                    bfcl_calls_output(entry, variant, style="prompt", underscore_to_dot=False),
                    PROMPT_MODEL,
                )
                add(
                    entry,
                    f"fc {label}",
                    bfcl_calls_output(entry, variant, style="native", underscore_to_dot=True),
                    FC_MODEL,
                )
            except (TypeError, ValueError):  # a perturbation JSON cannot carry (e.g. a tuple key)
                continue
        gold = bfcl_calls_output(entry, calls, style="prompt", underscore_to_dot=False)
        assert isinstance(gold, str)
        add(entry, "prompt gold, FC registry name", gold, FC_MODEL)
        add(
            entry,
            "fc dotted names kept",
            bfcl_calls_output(entry, calls, style="native", underscore_to_dot=False),
            FC_MODEL,
        )
        add(entry, "text truncated", gold[:-3], PROMPT_MODEL)
        add(entry, "text noise", rng.choice(TEXT_NOISE), PROMPT_MODEL)
        add(entry, "text no brackets", gold[1:-1], PROMPT_MODEL)
        add(entry, "text positional", gold.replace("(", "(1, ", 1), PROMPT_MODEL)
        add(entry, "text spaced equals", gold.replace("=", " = "), PROMPT_MODEL)
        add(entry, "text trailing semicolon", gold[:-1] + ";]", PROMPT_MODEL)
        if "java" in entry.category:  # Java/JavaScript: bare (unquoted) string values
            add(entry, "text unquoted strings", gold.replace('"', ""), PROMPT_MODEL)
        if "java" not in entry.category:
            add(
                entry,
                "text unary plus",
                gold.replace("=", "=+", 1) if "=-" not in gold else gold.replace("=-", "=+"),
                PROMPT_MODEL,
            )
    return cases


def run_bfcl(cases: list[dict[str, Any]], bfcl_python: str, data_dir: Path) -> dict[int, dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(BFCL_SIDE)
    payload = "".join(json.dumps(c) + "\n" for c in cases)
    done = subprocess.run(
        [bfcl_python, script.name, str(data_dir)], input=payload, capture_output=True, text=True, check=False
    )
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "case" in record:
                results[record["case"]] = record
    if len(results) != len(cases):
        sys.exit(f"bfcl side answered {len(results)}/{len(cases)} cases:\n{done.stderr[-3000:]}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bfcl-python", default="/tmp/bfcl-venv/bin/python")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/bfcl")
    parser.add_argument("--per-entry", type=int, default=4, help="perturbations sampled per entry (plus gold)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the full report (JSON) here")
    args = parser.parse_args()

    categories = [c for c in CATEGORIES if (args.data_dir / f"BFCL_v4_{c}.json").exists()]
    entries = load_bfcl(args.data_dir, categories)
    by_id = {e.id: e for e in entries}
    cases = build_cases(entries, random.Random(args.seed), args.per_entry)

    started = time.perf_counter()
    verdicts = {}
    for case in cases:
        verdicts[case["case"]] = check_bfcl_entry(
            by_id[case["test_id"]], copy.deepcopy(case["output"]), underscore_to_dot=case["model"] == FC_MODEL
        )
    ours_seconds = time.perf_counter() - started  # the checker alone, as before
    ours: dict[int, SampleScore] = {}
    for case in cases:
        score = JudgedEntry(verdicts[case["case"]], case["output"], missing=False, sample_error=None).sample_score()
        assert score.value == (1.0 if score.scores["valid"] else 0.0)
        ours[case["case"]] = score

    started = time.perf_counter()
    theirs = run_bfcl(cases, args.bfcl_python, args.data_dir)
    bfcl_seconds = time.perf_counter() - started

    disagreements = []
    for case in cases:
        mine, ref = ours[case["case"]], theirs[case["case"]]
        if (mine.scores["valid"], mine.scores["error_type"]) != (ref["valid"], ref["error_type"]):
            disagreements.append(
                {
                    **case,
                    "ours": [mine.scores["valid"], mine.scores["error_type"]],
                    "bfcl": [ref["valid"], ref["error_type"]],
                    "bfcl_exception": ref.get("exception"),
                }
            )
    agree = len(cases) - len(disagreements)
    valid_agree = sum(ours[c["case"]].scores["valid"] == theirs[c["case"]]["valid"] for c in cases)
    report = {
        "cases": len(cases),
        "agree": agree,
        "agreement": agree / len(cases),
        "valid_agree": valid_agree,
        "bfcl_valid": sum(r["valid"] for r in theirs.values()),
        "bfcl_error_types": dict(Counter(r["error_type"] for r in theirs.values()).most_common()),
        "categories": categories,
        "seconds": {"toolgauge": round(ours_seconds, 2), "bfcl": round(bfcl_seconds, 2)},
        "disagreements": disagreements,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "disagreements"}, indent=1))
    for d in disagreements:
        print(
            json.dumps(
                {k: d[k] for k in ("test_id", "label", "output", "model", "ours", "bfcl", "bfcl_exception")},
                default=str,
            )[:600]
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
