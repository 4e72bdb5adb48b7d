"""What the Trust panel shows (SYSTEM.md §15), built from a step's stored record and trust report only.

Each figure comes with who produced it, so S, V, G, D and the combined trust are never unexplained.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vectorstep.domain.records import StepRecord
from vectorstep.trust.explain import configuration_summary, narrative
from vectorstep.trust.explain import score_text as score
from vectorstep.web.ui.evidence_view import EvidenceLink


@dataclass(frozen=True)
class Chip:
    key: str  # S, V, G, D, trust
    label: str
    value: str
    detail: str
    tone: str  # good | bad | warn | muted


@dataclass(frozen=True)
class ClaimView:
    text: str
    supported: bool | None  # None: the anchor check could not decide (local grounding)
    evidence: str
    truncation_note: str | None
    link: EvidenceLink | None = None
    evidence_note: str | None = None  # the evidence is in no tool result, or could not be located
    local: str | None = None  # the anchor check's verdict beside the judge's
    disagrees: bool = False


@dataclass(frozen=True)
class CheckView:
    name: str
    type: str
    passed: bool
    detail: str
    duration_ms: float | None


@dataclass(frozen=True)
class CallView:
    """A model call behind a figure: the primary, the verifier or the grounding judge."""

    role: str
    who: str
    prompt: str | None
    answer: str | None
    note: str | None = None


@dataclass(frozen=True)
class TrustView:
    title: str
    mode: str
    chips: list[Chip]
    divergence: str | None
    claims: list[ClaimView]
    warnings: list[str]
    checks: list[CheckView]
    calls: list[CallView]
    narrative: list[str]
    configuration: list[str]
    grounding_summary: str | None = None
    local_only: bool = False  # G came from the anchor check, not a judge
    verifier_summary: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def trust_view(step: StepRecord, links: list[EvidenceLink | None] | None = None) -> TrustView | None:
    report = step.trust_report
    if not report:
        return None
    signals = report.get("signals") or {}
    mode = str(report.get("mode") or "shadow")
    verifier = report.get("verifier")
    grounding = report.get("grounding")
    checks = report.get("deterministic_checks") or []
    return TrustView(
        title=f"Trust ({mode})",
        mode=mode,
        chips=_chips(report, signals, verifier, grounding, checks),
        divergence=_divergence(report),
        claims=_claims(grounding, links or []),
        warnings=_warnings(grounding),
        checks=[
            CheckView(
                str(check.get("name")),
                str(check.get("type") or ""),
                bool(check.get("passed")),
                str(check.get("detail") or ""),
                check.get("duration_ms"),
            )
            for check in checks
        ],
        calls=_calls(step, verifier, grounding),
        narrative=narrative(report),
        configuration=configuration_summary(report),
        grounding_summary=(grounding or {}).get("summary"),
        local_only=(grounding or {}).get("executor") == "local",
        verifier_summary=(verifier or {}).get("summary"),
    )


def _chips(
    report: Mapping[str, Any],
    signals: Mapping[str, Any],
    verifier: Mapping[str, Any] | None,
    grounding: Mapping[str, Any] | None,
    checks: list[Mapping[str, Any]],
) -> list[Chip]:
    chips = [Chip("S", "S", score(signals.get("S")), "self-reported confidence", "muted")]
    if verifier:
        who = " · ".join(
            str(part) for part in (verifier.get("mode"), verifier.get("agent"), verifier.get("model")) if part
        )
        if not verifier.get("triggered"):
            chips.append(Chip("V", "V", "not run", f"{who} — {verifier.get('trigger_reason')}", "muted"))
        elif verifier.get("score") is None:
            chips.append(Chip("V", "V", "no score", f"{who} — {verifier.get('error')}", "warn"))
        else:
            lowered = signals.get("S_after_V") is not None and signals.get("S_after_V") != signals.get("S")
            chips.append(Chip("V", "V", score(verifier.get("score")), who, "warn" if lowered else "muted"))
    if grounding:
        who = " · ".join(str(part) for part in ("judge", grounding.get("agent"), grounding.get("model")) if part)
        if grounding.get("computed"):
            value = float(signals.get("G") or 0)
            chips.append(Chip("G", "G", score(signals.get("G")), who, "good" if value >= 0.8 else "warn"))
        else:
            why = "no tool calls to check" if grounding.get("reason") == "no_trace" else str(grounding.get("error"))
            chips.append(Chip("G", "G", "—", f"{who} — {why}", "muted"))
    if checks:
        passed = all(check.get("passed") for check in checks)
        failed = sum(1 for check in checks if not check.get("passed"))
        detail = f"{len(checks)} check{'s' if len(checks) != 1 else ''}" + (f", {failed} failed" if failed else "")
        chips.append(Chip("D", "Checks (D)", "PASS" if passed else "FAIL", detail, "good" if passed else "bad"))
    gate = report.get("gate") or {}
    threshold = gate.get("confidence_threshold")
    outcome = str(gate.get("outcome") or "")
    detail = f"threshold {score(threshold)} → {outcome}" if threshold is not None else outcome
    chips.append(
        Chip(
            "trust",
            "Combined trust",
            score(report.get("combined_trust")),
            detail,
            "good" if outcome == "passed" else "bad",
        )
    )
    return chips


def _divergence(report: Mapping[str, Any]) -> str | None:
    divergence = report.get("divergence")
    if not divergence or not divergence.get("flagged"):
        return None
    return (
        f"Self-report and evidence diverge: |G − S| = {divergence['gap']:.2f} "
        f"(flagged at {divergence['threshold']:g} or more)"
    )


def _claims(grounding: Mapping[str, Any] | None, links: list[EvidenceLink | None]) -> list[ClaimView]:
    if not grounding:
        return []
    local_only = grounding.get("executor") == "local"
    views = []
    for number, claim in enumerate(grounding.get("claims") or []):
        note = None
        if claim.get("possible_truncation_artefact"):
            where = (
                " — the text it needs was cut from the judge's copy" if claim.get("evidence_in_omitted_text") else ""
            )
            note = f"possibly a truncation artefact{where}; raise {grounding.get('setting_to_raise')}"
        local = claim.get("local") or {}
        verdict = local.get("verdict")
        supported = None if local_only and verdict == "undecidable" else bool(claim.get("supported"))
        views.append(
            ClaimView(
                str(claim.get("claim")),
                supported,
                "" if local_only else str(claim.get("evidence") or ""),
                note,
                link=links[number] if number < len(links) else None,
                evidence_note=_evidence_note(claim),
                local=f"{verdict} — {local.get('reason')}" if verdict else None,
                disagrees=bool(
                    verdict and verdict != "undecidable" and (verdict == "supported") != claim.get("supported")
                ),
            )
        )
    return views


def _evidence_note(claim: Mapping[str, Any]) -> str | None:
    if claim.get("evidence_not_found"):
        return "the judge's evidence is in no tool result"
    if claim.get("supported") and "evidence_pointer" in claim and claim.get("evidence_pointer") is None:
        return "where this evidence is could not be located"
    return None


def _warnings(grounding: Mapping[str, Any] | None) -> list[str]:
    if not grounding:
        return []
    warnings = []
    truncated = grounding.get("truncated_events") or 0
    if truncated:
        flagged = sum(1 for claim in grounding.get("claims") or [] if claim.get("possible_truncation_artefact"))
        warnings.append(
            f"{truncated} transcript {'entry was' if truncated == 1 else 'entries were'} shortened for the judge"
            + (
                f"; {flagged} unsupported claim{'s' if flagged != 1 else ''} may be a truncation artefact"
                if flagged
                else ""
            )
            + f". Raise {grounding.get('setting_to_raise')} to give the judge more."
        )
    disagreements = grounding.get("anchor_disagreements") or 0
    if disagreements and grounding.get("executor") != "local":
        warnings.append(
            f"The anchor check disagrees with the judge on {disagreements} "
            f"claim{'s' if disagreements != 1 else ''}: read {'them' if disagreements != 1 else 'it'} below."
        )
    missing = grounding.get("evidence_not_found") or 0
    if missing:
        warnings.append(
            f"{missing} claim{'s' if missing != 1 else ''} the judge marked supported "
            f"{'quote' if missing != 1 else 'quotes'} evidence that is in no tool result."
        )
    if grounding.get("score_mismatch"):
        warnings.append(
            f"The judge reported {score(grounding.get('judge_reported_score'))} but marked "
            f"{score(grounding.get('score'))} of its claims supported; G uses the claims."
        )
    return warnings


def _calls(step: StepRecord, verifier: Mapping[str, Any] | None, grounding: Mapping[str, Any] | None) -> list[CallView]:
    who = " · ".join(part for part in (step.agent, step.model) if part) or step.executor
    calls = [CallView("Primary", who, step.prompt, step.raw_output)]
    if verifier and verifier.get("triggered"):
        note = f"the verifier's answer could not be used: {verifier['error']}" if verifier.get("error") else None
        calls.append(CallView("Verifier", _who(verifier), verifier.get("prompt"), verifier.get("raw_output"), note))
    if grounding and grounding.get("reason") != "no_trace":
        note = f"the judge's answer could not be used: {grounding['error']}" if grounding.get("error") else None
        calls.append(
            CallView("Grounding judge", _who(grounding), grounding.get("prompt"), grounding.get("raw_output"), note)
        )
    return calls


def _who(call: Mapping[str, Any]) -> str:
    return " · ".join(str(part) for part in (call.get("agent"), call.get("model")) if part) or "—"
