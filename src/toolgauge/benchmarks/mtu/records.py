"""MTU-Bench records: the five eval splits, one eval item, one recorded reply.

The loader reads them from MTU-Bench's files, the native conversion and the metrics read them;
this module imports neither, so the package has no import cycle.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel

from toolgauge.records import ToolCall

MtuSplit = Literal["S-S", "S-M", "M-S", "M-M", "OOD"]
MTU_SPLITS: tuple[MtuSplit, ...] = get_args(MtuSplit)

# Splits whose items are turns of a dialogue: ids end in ``_<turn index>``.
MULTI_TURN_SPLITS: frozenset[str] = frozenset({"M-S", "M-M"})
# Splits whose gold answer always has exactly one key (the reference reads ``list(answer)[0]``).
SINGLE_TOOL_SPLITS: frozenset[str] = frozenset({"S-S", "M-S"})


class MtuItem(BaseModel):
    """One MTU-Bench eval item.

    Attributes:
        id: The item id as in the file (``S-S_3``, ``M-M_19_0``...). Not unique in M-M and OOD.
        split: Which eval file the item came from.
        question: The whole prompt (instructions, API list, history, current user turn).
        answer: Gold calls ``{tool name: {parameter: value}}`` in call order, keys exactly as in
            the file (some carry stray spaces). ``{"": {}}`` (S-S/M-S/OOD) and ``{}`` (M-M/OOD)
            both mean "no call".
        line: 1-based line number in ``path``.
        path: The file the item was read from.
    """

    id: str
    split: MtuSplit
    question: str
    answer: dict[str, dict[str, Any]]
    line: int
    path: str

    def gold_calls(self) -> list[ToolCall]:
        """Return the gold calls in key order; the empty-name "no call" entry gives no call."""
        return [
            ToolCall(name=name, arguments=dict(arguments))
            for name, arguments in self.answer.items()
            if name or arguments
        ]

    @property
    def multi_call(self) -> bool:
        """Whether the item is scored with the multi-call rules (tool number and order accuracy).

        S-M and M-M always are. OOD items follow their gold: exactly one key (``{"": {}}``
        included) uses the S-S rules, any other count (several tools, or ``{}``) the S-M rules,
        because the single-call rules need a first key to read.
        """
        if self.split == "OOD":
            return len(self.answer) != 1
        return self.split in ("S-M", "M-M")

    @property
    def dialogue_id(self) -> str:
        """The dialogue part of a multi-turn id (everything before the last ``_``)."""
        return self.id.rsplit("_", 1)[0]

    @property
    def turn_index(self) -> int:
        """The turn part of a multi-turn id (the integer after the last ``_``)."""
        return int(self.id.rsplit("_", 1)[1])


class MtuPrediction(BaseModel):
    """One model reply to an MTU item, as read from a prediction file."""

    id: str
    response: str
    path: str
    line: int
