"""`vectorstep.yaml`: the service settings (SYSTEM.md §2)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from vectorstep.domain.artifacts import DEFAULT_MAX_BYTES, DEFAULT_MAX_PER_STEP
from vectorstep.spec.base import RegexPattern, SpecModel

PYTHON_TOOL_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
DATABASE_SCHEMES = (
    "sqlite:///",
    "sqlite+pysqlite:///",
    "sqlite+aiosqlite:///",
    "postgresql://",
    "postgresql+asyncpg://",
    "postgres://",
)


class DatabaseSpec(SpecModel):
    url: str = "sqlite:///./vectorstep.db"

    @field_validator("url")
    @classmethod
    def _supported(cls, url: str) -> str:
        if not url.startswith(DATABASE_SCHEMES):
            scheme = url.split("://", 1)[0] if "://" in url else url[:20]
            raise ValueError(
                f"unsupported database {scheme!r}; use sqlite:///path/to/file.db or postgresql://user@host/db"
            )
        return url


class GatewaySpec(SpecModel):
    mode: Literal["embedded", "remote"] = "embedded"
    url: str | None = None
    token: str | None = None
    # `vectorstep gateway serve`: whether its REST routes (/agents, /mcp/...) need the token. Existing
    # services send none; `none` is for a gateway on a private network.
    rest_auth: Literal["token", "none"] = "token"

    @model_validator(mode="after")
    def _remote_needs_url(self) -> GatewaySpec:
        if self.mode == "remote" and not self.url:
            raise ValueError("gateway mode 'remote' needs `url` (for example ws://host:8788/rpc)")
        return self


class ProviderSpec(SpecModel):
    api_key: str | None = None
    base_url: str | None = None
    api_version: str | None = None  # Azure OpenAI
    headers: dict[str, str] = Field(default_factory=dict)


class StdioServerSpec(SpecModel):
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServerSpec(SpecModel):
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)


def _server_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "http" if "url" in value and "command" not in value else "stdio"
    return "http" if isinstance(value, HttpServerSpec) else "stdio"


McpServerSpec = Annotated[
    Annotated[StdioServerSpec, Tag("stdio")] | Annotated[HttpServerSpec, Tag("http")],
    Discriminator(_server_kind),
]


class LimitsSpec(SpecModel):
    max_agent_iterations: int = Field(default=20, ge=1, le=500)
    request_timeout_seconds: float = Field(default=180.0, gt=0)
    mcp_tool_timeout_seconds: float = Field(default=30.0, gt=0)
    llm_retry_attempts: int = Field(default=2, ge=0, le=10)
    llm_retry_base_delay_seconds: float = Field(default=1.0, ge=0)
    max_concurrent_runs: int = Field(default=10, ge=1)
    trace_tool_result_max_chars: int = Field(default=3000, ge=100)
    max_run_seconds: float | None = Field(default=None, gt=0)
    # How deep `executor: pipeline` may nest: a parent, its child, the child's child, …
    max_pipeline_depth: int = Field(default=5, ge=1, le=50)
    # An answer's `artifacts` (docs/configuration.md#artifacts): one longer than this (UTF-8 bytes) is
    # stored truncated, with a line saying so; beyond the count, the rest are left out with a warning.
    max_artifact_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1024, le=67_108_864)
    max_artifacts_per_step: int = Field(default=DEFAULT_MAX_PER_STEP, ge=0, le=1000)


class ToolMatchSpec(SpecModel):
    server: str | None = None
    tool: str | None = None  # a glob
    agent: str | None = None  # a glob
    input_regex: RegexPattern | None = None  # searched in the call's arguments as JSON


class ToolRuleSpec(SpecModel):
    allow: ToolMatchSpec | None = None
    deny: ToolMatchSpec | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _one_action(self) -> ToolRuleSpec:
        if (self.allow is None) == (self.deny is None):
            raise ValueError("a tool rule holds exactly one of `allow` or `deny`")
        if self.deny is not None and not self.reason:
            raise ValueError("a `deny` rule needs a `reason` (it is shown to the agent and in the trace)")
        return self


class ToolPolicySpec(SpecModel):
    default: Literal["allow", "deny"] = "allow"
    rules: list[ToolRuleSpec] = Field(default_factory=list)


# What a token may do (docs/security.md): `intake` only posts events; `viewer` reads; `operator` also
# decides approvals, marks runs and starts runs; `admin` also reloads and sees configuration.
Role = Literal["intake", "viewer", "operator", "admin"]


class TokenSpec(SpecModel):
    name: str = Field(min_length=1)
    token: str = Field(min_length=16, repr=False)
    # The least a token can be: one written before roles existed keeps posting alerts, and nothing more.
    role: Role = "intake"
    # The teams whose runs, approvals and pipelines it sees; none: every team's.
    teams: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    team: str | None = Field(default=None, min_length=1)

    @field_validator("token")
    @classmethod
    def _not_blank(cls, token: str) -> str:
        if token != token.strip() or not token.strip():
            raise ValueError("a token cannot be blank or start or end with whitespace")
        return token

    @model_validator(mode="after")
    def _one_team_key(self) -> TokenSpec:
        if self.team is not None and self.teams is not None:
            raise ValueError("give either `team` (one) or `teams` (a list), not both")
        return self

    @property
    def scope(self) -> tuple[str, ...] | None:
        """The teams this token is limited to, in the order written; None when it is not limited."""
        if self.teams is not None:
            return tuple(dict.fromkeys(self.teams))
        return (self.team,) if self.team is not None else None


class AuthSpec(SpecModel):
    tokens: list[TokenSpec] = Field(default_factory=list)


class SlackSpec(SpecModel):
    webhook_url: str | None = Field(default=None, repr=False)
    bot_token: str | None = Field(default=None, repr=False)
    channel: str | None = None
    api_url: str = "https://slack.com/api"

    @model_validator(mode="after")
    def _one_way_in(self) -> SlackSpec:
        if not self.webhook_url and not (self.bot_token and self.channel):
            raise ValueError("slack needs `webhook_url` (an incoming webhook), or `bot_token` and `channel`")
        return self


class TelegramSpec(SpecModel):
    bot_token: str = Field(repr=False)
    chat_id: str
    api_url: str = "https://api.telegram.org"


class EmailSpec(SpecModel):
    smtp_host: str
    smtp_port: int = 587
    username: str | None = None
    password: str | None = Field(default=None, repr=False)
    starttls: bool = True
    sender: str = Field(alias="from")
    to: list[str] = Field(min_length=1)

    @field_validator("to", mode="before")
    @classmethod
    def _one_address(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class WebhookChannelSpec(SpecModel):
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


class ApprovalRouteSpec(SpecModel):
    channel: Literal["log", "webhook", "slack", "telegram", "email"] = "log"
    webhook: WebhookChannelSpec | None = None
    slack: SlackSpec | None = None
    telegram: TelegramSpec | None = None
    email: EmailSpec | None = None


class HumanApprovalSpec(SpecModel):
    default: ApprovalRouteSpec = Field(default_factory=ApprovalRouteSpec)
    teams: dict[str, ApprovalRouteSpec] = Field(default_factory=dict)


class NotificationChannelsSpec(SpecModel):
    webhook: WebhookChannelSpec | None = None
    slack: SlackSpec | None = None
    telegram: TelegramSpec | None = None
    email: EmailSpec | None = None


class ServiceDedupSpec(SpecModel):
    enabled: bool = True
    window_seconds: int = Field(default=300, ge=0)


class ConcurrencySpec(SpecModel):
    max_runs: int = Field(default=10, ge=1)  # runs one process drives at once
    max_queued: int = Field(default=1000, ge=1)  # PostgreSQL: runs waiting for a worker before webhooks get 429
    # On SIGTERM, runs in flight get this long to finish; then they are interrupted (SQLite) or left
    # for another worker to take up (PostgreSQL).
    shutdown_grace_seconds: float = Field(default=10, ge=0, le=3600)


class CalibrationSettingsSpec(SpecModel):
    n_min: int = Field(default=20, ge=1)
    bin_width: float = Field(default=0.1, gt=0, le=1)

    @field_validator("bin_width")
    @classmethod
    def _whole_cells(cls, width: float) -> float:
        # History is counted in cells of 0.01, which a bin must be made of.
        if abs(width * 100 - round(width * 100)) > 1e-6:
            raise ValueError(f"bin_width must be a multiple of 0.01 (such as 0.05, 0.1 or 0.2), got {width:g}")
        return width

    # The Wilson lower bound by default: a small bin cannot talk its accuracy up.
    estimator: Literal["mean", "lower_bound"] = "lower_bound"
    confidence: float = Field(default=0.9, gt=0.5, lt=1)


class ReplaySettingsSpec(SpecModel):
    # Replaying an agent runs its tools again: only agents whose tools only read may be replayed.
    safe_agents: list[str] = Field(default_factory=list)
    max_concurrency: int = Field(default=4, ge=1, le=64)  # samples answered at once
    max_samples: int = Field(default=200, ge=1, le=10_000)  # the largest `-k`


class PriceMatchSpec(SpecModel):
    provider: str | None = None
    model: str | None = None


class PriceSpec(SpecModel):
    match: PriceMatchSpec
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0)


class PricingSpec(SpecModel):
    currency: str = "USD"
    models: list[PriceSpec] = Field(default_factory=list)


class ServerSpec(SpecModel):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    public_url: str | None = None  # used in links sent to people (approval messages)


class AlertmanagerIntakeSpec(SpecModel):
    # A `resolved` notification says a problem went away: by default it starts no run.
    resolved: Literal["ignore", "run"] = "ignore"


class IntakeSpec(SpecModel):
    alertmanager: AlertmanagerIntakeSpec = Field(default_factory=AlertmanagerIntakeSpec)


class OpenClawSpec(SpecModel):
    url: str | None = None  # ws://host:18789 (http(s):// is read as ws(s)://)
    identity_dir: str = "~/.openclaw/identity"  # holds device.json and device-auth.json
    token: str | None = None  # the gateway's token; else the operator token of device-auth.json
    client_id: str = "gateway-client"
    client_mode: str = "backend"
    role: str = "operator"
    scopes: list[str] = Field(default_factory=lambda: ["operator.read", "operator.write"])
    connect_timeout_seconds: float = Field(default=10.0, gt=0)


class ExecutorsSpec(SpecModel):
    openclaw: OpenClawSpec = Field(default_factory=OpenClawSpec)


class TelemetrySpec(SpecModel):
    # OTLP/HTTP traces (for example http://otel-collector:4318); the standard OTEL_EXPORTER_OTLP_*
    # variables turn them on as well.
    otlp_endpoint: str | None = None
    service_name: str = "vectorstep"
    headers: dict[str, str] = Field(default_factory=dict)


class ServiceSpec(SpecModel):
    database: DatabaseSpec = Field(default_factory=DatabaseSpec)
    pipelines_dir: str = "./pipelines"
    steps_dir: str = "./steps"
    agents_dir: str = "./agents"
    gateway: GatewaySpec = Field(default_factory=GatewaySpec)
    executors: ExecutorsSpec = Field(default_factory=ExecutorsSpec)
    providers: dict[str, ProviderSpec] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerSpec] = Field(default_factory=dict)
    python_tools: dict[str, list[str]] = Field(default_factory=dict)  # group → ["package.module:function", ...]
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    tool_policy: ToolPolicySpec = Field(default_factory=ToolPolicySpec)
    auth: AuthSpec = Field(default_factory=AuthSpec)
    human_approval: HumanApprovalSpec = Field(default_factory=HumanApprovalSpec)
    notifications: NotificationChannelsSpec = Field(default_factory=NotificationChannelsSpec)
    dedup: ServiceDedupSpec = Field(default_factory=ServiceDedupSpec)
    concurrency: ConcurrencySpec = Field(default_factory=ConcurrencySpec)
    calibration: CalibrationSettingsSpec = Field(default_factory=CalibrationSettingsSpec)
    replay: ReplaySettingsSpec = Field(default_factory=ReplaySettingsSpec)
    pricing: PricingSpec = Field(default_factory=PricingSpec)
    server: ServerSpec = Field(default_factory=ServerSpec)
    intake: IntakeSpec = Field(default_factory=IntakeSpec)
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec)
    # Variables whose `${VAR}` values are not secrets (a namespace, a region): shown as they are.
    public_vars: list[str] = Field(default_factory=list)

    @field_validator("mcp_servers", "python_tools")
    @classmethod
    def _server_names(cls, servers: dict[str, Any]) -> dict[str, Any]:
        for name in servers:
            if "__" in name or not name.replace("-", "").replace("_", "").isalnum():
                raise ValueError(
                    f"tool server name {name!r}: use letters, digits, '-' and single '_' "
                    "(tools are named <server>__<tool>)"
                )
        return servers

    @field_validator("python_tools")
    @classmethod
    def _function_references(cls, groups: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, references in groups.items():
            for reference in references:
                if not PYTHON_TOOL_REFERENCE.match(reference):
                    raise ValueError(
                        f"python_tools.{name}: {reference!r} is not `package.module:function` "
                        "(a module importable from the folder of vectorstep.yaml, and a function in it)"
                    )
        return groups

    @model_validator(mode="after")
    def _one_namespace_for_tools(self) -> ServiceSpec:
        shared = sorted(set(self.mcp_servers) & set(self.python_tools))
        if shared:
            raise ValueError(f"{', '.join(shared)}: a name is either an MCP server or a python_tools group, not both")
        return self
