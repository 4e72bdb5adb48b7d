"""`vectorstep.yaml`: the service settings (docs/configuration.md#vectorstepyaml)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from vectorstep.spec.access import AuthSpec, Role, TokenSpec, ToolMatchSpec, ToolPolicySpec, ToolRuleSpec
from vectorstep.spec.base import SpecModel
from vectorstep.spec.channels import (
    ApprovalRouteSpec,
    EmailSpec,
    HumanApprovalSpec,
    NotificationChannelsSpec,
    SlackSpec,
    TelegramSpec,
    WebhookChannelSpec,
)
from vectorstep.spec.limits import ConcurrencySpec, LimitsSpec, ServiceDedupSpec

# Blocks that live in their own modules, importable from here as before.
__all__ = [
    "ApprovalRouteSpec",
    "AuthSpec",
    "ConcurrencySpec",
    "EmailSpec",
    "HumanApprovalSpec",
    "LimitsSpec",
    "NotificationChannelsSpec",
    "Role",
    "ServiceDedupSpec",
    "ServiceSpec",
    "SlackSpec",
    "TelegramSpec",
    "TokenSpec",
    "ToolMatchSpec",
    "ToolPolicySpec",
    "ToolRuleSpec",
    "WebhookChannelSpec",
]

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
    url: str = Field(
        default="sqlite:///./vectorstep.db", description="the database that stores runs, steps and their logs"
    )

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
    mode: Literal["embedded", "remote"] = Field(
        default="embedded",
        description=(
            "`embedded` runs agents in-process with the agents of `agents_dir`. `remote` sends each "
            "turn to an agent gateway (`vectorstep gateway serve`, or any gateway speaking the same "
            "WebSocket `/rpc` protocol)."
        ),
    )
    url: str | None = Field(
        default=None,
        description=(
            "the remote gateway, for example `ws://agents.internal:8788` (`http://` works too; `/rpc` "
            "is added). **Required when `mode: remote`.**"
        ),
    )
    token: str | None = Field(
        default=None,
        description=(
            "With `mode: remote`, the token this service sends to the gateway. In the gateway's own "
            "`vectorstep.yaml`, the token it requires (`$VECTORSTEP_GATEWAY_TOKEN` wins). Take it "
            "from the environment."
        ),
    )
    # `vectorstep gateway serve`: whether its REST routes (/agents, /mcp/...) need the token. Existing
    # services send none; `none` is for a gateway on a private network.
    rest_auth: Literal["token", "none"] = Field(
        default="token",
        description=(
            "In a gateway's own `vectorstep.yaml`: whether its REST routes (`/agents`, "
            "`/agents/{name}`, `/mcp/tools`, `/mcp/servers`) need the token. Existing services send "
            "none: `none` serves them without it, and the gateway warns at start "
            "([models.md](models.md#running-the-gateway-separately))."
        ),
    )

    @model_validator(mode="after")
    def _remote_needs_url(self) -> GatewaySpec:
        if self.mode == "remote" and not self.url:
            raise ValueError("gateway mode 'remote' needs `url` (for example ws://host:8788/rpc)")
        return self


class ProviderSpec(SpecModel):
    api_key: str | None = Field(default=None, description="the provider's API key (use `${VAR}`)")
    base_url: str | None = Field(
        default=None,
        description="endpoint override, for a proxy, a self-hosted server or an OpenAI-compatible endpoint",
    )
    api_version: str | None = Field(default=None, description="API version, for Azure OpenAI")  # Azure OpenAI
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers sent with every request")


class StdioServerSpec(SpecModel):
    command: str = Field(
        min_length=1,
        description='the program to start. `"${VECTORSTEP_PYTHON}"` is the interpreter running VectorStep.',
    )
    args: list[str] = Field(
        default_factory=list, description="its arguments. Relative script paths are resolved against `cwd`."
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "environment variables for the server. On Linux and macOS the server does **not** inherit "
            "VectorStep's whole environment, only `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and "
            "`USER`, plus what you list here. Pass secrets explicitly: `env: {API_TOKEN: "
            '"${API_TOKEN}"}`.'
        ),
    )
    cwd: str | None = Field(
        default=None,
        description=(
            "the server's working directory. A relative path is resolved against the folder of `vectorstep.yaml`."
        ),
        json_schema_extra={"doc_default": "the folder of `vectorstep.yaml`", "doc_type": "path"},
    )


class HttpServerSpec(SpecModel):
    url: str = Field(
        min_length=1, description="the server's MCP endpoint, for example `http://tickets.internal:9000/mcp`"
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "HTTP headers sent with every request to the server (an `Authorization` header, for example; use `${VAR}`)."
        ),
    )


def _server_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "http" if "url" in value and "command" not in value else "stdio"
    return "http" if isinstance(value, HttpServerSpec) else "stdio"


McpServerSpec = Annotated[
    Annotated[StdioServerSpec, Tag("stdio")] | Annotated[HttpServerSpec, Tag("http")],
    Discriminator(_server_kind),
]


class CalibrationSettingsSpec(SpecModel):
    n_min: int = Field(
        default=20, ge=1, description="human-marked outcomes a confidence bin needs before it counts as validated"
    )
    bin_width: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description=(
            "width of the confidence bins (history is counted in cells of 0.01, so changing it needs no rebuild)"
        ),
        json_schema_extra={"doc_rule": "a multiple of 0.01"},
    )

    @field_validator("bin_width")
    @classmethod
    def _whole_cells(cls, width: float) -> float:
        # History is counted in cells of 0.01, which a bin must be made of.
        if abs(width * 100 - round(width * 100)) > 1e-6:
            raise ValueError(f"bin_width must be a multiple of 0.01 (such as 0.05, 0.1 or 0.2), got {width:g}")
        return width

    # The Wilson lower bound by default: a small bin cannot talk its accuracy up.
    estimator: Literal["mean", "lower_bound"] = Field(
        default="lower_bound",
        description=(
            "How a bin's accuracy is estimated. `mean` is the plain mean of the marks. `lower_bound` "
            "is the Wilson lower bound of it, cautious on small bins: 18 right of 20 is a mean of "
            "0.90 but a lower bound of 0.78."
        ),
    )
    confidence: float = Field(default=0.9, gt=0.5, lt=1, description="the confidence of the lower bound")


class ReplaySettingsSpec(SpecModel):
    # Replaying an agent runs its tools again: only agents whose tools only read may be replayed.
    safe_agents: list[str] = Field(
        default_factory=list,
        description=(
            "The agents that may be replayed. A replay runs the agent again, tools included, so list "
            "only agents whose tools have no side effects (they read metrics and logs, they do not "
            "restart things). A replay of a step whose agent, or of a candidate agent, that is not "
            "listed is refused with that reason."
        ),
        json_schema_extra={"doc_type": "list of agent names", "doc_rule": "each must be an agent of `agents_dir`"},
    )
    max_concurrency: int = Field(
        default=4, ge=1, le=64, description="samples answered at once"
    )  # samples answered at once
    max_samples: int = Field(
        default=200, ge=1, le=10_000, description="the largest `-k` a replay may ask for"
    )  # the largest `-k`


class PriceMatchSpec(SpecModel):
    provider: str | None = Field(
        default=None,
        description="the provider, for example `openai`. Left out, it matches any provider.",
        json_schema_extra={"doc_type": "string (glob)"},
    )
    model: str | None = Field(
        default=None,
        description="the model name, for example `gpt-4.1*`. Left out, it matches any model.",
        json_schema_extra={"doc_type": "string (glob)"},
    )


class PriceSpec(SpecModel):
    match: PriceMatchSpec
    input_per_mtok: float = Field(ge=0, description="price per million input tokens")
    output_per_mtok: float = Field(ge=0, description="price per million output tokens")
    cached_input_per_mtok: float | None = Field(
        default=None,
        ge=0,
        description=(
            "price per million input tokens the provider read from its prompt cache (reported by "
            "OpenAI, Anthropic and others as cached input). Without it, cached tokens cost the "
            "`input_per_mtok` price."
        ),
    )


class PricingSpec(SpecModel):
    currency: str = Field(default="USD", description="the currency of the prices (a label only)")
    models: list[PriceSpec] = Field(
        default_factory=list,
        description="prices, tried in order. The first one that matches wins.",
        json_schema_extra={"doc_type": "list of prices"},
    )


class ServerSpec(SpecModel):
    host: str = Field(default="127.0.0.1", description="address the HTTP server listens on")
    port: int = Field(default=8080, ge=1, le=65535, description="its port")
    public_url: str | None = Field(
        default=None,
        description=(
            "The service's external URL. When it is set, approval messages carry links to view the "
            "approval (`<public_url>/ui/approvals/<id>`) and to approve or reject it (`POST "
            "<public_url>/api/approvals/<id>/approve`, `.../reject`). An `https://` URL also makes "
            "the UI's session cookie `Secure`."
        ),
    )  # used in links sent to people (approval messages)


class AlertmanagerIntakeSpec(SpecModel):
    # A `resolved` notification says a problem went away: by default it starts no run.
    resolved: Literal["ignore", "run"] = Field(
        default="ignore",
        description=(
            '`ignore`: a resolved Alertmanager notification starts no run (`202 {"status": '
            '"ignored_resolved"}`). `run`: it runs like a firing one; its `metadata.status` is '
            "`resolved` and can be matched."
        ),
    )


class IntakeSpec(SpecModel):
    alertmanager: AlertmanagerIntakeSpec = Field(default_factory=AlertmanagerIntakeSpec)


class OpenClawSpec(SpecModel):
    url: str | None = Field(
        default=None,
        description=(
            "the gateway's WebSocket, such as `ws://openclaw.internal:18789` (`http(s)://` is read as "
            "`ws(s)://`). **Required when a step, verifier or judge uses `executor: openclaw`.**"
        ),
    )  # ws://host:18789 (http(s):// is read as ws(s)://)
    identity_dir: str = Field(
        default="~/.openclaw/identity",
        description=(
            "the folder of `device.json` (`deviceId`, `privateKeyPem`: the Ed25519 key the device was "
            "paired with) and `device-auth.json` (`tokens.<role>.token`). Relative to "
            "`vectorstep.yaml`."
        ),
    )  # holds device.json and device-auth.json
    token: str | None = Field(
        default=None,
        description=(
            "the token sent in `connect` (`auth.token`) and signed into the payload; take it from the environment"
        ),
        json_schema_extra={"doc_default": "the `device-auth.json` token of `role`"},
    )  # the gateway's token; else the operator token of device-auth.json
    client_id: str = Field(default="gateway-client", description="the client id declared in `connect`")
    client_mode: str = Field(default="backend", description="the client mode declared in `connect`")
    role: str = Field(default="operator", description="the role requested")
    scopes: list[str] = Field(
        default_factory=lambda: ["operator.read", "operator.write"], description="the scopes requested"
    )
    connect_timeout_seconds: float = Field(default=10.0, gt=0, description="how long to wait for the WebSocket to open")


class ExecutorsSpec(SpecModel):
    openclaw: OpenClawSpec = Field(default_factory=OpenClawSpec)


class TelemetrySpec(SpecModel):
    # OTLP/HTTP traces (for example http://otel-collector:4318); the standard OTEL_EXPORTER_OTLP_*
    # variables turn them on as well.
    otlp_endpoint: str | None = Field(
        default=None, description="an OTLP/HTTP collector, such as `http://otel-collector:4318` (`/v1/traces` is added)"
    )
    service_name: str = Field(default="vectorstep", description="the `service.name` of the spans")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="sent with every export (an API key of a hosted backend; take it from the environment)",
    )


class ServiceSpec(SpecModel):
    database: DatabaseSpec = Field(
        default_factory=DatabaseSpec, description="where runs are stored ([database](#database))"
    )
    pipelines_dir: str = Field(
        default="./pipelines", description="folder of pipeline files", json_schema_extra={"doc_type": "path"}
    )
    steps_dir: str = Field(
        default="./steps", description="folder of library step files", json_schema_extra={"doc_type": "path"}
    )
    agents_dir: str = Field(
        default="./agents", description="folder of agent folders", json_schema_extra={"doc_type": "path"}
    )
    gateway: GatewaySpec = Field(
        default_factory=GatewaySpec,
        description="where agents run ([gateway](#gateway))",
        json_schema_extra={"doc_default": "`{mode: embedded}`"},
    )
    executors: ExecutorsSpec = Field(
        default_factory=ExecutorsSpec,
        description="settings of executors that reach outside VectorStep ([executors](#executors))",
        json_schema_extra={"doc_default": "see [executors](#executors)"},
    )
    providers: dict[str, ProviderSpec] = Field(
        default_factory=dict,
        description="model provider credentials and endpoints ([providers](#providers))",
        json_schema_extra={"doc_type": "mapping of name → provider"},
    )
    mcp_servers: dict[str, McpServerSpec] = Field(
        default_factory=dict,
        description="MCP tool servers agents can be granted ([mcp_servers](#mcp_servers))",
        json_schema_extra={"doc_type": "mapping of name → server"},
    )
    python_tools: dict[str, list[str]] = Field(
        default_factory=dict, description="Python functions as tools, in named groups ([python_tools](#python_tools))"
    )  # group → ["package.module:function", ...]
    limits: LimitsSpec = Field(
        default_factory=LimitsSpec,
        description="agent runtime limits",
        json_schema_extra={"doc_default": "see [limits](#limits)"},
    )
    tool_policy: ToolPolicySpec = Field(
        default_factory=ToolPolicySpec, description="operator rules over tool calls ([tool_policy](#tool_policy))"
    )
    auth: AuthSpec = Field(default_factory=AuthSpec, description="API and webhook tokens ([auth](#auth))")
    human_approval: HumanApprovalSpec = Field(
        default_factory=HumanApprovalSpec,
        description="how people are asked for approvals ([human_approval](#human_approval))",
    )
    notifications: NotificationChannelsSpec = Field(
        default_factory=NotificationChannelsSpec,
        description="credentials of notification channels ([notifications](#notifications-channels))",
    )
    dedup: ServiceDedupSpec = Field(
        default_factory=ServiceDedupSpec, description="duplicate-trigger suppression ([dedup](#dedup))"
    )
    concurrency: ConcurrencySpec = Field(
        default_factory=ConcurrencySpec,
        description=("runs at once per process, the queue's bound, the shutdown grace ([concurrency](#concurrency))"),
    )
    calibration: CalibrationSettingsSpec = Field(
        default_factory=CalibrationSettingsSpec,
        description="calibration settings ([calibration](#calibration-settings))",
        json_schema_extra={"doc_default": "`{n_min: 20, bin_width: 0.1, estimator: lower_bound, confidence: 0.9}`"},
    )
    replay: ReplaySettingsSpec = Field(
        default_factory=ReplaySettingsSpec,
        description="which agents may be replayed, and how ([replay](#replay-settings))",
    )
    pricing: PricingSpec = Field(
        default_factory=PricingSpec, description="token prices, for step and run cost ([pricing](#pricing))"
    )
    server: ServerSpec = Field(default_factory=ServerSpec, description="HTTP server settings ([server](#server))")
    intake: IntakeSpec = Field(
        default_factory=IntakeSpec,
        description="how webhook events are taken in ([intake](#intake))",
    )
    telemetry: TelemetrySpec = Field(
        default_factory=TelemetrySpec, description="OpenTelemetry traces of runs ([telemetry](#telemetry))"
    )
    # Variables whose `${VAR}` values are not secrets (a namespace, a region): shown as they are.
    public_vars: list[str] = Field(
        default_factory=list,
        description=(
            "variables whose `${VAR}` values are not secrets: every other value a `${VAR}` put in is "
            "masked in pages, API answers, run records and logs ([security.md](security.md#secrets))"
        ),
        json_schema_extra={"doc_type": "list of variable names"},
    )

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
