"""Turning what arrives (Alertmanager, generic JSON, Grafana) into a NormalisedContext."""
