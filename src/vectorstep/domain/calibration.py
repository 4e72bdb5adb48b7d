"""Calibration (SYSTEM.md §10): does this agent's 0.9 mean 90%, by its marked track record?

A step's history is kept per **bucket** — (step, `executor:agent`, model, provider, `prompt_hash`,
`agent_version`), so editing a prompt or an agent starts afresh — and split into **bins** of
`bin_width` by the predicted trust (after the verifier). A bin is validated when it holds at least
`n_min` labels (1 correct, 0.5 partial, 0 incorrect). Its estimate is the plain mean, or — the
default — the Wilson lower bound of it, which a small bin cannot talk up: 18 of 20 right is a
mean of 0.90 but a 90%-confidence lower bound of 0.78.
"""

from __future__ import annotations

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
    async def labels(self, bucket: Bucket, low: float, high: float) -> list[float]:
        """The labels of production steps of `bucket` whose predicted trust was in [low, high)."""
        ...


def estimate(labels: Sequence[float], n_min: int, estimator: Estimator, confidence: float = 0.9) -> Estimate:
    n = len(labels)
    if n == 0:
        return Estimate(0, None, None, False)
    mean = sum(labels) / n
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
