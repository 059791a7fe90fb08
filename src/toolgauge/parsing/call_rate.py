"""The warning for a prompt-mode run whose replies hardly ever hold a call the text parser can read.

In prompt mode the calls are parsed out of the reply's text (ReAct for MTU-Bench, Python call syntax for BFCL).
A model that does not follow the format makes no parseable call, yet some metrics still score it (5-45% on
MTU-Bench's: an abstention is right on no-call items, an empty call list matches some counts). The run is
scored as usual, and its results carry this one line, so a reader knows the figures measure the format.
"""

from __future__ import annotations

# Every such warning starts so: ``execute`` also prints it on stderr when stdout is JSON.
PROMPT_MODE_WARNING = "prompt mode: "


def few_calls_warning(with_call: int, replies: int) -> str | None:
    """One line when fewer than a tenth of ``replies`` hold a parseable call, else None.

    Args:
        with_call: the replies the benchmark's prompt-mode parser found at least one call in.
        replies: the replies to samples whose gold makes a call (failed samples left out).
    """
    if replies == 0 or with_call * 10 >= replies:  # a tenth or more (integers: 3 of 30 is a tenth exactly)
        return None
    return (
        f"{PROMPT_MODE_WARNING}only {with_call} of {replies} replies that should make a call hold one the parser "
        f"can read ({with_call / replies:.1%}); the scores measure the reply format, not tool use: if the model "
        "has native tool calling, run it with --mode native"
    )
