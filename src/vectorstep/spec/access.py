"""Who may do what in `vectorstep.yaml`: the service's tokens (`auth`) and the operator's `tool_policy`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from vectorstep.spec.base import RegexPattern, SpecModel


class ToolMatchSpec(SpecModel):
    server: str | None = Field(default=None, description="the server name, exact")
    tool: str | None = Field(default=None, description="the tool name, glob (`delete*`)")  # a glob
    agent: str | None = Field(default=None, description="the agent name, glob (`sre-*`)")  # a glob
    input_regex: RegexPattern | None = Field(
        default=None, description="a regular expression over the call's JSON arguments"
    )  # searched in the call's arguments as JSON


class ToolRuleSpec(SpecModel):
    allow: ToolMatchSpec | None = Field(
        default=None,
        description="the calls this rule allows; a rule holds exactly one of `allow` and `deny`",
        json_schema_extra={"doc_type": "match block"},
    )
    deny: ToolMatchSpec | None = Field(
        default=None,
        description="the calls this rule denies, with its `reason`",
        json_schema_extra={"doc_type": "match block"},
    )
    reason: str | None = Field(
        default=None, description="**required for `deny`**: shown to the agent and in the trace as `tool_denied`"
    )

    @model_validator(mode="after")
    def _one_action(self) -> ToolRuleSpec:
        if (self.allow is None) == (self.deny is None):
            raise ValueError("a tool rule holds exactly one of `allow` or `deny`")
        if self.deny is not None and not self.reason:
            raise ValueError("a `deny` rule needs a `reason` (it is shown to the agent and in the trace)")
        return self


class ToolPolicySpec(SpecModel):
    default: Literal["allow", "deny"] = Field(
        default="allow",
        description=(
            "What happens when no rule matches. With `deny`, only tools allowed by a rule are shown to the model."
        ),
    )
    rules: list[ToolRuleSpec] = Field(
        default_factory=list, description="ordered rules", json_schema_extra={"doc_type": "list of rules"}
    )


# What a token may do (docs/security.md): `intake` only posts events; `viewer` reads; `operator` also
# decides approvals, marks runs and starts runs; `admin` also reloads and sees configuration.
Role = Literal["intake", "viewer", "operator", "admin"]


class TokenSpec(SpecModel):
    name: str = Field(
        min_length=1, description="who or what the token is (recorded as who decided or marked; never the token itself)"
    )
    token: str = Field(
        min_length=16,
        repr=False,
        description="the secret. Use `${VAR}`.",
        json_schema_extra={"doc_rule": "no surrounding whitespace"},
    )
    # The least a token can be: one written before roles existed keeps posting alerts, and nothing more.
    role: Role = Field(
        default="intake",
        description=(
            "what it may do: `intake` only posts events to `/webhook`; `viewer` reads; `operator` "
            "also decides approvals, marks runs and starts runs; `admin` also reloads pipelines and "
            "sees configuration. A token without a role gets the least (`serve` logs a warning)"
        ),
    )
    # The teams whose runs, approvals and pipelines it sees; none: every team's.
    teams: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description=(
            "the teams whose runs, approvals and pipelines it sees and acts on; its events and manual "
            "runs belong to its first team. Admins see every team"
        ),
        json_schema_extra={"doc_default": "none (every team)"},
    )
    team: str | None = Field(
        default=None, min_length=1, description="one team: the same as `teams: [team]` (give one of the two)"
    )

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
    tokens: list[TokenSpec] = Field(default_factory=list, description="bearer tokens accepted by the service")
