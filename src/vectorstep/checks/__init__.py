"""Deterministic checks (D): shell commands, webhooks and people, evaluated without an LLM, fail-closed."""
