"""Telling people: notification channels (log, webhook, Slack, Telegram, email) and who gets what."""
