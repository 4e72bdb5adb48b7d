"""The Trust panel in the terminal: S, V, G, D and combined trust, claims, and how it was calculated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vectorstep.cli.output import Output
from vectorstep.domain.records import StepRecord
from vectorstep.trust.explain import configuration_summary, narrative
from vectorstep.trust.explain import score_text as score


def chain(report: Mapping[str, Any]) -> str:
    """One line: how trust moved from S to the combined figure."""
    signals = report.get("signals") or {}
    parts = [f"S {score(signals.get('S'))}"]
    if signals.get("V") is not None:
        parts.append(f"V {score(signals['V'])}")
    if report.get("grounding") is not None:
        parts.append(f"G {score(signals.get('G'))}")
    if signals.get("D") is not None:
        parts.append(f"D {'PASS' if signals['D'] else 'FAIL'}")
    return f"{'  '.join(parts)}  → combined {score(report.get('combined_trust'))} ({report.get('mode', 'shadow')})"


def print_trust_panel(step: StepRecord, out: Output) -> None:
    report = step.trust_report
    if not report:
        return
    out.line()
    out.line(f"Trust ({report.get('mode', 'shadow')}) — {step.name}", style="bold")
    out.line(f"  {chain(report)}")
    for line in _who(report):
        out.line(f"  {line}", style="dim")
    divergence = report.get("divergence")
    if divergence and divergence.get("flagged"):
        out.line(f"  ⚠ self-report and evidence diverge: |G − S| = {divergence['gap']:.2f}", style="yellow")
    _claims(report.get("grounding") or {}, out)
    out.line("  How was this calculated?", style="bold")
    for line in narrative(report):
        out.line(f"    {line}")
    out.line("  Step configuration", style="bold")
    for line in configuration_summary(report):
        out.line(f"    {line}")


def _who(report: Mapping[str, Any]) -> list[str]:
    lines = []
    verifier = report.get("verifier")
    if verifier and verifier.get("triggered"):
        lines.append(f"V: {verifier.get('mode')} verifier {verifier.get('agent')} ({verifier.get('model')})")
    grounding = report.get("grounding")
    if grounding and grounding.get("reason") != "no_trace":
        lines.append(f"G: judge {grounding.get('agent')} ({grounding.get('model')})")
    return lines


def _claims(grounding: Mapping[str, Any], out: Output) -> None:
    for claim in grounding.get("claims") or []:
        mark, style = ("✓", "green") if claim.get("supported") else ("✗", "red")
        out.line(f"  {mark} {claim.get('claim')}", style=style)
        if claim.get("evidence"):
            out.line(f"      {claim['evidence']}", style="dim")
        if claim.get("possible_truncation_artefact"):
            where = " (the text it needs was cut)" if claim.get("evidence_in_omitted_text") else ""
            out.line(
                f"      possibly a truncation artefact{where}: raise {grounding.get('setting_to_raise')}",
                style="yellow",
            )
    if grounding.get("score_mismatch"):
        out.line(
            f"  the judge reported {score(grounding.get('judge_reported_score'))} but marked "
            f"{score(grounding.get('score'))} of its claims supported; G uses the claims",
            style="yellow",
        )
