"""Which key tables docs/configuration.md holds, and the model each one is rendered from."""

from __future__ import annotations

from pydantic import BaseModel

from vectorstep.spec import agent, executor_config, pipeline, readiness, service, steps, trust_blocks
from vectorstep.spec.reference import Block, Row

_USE_TYPE = "string, a file name in `steps_dir` without `.yaml`"
_USE = Row("use", _USE_TYPE, "none", "take the step from the [step library](#the-step-library); keys written here win")
_USE_BRANCH = Row("use", _USE_TYPE, "none", "take the branch from the [step library](#the-step-library)")
# Where a branch or a fan-out reads a step's key its own way.
_STEP = "as for a [step](#sequential-step-keys)"
_JOINED = "; its own verifier and judge run after its primary call, and its combined trust is what enters the join"
_CHECKS = "no `human` check. Shell and webhook checks; a failed check makes the branch bring 0 to the join"
_BRANCH_NOTES = {
    "executor": _STEP,
    "executor_config": _STEP,
    "prompt_template": _STEP,
    "timeout_seconds": (
        f"time limit of each attempt of this branch, {_STEP}. The group's `timeout_seconds` still bounds the "
        "whole group."
    ),
    "retry": _STEP,
    "verifier": _STEP + _JOINED,
    "grounding": _STEP + _JOINED,
    "deterministic_checks": _CHECKS,
    "calibration": _STEP,
    "readiness": f"{_STEP} (a branch's `readiness` overrides its group's, tier by tier)",
}
_BRANCH_FIRST = ("name", "description", "tags", "when", "weight")
_EVERY = f"{_STEP}, and applied to every branch"
_FAN_OUT_NOTES = {
    "executor": _EVERY,
    "executor_config": _EVERY,
    "prompt_template": _EVERY,
    "timeout_seconds": (
        "Time limit of the **whole fan-out**, each branch's verifier, judge and checks included. It is not a "
        "per-attempt limit: each branch attempt is limited only by the executor's own "
        "`executor_config.timeout_seconds` (and `limits.max_run_seconds`). A branch still running when it runs "
        "out is cancelled, records no step, and counts as 0."
    ),
    "retry": _EVERY,
    "verifier": _EVERY + ": each branch has its own verifier and judge, and its combined trust enters the join",
    "grounding": _EVERY + ": each branch has its own verifier and judge, and its combined trust enters the join",
    "deterministic_checks": "no `human` check. Shell and webhook checks, applied to every branch; a failed check "
    "makes that branch bring 0 to the join",
    "calibration": _EVERY,
    "readiness": f"{_STEP}; readiness counts each item's execution as one run of the fan-out",
}


def _blocks() -> list[Block]:
    return [
        Block("service", service.ServiceSpec),
        Block("database", service.DatabaseSpec),
        Block("gateway", service.GatewaySpec),
        Block("executors", service.ExecutorsSpec, expand={"openclaw": False}),
        Block("providers", service.ProviderSpec),
        Block("mcp-stdio", service.StdioServerSpec),
        Block("mcp-http", service.HttpServerSpec),
        Block("limits", service.LimitsSpec),
        Block("tool-policy", service.ToolPolicySpec),
        Block("tool-rule", service.ToolRuleSpec),
        Block("tool-match", service.ToolMatchSpec),
        Block("auth", service.AuthSpec, expand={"tokens": True}),
        Block("human-approval", service.HumanApprovalSpec),
        Block("approval-route", service.ApprovalRouteSpec),
        Block(
            "channel-blocks",
            service.NotificationChannelsSpec,
            expand={"webhook": False, "slack": False, "telegram": False, "email": False},
        ),
        Block("notification-channels", service.NotificationChannelsSpec),
        Block("intake", service.IntakeSpec, expand={"alertmanager": False}),
        Block("dedup", service.ServiceDedupSpec),
        Block("concurrency", service.ConcurrencySpec),
        Block("calibration-settings", service.CalibrationSettingsSpec),
        Block("replay-settings", service.ReplaySettingsSpec),
        Block("pricing", service.PricingSpec, expand={"models": True, "models[].match": False}),
        Block("server", service.ServerSpec),
        Block("telemetry", service.TelemetrySpec),
        Block("pipeline", pipeline.PipelineSpec),
        Block("trigger", pipeline.TriggerSpec, expand={"dedup": True}),
        Block("match-operators", pipeline.MatchOperators),
        Block("context-template", pipeline.ContextTemplateSpec),
        Block("budget", pipeline.BudgetSpec),
        Block("schedule", pipeline.ScheduleSpec),
        Block("durable", pipeline.DurableSpec),
        Block("notification-target", pipeline.NotificationTargetSpec),
        Block(
            "readiness",
            readiness.ReadinessSpec,
            expand={"operational": False, "confidence": False, "accuracy": False, "calibration": False},
        ),
        Block("step", steps.StepSpec, extra=(_USE,), first=("name",)),
        Block("retry", steps.RetrySpec),
        Block("on-failure", steps.OnFailureSpec, expand={"webhook": True}),
        Block("loop-until", steps.LoopUntilSpec),
        Block("gateway-config", executor_config.GatewayConfig),
        Block("webhook-config", executor_config.WebhookConfig),
        Block("notify-config", executor_config.NotifyConfig),
        Block("openclaw-config", executor_config.OpenClawConfig),
        Block("human-config", executor_config.HumanConfig),
        Block("pipeline-config", executor_config.PipelineConfig),
        Block("parallel", steps.ParallelSpec),
        Block("branch", steps.BranchSpec, extra=(_USE_BRANCH,), notes=_BRANCH_NOTES, first=_BRANCH_FIRST),
        Block("fan-out", steps.FanOutSpec, notes=_FAN_OUT_NOTES, first=("name", "over", "as")),
        Block("verifier", trust_blocks.VerifierSpec, expand={"trigger": False}),
        Block("grounding", trust_blocks.GroundingSpec),
        Block("shell-check", trust_blocks.ShellCheckSpec),
        Block("webhook-check", trust_blocks.WebhookCheckSpec),
        Block("human-check", trust_blocks.HumanCheckSpec),
        Block("calibration", trust_blocks.CalibrationSpec),
        Block("agent", agent.AgentSpec, expand={"cases": True}),
        Block("script-turn", agent.ScriptTurn, expand={"tool_calls": True}),
    ]


def config_blocks() -> dict[str, Block]:
    """Every generated table, by the name its markers carry."""
    return {block.name: block for block in _blocks()}


# What users write: every field reachable from these must be in some table.
ROOT_MODELS: tuple[type[BaseModel], ...] = (service.ServiceSpec, pipeline.PipelineSpec, agent.AgentSpec)
