"""The run-level options of issue 20, checked (name, tags, price, budgets, cache mode); each role's price.

``--name``, ``--tag``, ``--price``, ``--max-cost``, ``--max-tokens-total`` and ``--cache``.

Pure: the store keeps the labels (store/run_meta.py), the engine keeps the budget (engine/budget.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast, get_args

from pydantic import BaseModel, Field

from toolgauge.cost import Price, parse_price, price_for
from toolgauge.engine.budget import Budget
from toolgauge.errors import UsageError

if TYPE_CHECKING:
    from toolgauge.driver import RunOptions
    from toolgauge.engine.cache import CacheMode
    from toolgauge.models.base import ModelClient

# A tag's key: what ``--tag KEY=VALUE`` accepts before the ``=``.
_TAG_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/")


class RunLabels(BaseModel):
    """A run's display name and tags."""

    name: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether there is nothing to store."""
        return self.name is None and not self.tags

    def describe(self) -> str:
        """``name k=v k2=v2`` for a table cell."""
        parts = ([self.name] if self.name else []) + [f"{k}={v}" for k, v in sorted(self.tags.items())]
        return " ".join(parts)


def parse_tags(values: Iterable[str], option: str = "--tag") -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; a usage error names the bad one (no ``=``, an empty or odd key)."""
    tags: dict[str, str] = {}
    for value in values:
        key, eq, text = value.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"{option} {value!r}: give KEY=VALUE, e.g. {option} team=evals")
        if not set(key) <= _TAG_KEY_CHARS:
            raise UsageError(f"{option} {value!r}: a key is letters, digits and _ . - / only")
        tags[key] = text.strip()
    return tags


def check_name(name: str | None) -> str | None:
    """A ``--name`` as stored (stripped; one line), or a usage error for an empty or multi-line one."""
    if name is None:
        return None
    stripped = name.strip()
    if not stripped or "\n" in stripped or "\r" in stripped:
        raise UsageError(f"--name {name!r}: give one non-empty line of text")
    return stripped


def role_prices(model_spec: str, options: RunOptions, roles: Mapping[str, ModelClient]) -> dict[str, Price | None]:
    """The price of each role's model (``"model"``: the evaluated one, priced by ``--price`` when given).

    Raises:
        UsageError: ``--max-cost`` was given while a model's price is unknown (it could not be kept).
    """
    prices: dict[str, Price | None] = {"model": price_for(model_spec, options.price)}
    for role, client in roles.items():
        prices[role] = price_for(client.name)
    unknown = [role for role, price in prices.items() if price is None]
    if options.engine.budget.max_cost is not None and unknown:
        shown = model_spec if unknown[0] == "model" else roles[unknown[0]].name
        raise UsageError(
            f"--max-cost needs the price of model {shown!r} (role {unknown[0]}), which genai-prices does not know; "
            "give it with --price IN,OUT (USD per million input and output tokens)"
        )
    return prices


@dataclass(frozen=True)
class RunMetaOptions:
    """The checked values of the run-level options: what the driver and the engine take."""

    labels: RunLabels = field(default_factory=lambda: RunLabels())
    price: Price | None = None
    budget: Budget = field(default_factory=Budget)
    cache: CacheMode = "on"


def run_meta_options(
    *,
    name: str | None = None,
    tags: Iterable[str] = (),
    max_cost: float | None = None,
    max_tokens_total: int | None = None,
    price: str | None = None,
    cache: str | None = None,
    no_cache: bool = False,
) -> RunMetaOptions:
    """Check the options as the user gave them; a usage error names the one that is wrong.

    ``--no-cache`` is ``--cache off``; both at once must agree.
    """
    from toolgauge.engine.cache import CacheMode

    modes = get_args(CacheMode)
    if cache is not None and cache not in modes:
        raise UsageError(f"--cache {cache!r}: use one of {', '.join(modes)}")
    if no_cache and cache not in (None, "off"):
        raise UsageError(f"--no-cache and --cache {cache} disagree; --no-cache is --cache off")
    if max_cost is not None and not (max_cost >= 0 and max_cost != float("inf")):
        raise UsageError(f"--max-cost {max_cost}: give a finite number of USD, 0 or more")
    mode = cast("CacheMode", cache or ("off" if no_cache else "on"))
    return RunMetaOptions(
        labels=RunLabels(name=check_name(name), tags=parse_tags(tags)),
        price=parse_price(price) if price is not None else None,
        budget=Budget(max_cost=max_cost, max_tokens_total=max_tokens_total),
        cache=mode,
    )
