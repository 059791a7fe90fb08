"""What a run has spent, and whether the next model call may start (``--max-cost``, ``--max-tokens-total``).

A call is let through unless the spend so far, plus what the calls already in flight and this one are
expected to add, would cross a limit; what a call is expected to add is the mean of the calls made so far
(nothing for the first one). Calls in flight always finish, so a run stops at or under its limit when its
calls are alike, and over it by at most what the calls in flight spend beyond the mean. Answers from the
response cache cost nothing and use no tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from toolgauge.cost import Price, call_cost, calls_cost
from toolgauge.errors import RunStopped


class BudgetReached(RunStopped):
    """The run stopped because its next model call would cross ``--max-cost`` or ``--max-tokens-total``.

    Its finished samples are stored; it resumes with ``--resume`` (with a larger budget). Exit code 1.
    """


@dataclass(frozen=True)
class Budget:
    """The limits of one run: USD (``--max-cost``) and tokens in plus out (``--max-tokens-total``)."""

    max_cost: float | None = None
    max_tokens_total: int | None = None

    @property
    def set(self) -> bool:
        """Whether any limit is given."""
        return self.max_cost is not None or self.max_tokens_total is not None


@dataclass
class Spend:
    """The run's spend so far, by role price; and the admission of the next call against ``budget``.

    ``prices`` is the price of each role's model (``"model"``: the evaluated one); a role with no known
    price adds tokens but no cost, and makes the cost unknown (``cost_known``).
    """

    budget: Budget = field(default_factory=Budget)
    prices: Mapping[str, Price | None] = field(default_factory=dict)
    usd: float = 0.0
    tokens: int = 0
    calls: int = 0
    in_flight: int = 0
    unknown_roles: set[str] = field(default_factory=set)

    def seed(self, by_role: Mapping[str, Iterable[tuple[int, int, int]]]) -> None:
        """Count the calls a resumed run already made: (input, output, number of calls) per role."""
        for role, groups in by_role.items():
            rows = list(groups)
            self.calls += sum(n for _, _, n in rows)
            self.tokens += sum((i + o) * n for i, o, n in rows)
            price = self.prices.get(role)
            if price is None:
                self.unknown_roles.add(role)
            else:
                self.usd += calls_cost(price, rows)

    def admit(self) -> str | None:
        """Reserve a place for the next call; or the one line saying which limit it would cross (nothing reserved)."""
        ahead = self.in_flight + 1
        if self.budget.max_tokens_total is not None:
            mean = self.tokens / self.calls if self.calls else 0.0
            if self.tokens + ahead * mean > self.budget.max_tokens_total or self.tokens >= self.budget.max_tokens_total:
                return (
                    f"--max-tokens-total {self.budget.max_tokens_total}: {self.tokens} tokens spent; "
                    "the next call would cross it"
                )
        if self.budget.max_cost is not None:
            mean_usd = self.usd / self.calls if self.calls else 0.0
            if self.usd + ahead * mean_usd > self.budget.max_cost or self.usd >= self.budget.max_cost:
                return f"--max-cost {self.budget.max_cost:g}: ${self.usd:.4f} spent; the next call would cross it"
        self.in_flight += 1
        return None

    def release(self) -> None:
        """A call admitted by :meth:`admit` ended (answered or failed)."""
        self.in_flight = max(0, self.in_flight - 1)

    def add(self, role: str, input_tokens: int, output_tokens: int) -> None:
        """Count one answered call (not one from the cache)."""
        self.calls += 1
        self.tokens += input_tokens + output_tokens
        price = self.prices.get(role)
        if price is None:
            self.unknown_roles.add(role)
        else:
            self.usd += call_cost(price, input_tokens, output_tokens)

    @property
    def cost_known(self) -> bool:
        """Whether every call was of a model with a price."""
        return not self.unknown_roles
