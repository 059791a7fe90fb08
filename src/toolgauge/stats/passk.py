"""pass@k and pass^k from repeated tries of each sample (docs/statistics.md).

A sample tried ``n`` times with ``c`` successes:

- pass@k, the chance that at least one of ``k`` tries drawn without replacement succeeds, estimated
  without bias as ``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models
  Trained on Code", eq. 1);
- pass^k, the chance that all ``k`` tries succeed, estimated without bias as ``C(c, k) / C(n, k)``
  (Yao et al. 2024, tau-bench, ``display_metrics`` in sierra-research/tau-bench ``run.py``).

Both are averaged over samples. A try succeeds when its value is 1 within 1e-6 (tau-bench's
``is_successful``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import comb

SUCCESS_TOLERANCE = 1e-6


def is_success(value: float | None) -> bool:
    """A try's value counts as a success when it is 1 within 1e-6 (None, a missing value, does not)."""
    return value is not None and abs(value - 1.0) <= SUCCESS_TOLERANCE


def _checked(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one sample: ``1 - C(n - c, k) / C(n, k)``."""
    _checked(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one sample (tau-bench): ``C(c, k) / C(n, k)``."""
    _checked(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_rates(tries: Iterable[Sequence[bool]], max_k: int) -> tuple[dict[str, float], dict[str, float]]:
    """pass@k and pass^k for k = 1..max_k, averaged over samples, keyed by ``str(k)`` (JSON keys).

    ``tries`` holds each sample's try outcomes (success or not). A k is averaged over the samples with
    at least k tries; a k that no sample reaches is left out.
    """
    counts = [(len(t), sum(t)) for t in tries if len(t) > 0]
    at: dict[str, float] = {}
    hat: dict[str, float] = {}
    for k in range(1, max_k + 1):
        reached = [(n, c) for n, c in counts if n >= k]
        if not reached:
            break
        at[str(k)] = sum(pass_at_k(n, c, k) for n, c in reached) / len(reached)
        hat[str(k)] = sum(pass_hat_k(n, c, k) for n, c in reached) / len(reached)
    return at, hat


def successes_by_sample(verdicts: Iterable[tuple[str, int, float | None]]) -> dict[str, list[bool]]:
    """Each sample's try outcomes from its units' (sample, epoch, value): a try succeeds when all its units do.

    Units whose value is None are left out; a sample none of whose units has a value has no tries.
    """
    by_try: dict[str, dict[int, bool]] = {}
    for sample, epoch, value in verdicts:
        if value is None:
            continue
        tries = by_try.setdefault(sample, {})
        tries[epoch] = tries.get(epoch, True) and is_success(value)
    return {sample: [ok for _, ok in sorted(tries.items())] for sample, tries in by_try.items()}
