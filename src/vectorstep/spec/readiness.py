"""`readiness:` — the track record a testing pipeline must show before it is flipped to production.

Four tiers, each optional: `operational` (did the step run cleanly), `confidence` (how much does it
trust its answers), `accuracy` (were its marked answers right) and `calibration` (does its trust mean
what it says). The block is written at pipeline level (the house default), on a step, on a parallel
group (for its branches) or on a branch. Advisory only: nothing here ever gates a run.

A tier that is not written is inherited; a tier written as `null` removes the inherited one; a whole
`readiness: null` removes them all (the step opts out). So "not written" and "null" must stay
apart: a tier's presence is in `model_fields_set`, and a whole block's `null` becomes a block that
removes every tier — which also survives a run's snapshot (spec/snapshot.py), because a block
serialises only the tiers it writes, a removed one as `false`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from vectorstep.spec.base import SpecModel

TierName = Literal["operational", "confidence", "accuracy", "calibration"]
TIERS: tuple[TierName, ...] = ("operational", "confidence", "accuracy", "calibration")
# A step's most recent executions that readiness reads; no tier may ask for more than these hold.
EVIDENCE_LIMIT = 1000
# The statuses a finished step execution can end with (skipped and waiting ones are not executions).
EndStatus = Literal["completed", "stopped", "escalated", "aborted", "failed"]
CLEAN_ENDS: tuple[EndStatus, ...] = ("completed", "stopped")
Share = Annotated[float, Field(ge=0.0, le=1.0)]
Count = Annotated[int, Field(ge=1, le=EVIDENCE_LIMIT)]


def _removed(value: Any) -> Any:
    # `false` is how a removed tier is written back (see the module docstring); people write `null`.
    if value is None or value is False:
        return None
    if not isinstance(value, dict | SpecModel):
        raise ValueError(f"got {value!r}; expected a mapping of the tier's settings, or null to remove the tier")
    return value


class OperationalTierSpec(SpecModel):
    """The last `min_runs` executions must all have ended in one of `acceptable_statuses`."""

    min_runs: Count = Field(default=20, description="how many of the step's most recent runs are judged")
    # `stopped` is a clean end too: the step passed its gate and said there is nothing more to do.
    acceptable_statuses: list[EndStatus] = Field(
        default_factory=lambda: list(CLEAN_ENDS),
        min_length=1,
        description=(
            "The last `min_runs` runs must all have ended in one of these. `stopped` is a clean end: "
            "the step passed its gate and said there is nothing more to do. Adding a status makes the "
            "bar lower, not higher."
        ),
    )
    max_age_days: int | None = Field(
        default=None,
        ge=1,
        description="only runs that finished in the last N days count",
        json_schema_extra={"doc_default": "none (any age)"},
    )  # None: executions of any age count
    require_current_config: bool = Field(
        default=False,
        description=(
            "`true`: only runs with the step's current prompt template and agent version count. By "
            "default a reworded prompt keeps the record of clean runs."
        ),
    )  # a reworded prompt need not restart a run of clean executions


class ConfidenceTierSpec(SpecModel):
    """The mean combined trust of the last `min_runs` executions must be at least `min_confidence`."""

    min_confidence: Share | None = Field(
        default=None,
        description=(
            "the mean `combined_trust` of the last `min_runs` runs with the current prompt and agent "
            "version must reach this"
        ),
        json_schema_extra={"doc_default": "the step's `confidence_threshold` (a branch's: its group's)"},
    )  # None: the step's own confidence_threshold
    min_runs: Count = Field(default=20, description="how many of those runs the mean is taken over")


class AccuracyTierSpec(SpecModel):
    """At least `min_marked` labelled executions (`min_human_marked` of them by a person's mark), scoring
    `min_accuracy` on average (correct 1, partial 0.5, incorrect 0)."""

    min_accuracy: Share = Field(
        default=0.85,
        description=(
            "the mean label of the step's marked runs with the current prompt and agent version "
            "(correct 1, partial 0.5, incorrect 0) must reach this"
        ),
    )
    min_marked: Count = Field(default=20, description="how many of those runs must have a label")
    min_human_marked: int = Field(
        default=0,
        ge=0,
        le=EVIDENCE_LIMIT,
        description=(
            "how many of those labels must come from a person's mark (on the step or on its run), not "
            "from a failed check"
        ),
        json_schema_extra={"doc_rule": "at most `min_marked`"},
    )

    @model_validator(mode="after")
    def _human_within_marked(self) -> AccuracyTierSpec:
        if self.min_human_marked > self.min_marked:
            raise ValueError(
                f"min_human_marked ({self.min_human_marked}) cannot exceed min_marked ({self.min_marked}): "
                "marks by a person are among the marked ones"
            )
        return self


class CalibrationTierSpec(SpecModel):
    """Labelled executions binned by trust: some bin holds `n_min`, and every bin that does is right within
    `max_divergence` of the trust it predicts."""

    n_min: Count = Field(
        default=20,
        description=(
            "Marked runs with the current prompt and agent version are put in bins by their trust "
            "after the verifier (`effective_confidence`); some bin must hold `n_min` of them. It is "
            "per bin, not a total."
        ),
    )
    bin_width: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="the width of the bins",
        json_schema_extra={"doc_rule": "a multiple of 0.01"},
    )
    max_divergence: Share = Field(
        default=0.15,
        description=(
            "in every bin holding `n_min`, the mean label must be within this of the mean trust the bin predicts"
        ),
    )

    @field_validator("bin_width")
    @classmethod
    def _whole_hundredths(cls, width: float) -> float:
        # The same rule as the service's `calibration.bin_width`, so one width means one set of bins.
        if abs(width * 100 - round(width * 100)) > 1e-6:
            raise ValueError(f"bin_width must be a multiple of 0.01 (such as 0.05, 0.1 or 0.2), got {width:g}")
        return width


class ReadinessSpec(SpecModel):
    operational: Annotated[OperationalTierSpec | None, BeforeValidator(_removed)] = None
    confidence: Annotated[ConfidenceTierSpec | None, BeforeValidator(_removed)] = None
    accuracy: Annotated[AccuracyTierSpec | None, BeforeValidator(_removed)] = None
    calibration: Annotated[CalibrationTierSpec | None, BeforeValidator(_removed)] = None

    def writes(self, tier: TierName) -> bool:
        """Whether the block itself says something about `tier` (a value, or null to remove it)."""
        return tier in self.model_fields_set

    @property
    def removes_all(self) -> bool:
        return all(self.writes(tier) and getattr(self, tier) is None for tier in TIERS)

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {tier: data.get(tier) or False for tier in TIERS if self.writes(tier)}


def _null_removes_every_tier(value: Any) -> Any:
    if value is None or value is False:
        return dict.fromkeys(TIERS)
    if not isinstance(value, dict | ReadinessSpec):
        raise ValueError(f"got {value!r}; expected a mapping of tiers ({', '.join(TIERS)}), or null to opt out")
    return value


# The `readiness:` key of a pipeline, step, group or branch: not written, an empty block (inherit
# everything); `null`, a block that removes every tier.
ReadinessBlock = Annotated[ReadinessSpec, BeforeValidator(_null_removes_every_tier)]
