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
        lines.append(f"V: {verifier.get('mode')} verifier {_named(verifier)}")
    grounding = report.get("grounding")
    if grounding and grounding.get("executor") == "local":
        lines.append("G: the anchor check (no model)")
    elif grounding and grounding.get("reason") != "no_trace":
        lines.append(f"G: judge {_named(grounding)}")
    return lines


def _named(call: Mapping[str, Any]) -> str:
    """An agent and its model; a model that never answered (a timeout) is not printed as `None`."""
    agent = call.get("agent") or "—"
    return f"{agent} ({call['model']})" if call.get("model") else f"{agent} (no answer)"


def _claims(grounding: Mapping[str, Any], out: Output) -> None:
    local_only = grounding.get("executor") == "local"
    for claim in grounding.get("claims") or []:
        verdict = (claim.get("local") or {}).get("verdict")
        if local_only and verdict == "undecidable":
            mark, style = "?", "dim"
        else:
            mark, style = ("✓", "green") if claim.get("supported") else ("✗", "red")
        out.line(f"  {mark} {claim.get('claim')}", style=style)
        if claim.get("evidence") and not local_only:
            out.line(f"      {claim['evidence']}", style="dim")
        _where(claim, out)
        if verdict and not local_only:
            disagrees = verdict != "undecidable" and (verdict == "supported") != claim.get("supported")
            prefix = "disagrees — " if disagrees else ""
            reason = (claim.get("local") or {}).get("reason")
            out.line(f"      {prefix}anchor check: {verdict} — {reason}", style="yellow" if disagrees else "dim")
        elif local_only:
            out.line(f"      {(claim.get('local') or {}).get('reason')}", style="dim")
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


def _where(claim: Mapping[str, Any], out: Output) -> None:
    """The span a claim's evidence points to, in the whole tool result."""
    pointer = claim.get("evidence_pointer") or (claim.get("local") or {}).get("pointer")
    if pointer:
        where = f"{pointer.get('tool')}, characters {pointer['start']:,}–{pointer['end']:,}"
        out.line(f"      ↳ {where}: {_one_line(str(pointer.get('excerpt') or ''))}", style="dim")
    elif claim.get("evidence_not_found"):
        out.line("      ↳ the judge's evidence is in no tool result", style="yellow")


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
