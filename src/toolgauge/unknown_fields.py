"""One way for every loader to say that a record has a field it does not know, with a did-you-mean.

A misspelt field is the commonest authoring mistake (``expected_call`` for ``expected_calls``): the message names
the field (the loader puts it in the ``field`` part of the error), the closest allowed name, and the allowed
names, as ``unknown field; did you mean 'expected_calls'? (allowed: user, expected_calls, ...)``. The suite, the
ToolGate candidates, WildToolBench's session and step files, a domain's ``domain.json`` and the sweep file all
say it this way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to ``name`` (difflib, case ignored), or ``""`` when none is."""
    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[close[0]]!r}?" if close else ""


def unknown_field(name: str, allowed: Iterable[str], *, listed: str = "allowed") -> str:
    """The message for ``name``, which no record of this kind has: the did-you-mean, then every allowed name."""
    choices = list(allowed)
    return f"unknown field{did_you_mean(name, choices)} ({listed}: {', '.join(choices)})"


def reported_error(exc: ValidationError) -> ErrorDetails:
    """The one of pydantic's errors to report: an unknown field before the rest.

    A misspelt field is also a missing one, and the missing one comes first in pydantic's list; reporting it
    ("missing required field") would hide the typo that caused it.
    """
    errors = exc.errors()
    return next((error for error in errors if error["type"] == "extra_forbidden"), errors[0])
