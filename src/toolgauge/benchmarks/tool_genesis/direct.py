"""The ``direct`` strategy: one model call whose answer holds the schema and the server."""

from __future__ import annotations

from pathlib import Path

from toolgauge.benchmarks.tool_genesis.answer import parse_answer
from toolgauge.benchmarks.tool_genesis.generation import GenerationResult, GenerationStep
from toolgauge.benchmarks.tool_genesis.prompts import direct_messages
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.benchmarks.tool_genesis.server_files import RAW_FILE, server_record, write_answer_files
from toolgauge.engine import EpisodeContext
from toolgauge.errors import ModelError
from toolgauge.records import GenerateOptions


async def run_direct(
    ctx: EpisodeContext, server: GenesisServer, folder: Path, opts: GenerateOptions
) -> GenerationResult:
    """Ask once, keep the whole answer in ``raw_answer.txt`` and write the schema and code found in it.

    A cut-off code block is still written and left to the launch to judge; only a missing piece is an error.
    """
    try:
        turn = await ctx.generate(direct_messages(server), None, opts)
    except ModelError as exc:
        failed = f"model error: {exc}"
        return GenerationResult(
            server=server_record(server, folder, failed, ctx.epoch), strategy="direct", model_error=failed
        )
    step = GenerationStep(step=0, content=turn.content, tool_calls=list(turn.tool_calls))
    (folder / RAW_FILE).write_bytes((turn.content or "").encode("utf-8", errors="replace"))
    parsed = parse_answer(turn.content)
    write_answer_files(folder, parsed)
    missing = parsed.schema_payload is None or parsed.code is None
    error = f"parse failure: {parsed.error}" if missing else None
    if error and turn.finish_reason == "length":
        error += " (the answer hit max_tokens)"
    return GenerationResult(
        server=server_record(server, folder, error, ctx.epoch), strategy="direct", steps=[step], finished=True
    )
