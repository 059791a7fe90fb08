"""The response cache knows the served checkpoint, and ``--cache off|read|write|on`` (``--no-cache`` its alias).

A loopback OpenAI-compatible server (tests/chat_stub.py) with a ``/v1/models`` listing whose ``root`` (the
checkpoint) the test changes between runs, as a redeploy under the same model name does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of
from toolgauge.models.served_identity import ServedModel, cache_id_with, models_entry


def test_the_models_entry_is_read_and_a_request_time_stamp_left_out() -> None:
    now = 1_800_000_000.0
    listing = {"data": [{"id": "other", "root": "x"},
                        {"id": "m", "created": 1_700_000_000, "root": "/ckpt/400", "owned_by": "vllm"}]}  # fmt: skip
    assert models_entry(listing, "m", now=now) == ServedModel(
        id="m", created=1_700_000_000, root="/ckpt/400", owned_by="vllm"
    )
    stamped = {"data": [{"id": "m", "created": int(now) - 1, "owned_by": "vllm"}]}  # vLLM stamps the request time
    assert models_entry(stamped, "m", now=now).created is None
    for odd in ({}, {"data": "x"}, [], {"data": [{"id": "m", "created": "yesterday", "root": 5}]}):
        assert models_entry(odd, "m", now=now).said is False


def test_the_cache_id_changes_only_when_the_server_says_something() -> None:
    base = "m@http://127.0.0.1:1/v1"
    assert cache_id_with(base, None) == base
    assert cache_id_with(base, ServedModel(id="m")) == base
    one = cache_id_with(base, ServedModel(id="m", root="/ckpt/400"))
    two = cache_id_with(base, ServedModel(id="m", root="/ckpt/500"))
    fingerprint = cache_id_with(base, ServedModel(id="m", root="/ckpt/400", system_fingerprint="fp_1"))
    assert len({base, one, two, fingerprint}) == 4 and one.startswith(base + "~")


class Deployment:
    """What the loopback server serves: its checkpoint can be swapped; it counts the real (non-probe) calls."""

    def __init__(self) -> None:
        self.root = "/ckpt/step-400"
        self.calls = 0

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "m", "object": "model", "created": int(time.time()),
                                            "owned_by": "vllm", "root": self.root}]}  # fmt: skip

    def respond(self, request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if not is_probe(request):
            self.calls += 1
        return 200, completion("Sorry, I cannot do that.")


def _run(stub: ChatStub, store: str, *extra: str) -> tuple[int, int]:
    res = invoke("eval", "suite", "-m", stub.model(), "--limit", "2", "--store", store, "--json", "-q", *extra)
    assert res.exit_code == 0, res.stderr
    run = results_of(res).run
    assert run is not None
    return run.model_calls, run.cached_calls


def test_a_redeployed_checkpoint_under_the_same_name_misses_the_cache(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    served = Deployment()
    with ChatStub(served.respond, models=served.models) as stub:
        made, cached = _run(stub, store)
        assert made > 0 and cached == 0
        assert _run(stub, store) == (0, made)  # same checkpoint (its request-time `created` aside): all cached
        served.root = "/ckpt/step-500"
        assert _run(stub, store) == (made, 0)  # redeployed: asked again
        assert served.calls == 2 * made


def test_cache_modes(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    served = Deployment()
    with ChatStub(served.respond, models=served.models) as stub:
        made, _ = _run(stub, store, "--cache", "read")  # nothing in the cache yet, and nothing stored
        assert _run(stub, store, "--cache", "read") == (made, 0)
        assert _run(stub, store, "--cache", "write") == (made, 0)  # asks, and stores the answers
        assert _run(stub, store, "--cache", "write") == (made, 0)  # never answers from the cache
        assert _run(stub, store, "--cache", "read") == (0, made)
        assert _run(stub, store, "--cache", "off") == (made, 0)
        assert _run(stub, store, "--no-cache") == (made, 0)
        assert _run(stub, store) == (0, made)
        assert served.calls == 6 * made
        res = invoke("eval", "suite", "-m", stub.model(), "--limit", "1", "--store", store, "--no-cache",
                     "--cache", "on")  # fmt: skip
        assert res.exit_code == 2 and "--no-cache and --cache on disagree" in res.stderr
    rows = json.loads(invoke("report", "latest", "--store", store, "--json").stdout)
    assert rows["run"]["cache"] == "on"
