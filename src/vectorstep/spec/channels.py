"""Channel settings of `vectorstep.yaml`: how people are asked (`human_approval`) and told (`notifications`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from vectorstep.spec.base import SpecModel


class SlackSpec(SpecModel):
    webhook_url: str | None = Field(
        default=None,
        repr=False,
        description=(
            "An incoming-webhook URL. Either this, or both `bot_token` and `channel`, is required. "
            "When it is set, it is used, and the webhook decides the Slack channel."
        ),
    )
    bot_token: str | None = Field(
        default=None, repr=False, description="a bot token, used with `channel`: messages go through `chat.postMessage`"
    )
    channel: str | None = Field(default=None, description="the Slack channel")
    api_url: str = Field(default="https://slack.com/api", description="the Web API endpoint used with `bot_token`")

    @model_validator(mode="after")
    def _one_way_in(self) -> SlackSpec:
        if not self.webhook_url and not (self.bot_token and self.channel):
            raise ValueError("slack needs `webhook_url` (an incoming webhook), or `bot_token` and `channel`")
        return self


class TelegramSpec(SpecModel):
    bot_token: str = Field(repr=False, description="the bot's token")
    chat_id: str = Field(description="the chat to post to")
    api_url: str = Field(default="https://api.telegram.org", description="the API endpoint")


class EmailSpec(SpecModel):
    smtp_host: str = Field(description="the SMTP server")
    smtp_port: int = Field(default=587, description="its port")
    username: str | None = Field(default=None, description="the SMTP login")
    password: str | None = Field(default=None, repr=False, description="the SMTP password")
    starttls: bool = Field(default=True, description="use STARTTLS")
    sender: str = Field(alias="from", description="the sender address")
    to: list[str] = Field(
        min_length=1,
        description="the recipients. A single string is one address.",
        json_schema_extra={"doc_type": "string or list of strings, at least 1"},
    )

    @field_validator("to", mode="before")
    @classmethod
    def _one_address(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class WebhookChannelSpec(SpecModel):
    url: str = Field(description="where a JSON message is posted")
    headers: dict[str, str] = Field(default_factory=dict, description="request headers")


class ApprovalRouteSpec(SpecModel):
    channel: Literal["log", "webhook", "slack", "telegram", "email"] = Field(
        default="log", description="where the request is sent"
    )
    webhook: WebhookChannelSpec | None = Field(
        default=None, description="for `channel: webhook`", json_schema_extra={"doc_type": "webhook block"}
    )
    slack: SlackSpec | None = Field(
        default=None, description="for `channel: slack`", json_schema_extra={"doc_type": "Slack block"}
    )
    telegram: TelegramSpec | None = Field(
        default=None, description="for `channel: telegram`", json_schema_extra={"doc_type": "Telegram block"}
    )
    email: EmailSpec | None = Field(
        default=None, description="for `channel: email`", json_schema_extra={"doc_type": "email block"}
    )


class HumanApprovalSpec(SpecModel):
    default: ApprovalRouteSpec = Field(
        default_factory=ApprovalRouteSpec,
        description="the route for teams without their own",
        json_schema_extra={"doc_type": "route"},
    )
    teams: dict[str, ApprovalRouteSpec] = Field(
        default_factory=dict, description="routes per team", json_schema_extra={"doc_type": "mapping of team → route"}
    )


class NotificationChannelsSpec(SpecModel):
    webhook: WebhookChannelSpec | None = Field(
        default=None,
        description="see the channel blocks under [human_approval](#human_approval)",
        json_schema_extra={"doc_type": "webhook block"},
    )
    slack: SlackSpec | None = Field(default=None, description="as above", json_schema_extra={"doc_type": "Slack block"})
    telegram: TelegramSpec | None = Field(
        default=None, description="as above", json_schema_extra={"doc_type": "Telegram block"}
    )
    email: EmailSpec | None = Field(default=None, description="as above", json_schema_extra={"doc_type": "email block"})
