"""Explaining a trust report in plain words: "How was this calculated?" and "Step configuration".

Built from the stored report only, never from today's pipeline files. A report written before a
field existed is told honestly ("isn't recorded for this older run"), never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Report = Mapping[str, Any]
NOT_RECORDED = "isn't recorded for this older run"


def _pct(value: float) -> str:
    return f"{value:.0%}"


def score_text(value: float | None) -> str:
    """A score as every surface shows it: two decimals, or a dash when there is none."""
    return "—" if value is None else f"{value:.2f}"


_num = score_text


def narrative(report: Report) -> list[str]:
    """The run's walkthrough: self-report → verifier → calibration → grounding → checks → decision."""
    signals = report.get("signals") or {}
    lines = [f"The agent reported a confidence of {_num(signals.get('S'))} (S)."]
    lines.extend(_verifier_lines(report.get("verifier"), signals))
    lines.extend(_calibration_lines(report.get("calibration")))
    lines.extend(_grounding_lines(report.get("grounding"), signals, report))
    lines.extend(_check_lines(report.get("deterministic_checks") or []))
    lines.append(_decision_line(report))
    return lines


def _verifier_lines(verifier: Mapping[str, Any] | None, signals: Mapping[str, Any]) -> list[str]:
    if not verifier:
        return []
    who = _who(verifier)
    if not verifier.get("triggered"):
        return [
            f"The {verifier.get('mode', '')} verifier did not run: {verifier.get('trigger_reason', 'not triggered')}."
        ]
    if verifier.get("score") is None:
        return [f"The {verifier.get('mode')} verifier{who} gave no score ({verifier.get('error')}), so S was kept."]
    score, before, after = verifier["score"], signals.get("S"), signals.get("S_after_V")
    mode = str(verifier.get("mode"))
    opening = f"{'An' if mode[:1] in 'aeiou' else 'A'} {mode} verifier{who} gave {_num(score)} (V)."
    if verifier.get("combination_strategy") == "minimum":
        return [
            f"{opening} With the minimum strategy, trust became min({_num(before)}, {_num(score)}) = {_num(after)}."
        ]
    floor = signals.get("V_veto_floor")
    if after == before:
        why = (
            f"not below the veto floor of {_num(floor)}: this step only lets a verifier lower trust when it "
            f"scores below {_pct(floor)}"
            if floor is not None
            else "not low enough to veto (the veto floor of this older run isn't recorded)"
        )
        return [f"{opening} That is {why}, so S = {_num(before)} was kept."]
    floor_text = f" {_num(floor)}" if floor is not None else ""
    return [f"{opening} That is below the veto floor{floor_text}, so trust became {_num(after)}."]


def _calibration_lines(calibration: Mapping[str, Any] | None) -> list[str]:
    if not calibration:
        return []
    raw, calibrated = calibration.get("raw"), calibration.get("calibrated")
    if calibration.get("validated"):
        return [
            f"Calibration is enforced: this bin of the agent's history ({calibration.get('n')} marked outcomes) "
            f"was right {_pct(calibrated or 0)} of the time, so {_num(raw)} became {_num(calibrated)}."
        ]
    action = calibration.get("on_uncalibrated")
    result = "trust became 0" if action == "escalate" else "trust was left as it was"
    return [
        f"Calibration is enforced but this bin has only {calibration.get('n')} of the "
        f"{calibration.get('n_min')} marked outcomes it needs; on_uncalibrated is {action}, so {result}."
    ]


def _grounding_lines(grounding: Mapping[str, Any] | None, signals: Mapping[str, Any], report: Report) -> list[str]:
    if not grounding:
        return []
    local = grounding.get("executor") == "local"
    if not grounding.get("computed"):
        if grounding.get("reason") == "no_trace":
            return ["Grounding had no evidence trail to check (no tool calls), so G is empty and capped nothing."]
        if local:
            return [
                "The anchor check found no statement it could look up (no figure, time or id), "
                "so G is empty and capped nothing."
            ]
        return [f"Grounding did not compute ({grounding.get('error')}), so G is empty and capped nothing."]
    claims = grounding.get("claims") or []
    lines = _who_found(grounding, claims, signals)
    divergence = report.get("divergence")
    if divergence and divergence.get("flagged"):
        lines.append(
            f"The agent's self-report and its evidence diverge: |G − S| = {divergence['gap']:.2f} "
            f"(flagged at {divergence['threshold']:g} or more)."
        )
    flagged = [claim for claim in claims if claim.get("possible_truncation_artefact")]
    if flagged:
        count = grounding.get("truncated_events")
        lines.append(
            f"{count} transcript {'entry was' if count == 1 else 'entries were'} shortened for the judge, and "
            f"{len(flagged)} unsupported {'claim' if len(flagged) == 1 else 'claims'} may be a truncation "
            f"artefact rather than a hallucination (raise {grounding.get('setting_to_raise')})."
        )
    enforce = grounding.get("enforce")
    if enforce is None:
        lines.append(f"Whether grounding was enforced {NOT_RECORDED}.")
    elif enforce:
        cap = next((op for op in report.get("derivation") or [] if op.get("operation") == "grounding_cap"), None)
        if cap:
            lines.append(f"Grounding is enforced: trust became min({_num(cap['input'])}, G) = {_num(cap['output'])}.")
    else:
        lines.append("Grounding runs in shadow mode on this step: G was recorded and changed nothing.")
    return lines


def _who_found(grounding: Mapping[str, Any], claims: list[Mapping[str, Any]], signals: Mapping[str, Any]) -> list[str]:
    """Who computed G (a judge, or the anchor check) and from how many claims."""
    if grounding.get("executor") == "local":
        decided = [claim for claim in claims if (claim.get("local") or {}).get("verdict") != "undecidable"]
        supported = sum(1 for claim in decided if claim.get("supported"))
        return [
            f"The anchor check (no model) found {supported} of {len(decided)} checkable statements backed by "
            f"the tool results: G = {_num(signals.get('G'))}."
        ]
    supported = sum(1 for claim in claims if claim.get("supported"))
    found = f"{supported} of {len(claims)} load-bearing claims supported" if claims else "no claim list"
    lines = [f"A grounding judge{_who(grounding)} found {found}: G = {_num(signals.get('G'))}."]
    count = grounding.get("anchor_disagreements") or 0
    if count:
        lines.append(
            f"The model-free anchor check disagreed with the judge on {count} "
            f"{'claim' if count == 1 else 'claims'}; G still follows the judge."
        )
    return lines


def _check_lines(checks: list[Mapping[str, Any]]) -> list[str]:
    if not checks:
        return []
    failed = [check for check in checks if not check.get("passed")]
    if not failed:
        return [
            f"All {len(checks)} deterministic checks passed." if len(checks) > 1 else "The deterministic check passed."
        ]
    names = ", ".join(f"{check.get('name')} ({check.get('detail')})" for check in failed)
    return [f"A deterministic check failed — {names} — so trust became 0."]


def _decision_line(report: Report) -> str:
    gate = report.get("gate") or {}
    trust, threshold = report.get("combined_trust"), gate.get("confidence_threshold")
    outcome = gate.get("outcome")
    if threshold is None:
        return f"Combined trust {_num(trust)}; the threshold {NOT_RECORDED}."
    if outcome == "passed":
        return f"Combined trust {_num(trust)} is at or above the threshold {_num(threshold)}: the step proceeded."
    return (
        f"Combined trust {_num(trust)} is below the threshold {_num(threshold)}: "
        f"on_low_confidence is {gate.get('on_low_confidence')}, so the step {outcome}."
    )


def _who(call: Mapping[str, Any]) -> str:
    parts = [part for part in (call.get("agent"), call.get("model")) if part]
    return f" ({', '.join(parts)})" if parts else ""


def configuration_summary(report: Report) -> list[str]:
    """What the step is set up to do, from the configuration stored with this run."""
    config = report.get("configuration")
    if not config:
        return [f"The step's configuration {NOT_RECORDED}."]
    gated = " (a branch: gated with its group, on the joined value)" if config.get("gated_by_group") else ""
    lines = [
        f"Threshold {_num(config.get('confidence_threshold'))}; below it: {config.get('on_low_confidence')}{gated}."
    ]
    verifier = config.get("verifier")
    if verifier:
        strategy = verifier.get("combination_strategy")
        floor = verifier.get("veto_floor")
        detail = f"veto with a veto floor of {_num(floor)}" if strategy == "veto" else "minimum of S and V"
        trigger = verifier.get("trigger") or {}
        when = (
            "always"
            if trigger.get("always")
            else f"when {_num(trigger.get('confidence_above'))} < S < {_num(trigger.get('confidence_below'))}"
        )
        lines.append(f"Verifier: {verifier.get('mode')} ({verifier.get('agent')}), {detail}, runs {when}.")
    else:
        lines.append("Verifier: none.")
    grounding = config.get("grounding")
    if grounding:
        state = "enforced (G caps trust)" if grounding.get("enforce") else "shadow (G is recorded only)"
        if grounding.get("executor") == "local":
            lines.append(f"Grounding: {state}, by the anchor check (no model).")
        else:
            lines.append(
                f"Grounding: {state}, judge {grounding.get('agent')}, "
                f"{grounding.get('max_trace_chars')} characters per transcript entry."
            )
    else:
        lines.append("Grounding: none.")
    checks = config.get("deterministic_checks") or []
    lines.append(f"Deterministic checks: {', '.join(checks)}." if checks else "Deterministic checks: none.")
    calibration = config.get("calibration")
    if calibration:
        state = "enforced" if calibration.get("enforce") else "not enforced"
        settings = ""
        if calibration.get("n_min") is not None:  # older rows recorded the step's block only
            estimator = "Wilson lower bound" if calibration.get("estimator") == "lower_bound" else "plain mean"
            settings = (
                f", bins of {calibration.get('bin_width')}, validated at {calibration.get('n_min')} marks, "
                f"estimated by the {estimator}"
            )
        lines.append(f"Calibration: {state}{settings}; an uncalibrated bin means {calibration.get('on_uncalibrated')}.")
    else:
        lines.append("Calibration: none.")
    return lines
