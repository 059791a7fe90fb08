"""Setup's last step: one real completion from the embedded model, so a broken build fails at setup.

``python -m toolgauge.models.local_selfcheck`` starts the embedded server, asks for one forced tool call and
checks that a well-formed call comes back. A llama.cpp library built for another CPU dies on its first request
(issue 8: AMX tiles on a machine that faulted on them); here that is one clear line and exit 1, not a run that
scores every sample as a connection error.
"""

from __future__ import annotations

import asyncio
import sys
import time

from toolgauge.errors import ModelError
from toolgauge.models.local_server import MODEL_ALIAS, LocalServerClient
from toolgauge.records import GenerateOptions, Message, ModelRequest, ToolSpec
from toolgauge.report.console import printable

_WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
_HINT = (
    "the embedded model does not work on this machine; rebuild it with 'make clean && make demo' "
    "(see README: Troubleshooting)"
)


async def _one_completion() -> str:
    client = LocalServerClient(n_ctx=2048, timeout=120.0)
    await client.start()
    try:
        turn = await client.generate(
            ModelRequest(
                messages=[Message(role="user", content="What is the weather in Paris?")],
                tools=[_WEATHER],
                options=GenerateOptions(tool_choice="get_weather", max_tokens=64, temperature=0.0),
            )
        )
    finally:
        await client.close()
    if len(turn.tool_calls) != 1 or turn.tool_calls[0].name != "get_weather" or turn.tool_calls[0].parse_error:
        raise ModelError(f"a forced tool call came back malformed: {turn.model_dump_json()[:300]}")
    return turn.tool_calls[0].raw or ""


def main() -> int:
    """Run the check; print one line; return the exit code."""
    started = time.perf_counter()
    try:
        raw = asyncio.run(_one_completion())
    except ModelError as exc:
        print(f"error: embedded model self-check failed: {printable(str(exc))}; {_HINT}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    print(f"embedded model {MODEL_ALIAS} answered a forced tool call in {seconds:.1f} s: {printable(raw)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
