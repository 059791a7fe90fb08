"""What model calls cost in USD: a price per model from the ``genai-prices`` table, or one the user gives.

Pure: no I/O. The table ships inside the ``genai-prices`` wheel and is read offline (its auto-update, which
would fetch a newer table, is never started). A price is looked up only for a spec that calls a provider's own
API (``openai:MODEL``, ``anthropic:MODEL``, ``google:MODEL``, ``azure:...``, ``openrouter:MODEL``): a model
served at a URL of your own (vLLM, SGLang, Ollama...) has no list price, so its cost is unknown unless
``--price IN,OUT`` sets one. Offline models (gold, replay, scripted, local) cost nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

from toolgauge.errors import UsageError

PriceSource = Literal["genai-prices", "given", "offline"]
# Specs that call no paid API: their calls cost 0.
_OFFLINE_PREFIXES = ("replay:", "scripted:")
_OFFLINE_SPECS = frozenset({"local", "gold"})
# Spec prefix -> genai-prices provider id, for specs that name a provider's own API.
_PROVIDERS = {"openai:": "openai", "anthropic:": "anthropic", "google:": "google", "openrouter:": "openrouter"}
_MILLION = 1_000_000


class Price(BaseModel):
    """How a model's calls are priced: USD per million tokens given, or a genai-prices entry."""

    source: PriceSource
    # The genai-prices look-up (model id, provider id); None for a given or offline price.
    model: str | None = None
    provider: str | None = None
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    # The table's price changes with the prompt's size (above 200k tokens, say): each call is priced alone.
    tiered: bool = False

    def describe(self) -> str:
        """One short phrase for the run line: where the price comes from."""
        if self.source == "offline":
            return "offline model, no cost"
        if self.source == "given":
            return f"--price {self.input_per_mtok:g},{self.output_per_mtok:g} USD/MTok"
        return f"genai-prices {self.provider}/{self.model}"


def parse_price(text: str) -> Price:
    """``--price IN,OUT``: USD per million input and output tokens; a usage error names what is wrong."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise UsageError(f"--price {text!r}: give USD per million input and output tokens as IN,OUT, e.g. 0.15,0.6")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise UsageError(f"--price {text!r}: IN and OUT must be numbers (USD per million tokens)") from None
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise UsageError(f"--price {text!r}: prices must be finite and not negative")
    return Price(source="given", input_per_mtok=values[0], output_per_mtok=values[1])


def priced_model(spec: str) -> tuple[str, str] | None:
    """The (provider id, model id) a spec is priced as, or None when it names no provider's own API.

    ``openai:gpt-4o`` -> (openai, gpt-4o); ``openai:gpt-4o@http://...`` and ``URL#MODEL`` (a server of your
    own) -> None; ``azure:DEPLOYMENT@ENDPOINT`` -> (azure, DEPLOYMENT) (a deployment named after its model).
    """
    spec = spec.strip()
    if spec.startswith("azure:"):
        deployment = spec.removeprefix("azure:").split("@", 1)[0]
        return ("azure", deployment) if deployment else None
    for prefix, provider in _PROVIDERS.items():
        if spec.startswith(prefix):
            model = spec.removeprefix(prefix)
            if not model or "@" in model:  # no model, or served at a URL of the user's own
                return None
            return provider, model
    return None


def price_for(spec: str, given: Price | None = None) -> Price | None:
    """The price of the model ``spec`` names: ``given`` (``--price``) first, then the table; None when unknown."""
    if given is not None:
        return given
    stripped = spec.strip()
    if stripped in _OFFLINE_SPECS or stripped.startswith(_OFFLINE_PREFIXES):
        return Price(source="offline")
    found = priced_model(stripped)
    if found is None:
        return None
    return _table_price(*found)


@lru_cache(maxsize=64)
def _table_price(provider: str, model: str) -> Price | None:
    from genai_prices import Usage, calc_price  # 0.2 s to import its table: only when a price is looked up
    from genai_prices.types import TieredPrices

    try:
        calc = calc_price(Usage(input_tokens=_MILLION, output_tokens=_MILLION), model, provider_id=provider)
    except LookupError:
        return None
    rates = (getattr(calc.model_price, "input_mtok", None), getattr(calc.model_price, "output_mtok", None))
    return Price(
        source="genai-prices",
        model=calc.model.id,
        provider=calc.provider.id,
        input_per_mtok=float(calc.input_price),
        output_per_mtok=float(calc.output_price),
        tiered=any(isinstance(r, TieredPrices) for r in rates),
    )


def call_cost(price: Price, input_tokens: int, output_tokens: int) -> float:
    """USD of one call (or of a sum of calls) of ``input_tokens`` in and ``output_tokens`` out.

    A tiered genai-prices entry is asked with the call's own usage, so the tier (a long prompt costs more per
    token) is that of the call; any other price is linear, so a sum of calls costs the sum of their costs.
    """
    if price.source == "offline" or (input_tokens == 0 and output_tokens == 0):
        return 0.0
    if price.tiered and price.model is not None and price.provider is not None:
        from genai_prices import Usage, calc_price

        calc = calc_price(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens), price.model, provider_id=price.provider
        )
        return float(calc.total_price)
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / _MILLION


def calls_cost(price: Price, calls: Iterable[tuple[int, int, int]]) -> float:
    """USD of many calls, given as (input tokens, output tokens, how many calls had exactly these counts).

    A linear price is applied to the sums; a tiered one to each distinct call (its tier is the call's own).
    """
    if price.source == "offline":
        return 0.0
    if price.tiered:
        return sum(n * call_cost(price, i, o) for i, o, n in calls)
    total_in = total_out = 0
    for i, o, n in calls:
        total_in += i * n
        total_out += o * n
    return call_cost(price, total_in, total_out)


def evaluated_call_cost(
    price: Price | None, *, role: str, cached: bool, input_tokens: int, output_tokens: int
) -> float | None:
    """USD of one call as a sample is charged: a call of the evaluated model (role ``model``), 0 from the cache.

    None for another role's call (a judge, a proxy agent: priced in the run's cost, not per sample) or when the
    evaluated model's price is unknown.
    """
    if price is None or role != "model":
        return None
    return 0.0 if cached else call_cost(price, input_tokens, output_tokens)


def format_usd(value: float | None) -> str:
    """A cost as shown in tables: ``$0.0123`` (4 significant decimals under a dollar), or ``price unknown``."""
    if value is None:
        return "price unknown"
    if value == 0:
        return "$0"
    if value < 0.01:
        return f"${value:.2g}" if value < 0.0001 else f"${value:.4f}"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def cost_per_point(cost: float | None, score: float | None) -> float | None:
    """USD per headline point (a score of 0..1 read as 0..100 points), as tau-bench's leaderboard shows it."""
    if cost is None or score is None or score <= 0:
        return None
    return cost / (score * 100)
