"""What a run has spent (tokens and cost, summed over its steps), and whether that breaks its `budget:`."""

from __future__ import annotations

from dataclasses import dataclass, field

from vectorstep.domain.records import StepRecord
from vectorstep.spec.pipeline import BudgetSpec


@dataclass
class Spent:
    """What a run has spent so far: its steps' tokens and cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    priced: float = 0.0
    unpriced: bool = False  # some tokens have no price: the run's cost is unknown
    steps: list[StepRecord] = field(default_factory=list)

    def add(self, record: StepRecord) -> None:
        self.steps.append(record)
        self.input_tokens += record.total_input_tokens
        self.output_tokens += record.total_output_tokens
        if record.cost is not None:
            self.priced += record.cost
        elif record.total_input_tokens or record.total_output_tokens:
            self.unpriced = True

    @property
    def cost(self) -> float | None:
        return None if self.unpriced else round(self.priced, 6)


def over_budget(budget: BudgetSpec | None, totals: Spent) -> str | None:
    """Why the run must stop for its `budget:`, or None."""
    if budget is None:
        return None
    tokens = totals.input_tokens + totals.output_tokens
    if budget.max_tokens is not None and tokens > budget.max_tokens:
        return f"budget exceeded: {tokens:,} tokens used, max_tokens is {budget.max_tokens:,}"
    if budget.max_usd is None:
        return None
    if totals.cost is not None and totals.cost > budget.max_usd:
        return f"budget exceeded: {totals.cost:.4f} USD spent, max_usd is {budget.max_usd:g}"
    # With some tokens unpriced, what is priced is the least the run has spent: counted on request.
    if totals.cost is None and budget.include_approx_cost and totals.priced > budget.max_usd:
        return (
            f"budget exceeded: at least {totals.priced:.4f} USD spent (some tokens have no price; "
            f"include_approx_cost), max_usd is {budget.max_usd:g}"
        )
    return None
