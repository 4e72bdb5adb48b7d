"""Printing a run record: its steps as a table, then what happened and why."""

from __future__ import annotations

from vectorstep.cli.output import STATUS_STYLES, Output, duration, tokens
from vectorstep.cli.trust_panel import chain, print_trust_panel
from vectorstep.domain.records import RunRecord
from vectorstep.trust.explain import score_text as score

STEP_HEADERS = ("step", "status", "S", "trust", "model", "tokens in/out", "duration")


def print_run(run: RunRecord, out: Output, *, show_log: bool = False) -> None:
    out.line(f"run {run.run_id}  {run.pipeline}  [{run.stage}]", style="bold")
    rows = [
        (
            step.name,
            step.status.value,
            score(step.confidence),
            score(step.combined_trust),
            step.model or "—",
            tokens(step.input_tokens, step.output_tokens),
            duration(step.duration_ms),
        )
        for step in run.steps
    ]
    if rows:
        out.table(STEP_HEADERS, rows, status_column=1)
    out.line(
        f"status: {run.status.value}" + (f" — {run.error}" if run.error else ""),
        style=STATUS_STYLES.get(run.status.value),
    )
    _print_links(run, out)
    for step in run.steps:
        if step.output and step.status.value != "skipped":
            out.line(f"  {step.name}: {step.output.get('summary', '')}")
        if step.trust_report:
            out.line(f"      trust: {chain(step.trust_report)}", style="dim")
        for warning in step.warnings:
            out.line(f"  {step.name}: warning: {warning}", style="yellow")
    if show_log:
        for step in run.steps:
            print_trust_panel(step, out)
    if show_log and run.log:
        out.line()
        out.line("log:", style="bold")
        for entry in run.log:
            out.line(f"  {entry.ts.strftime('%H:%M:%S.%f')[:-3]} {entry.level:<7} {entry.message}")


def _print_links(run: RunRecord, out: Output) -> None:
    """The runs this one is linked to by `executor: pipeline`: its parent, and the children it started."""
    if run.parent_run_id:
        out.line(f"the sub-pipeline of run {run.parent_run_id} (its step {run.parent_step or '?'})")
    for child in run.children:
        out.line(f"  {child.step}: sub-pipeline run {child.run_id} ({child.pipeline}, {child.status})")
