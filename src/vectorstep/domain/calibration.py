"""Calibration (SYSTEM.md §10): does this agent's 0.9 mean 90%, by its marked track record?

A step's history is kept per **bucket** — (step, `executor:agent`, model, provider, `prompt_hash`,
`agent_version`), so editing a prompt or an agent starts afresh — and split into **bins** of
`bin_width` by the predicted trust (after the verifier). A bin is validated when it holds at least
`n_min` labels (1 correct, 0.5 partial, 0 incorrect). Its estimate is the plain mean, or — the
default — the Wilson lower bound of it, which a small bin cannot talk up: 18 of 20 right is a
mean of 0.90 but a 90%-confidence lower bound of 0.78.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, Protocol

Estimator = Literal["mean", "lower_bound"]


@dataclass(frozen=True)
class Bucket:
    step: str
    executor_agent: str  # `gateway:investigator`
    model: str | None
    provider: str | None
    prompt_hash: str | None
    agent_version: str | None

    @classmethod
    def of(
        cls,
        step: str,
        *,
        executor: str,
        agent: str | None,
        model: str | None,
        provider: str | None,
        prompt_hash: str | None,
        agent_version: str | None,
    ) -> Bucket:
        return cls(step, f"{executor}:{agent or ''}", model, provider, prompt_hash, agent_version)

    @property
    def key(self) -> str:
        """A short stable name of the bucket, under which its counters are kept."""
        fields = (self.step, self.executor_agent, self.model, self.provider, self.prompt_hash, self.agent_version)
        return hashlib.sha256("\x1f".join(field or "" for field in fields).encode("utf-8")).hexdigest()


# Counters are kept per cell of 0.01 of predicted trust; a bin of any `bin_width` that is a multiple
# of 0.01 is the sum of its cells, so changing `bin_width` needs no rebuild.
CELLS = 100


def cell_of(predicted: float) -> int:
    return min(max(int(predicted * CELLS + 1e-9), 0), CELLS - 1)


def cells_of(low: float, high: float) -> range:
    """The cells of the bin [low, high) (the last bin takes 1.0 too)."""
    return range(round(low * CELLS), min(round(high * CELLS), CELLS))


def label_of(own: float | None, checks_failed: bool, of_run: float | None) -> float | None:
    """SYSTEM.md §10: the step's own latest mark; else 0 for a failed check; else its run's mark."""
    if own is not None:
        return own
    if checks_failed:
        return 0.0
    return of_run


@dataclass(frozen=True)
class Bin:
    low: float
    high: float

    @classmethod
    def of(cls, predicted: float, width: float) -> Bin:
        count = max(1, math.ceil(1 / width - 1e-9))
        index = min(int(max(predicted, 0.0) / width + 1e-9), count - 1)  # 1.0 falls in the last bin
        return cls(round(index * width, 10), round(min(1.0, (index + 1) * width), 10))


@dataclass(frozen=True)
class Estimate:
    n: int
    mean: float | None
    estimate: float | None  # what the gate uses: the mean or its lower bound
    validated: bool


class CalibrationHistory(Protocol):
    async def counts(self, bucket: Bucket, low: float, high: float) -> tuple[int, float]:
        """How many production steps of `bucket` with predicted trust in [low, high) have a label, and
        the sum of their labels (kept as counters, never a scan of history)."""
        ...


def estimate(labels: Sequence[float], n_min: int, estimator: Estimator, confidence: float = 0.9) -> Estimate:
    return estimate_counts(len(labels), sum(labels), n_min, estimator, confidence)


def estimate_counts(n: int, total: float, n_min: int, estimator: Estimator, confidence: float = 0.9) -> Estimate:
    if n == 0:
        return Estimate(0, None, None, False)
    mean = min(max(total / n, 0.0), 1.0)
    value = mean if estimator == "mean" else wilson_lower_bound(mean, n, confidence)
    return Estimate(n, round(mean, 6), round(value, 6), n >= n_min)


def wilson_lower_bound(proportion: float, n: int, confidence: float = 0.9) -> float:
    """The lower end of the Wilson score interval (one-sided at `confidence`)."""
    if n <= 0:
        return 0.0
    z = NormalDist().inv_cdf(confidence)
    centre = proportion + z * z / (2 * n)
    spread = z * math.sqrt(proportion * (1 - proportion) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))
