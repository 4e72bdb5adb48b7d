"""The HTTP service: webhook intake, the REST API, the web UI, metrics, and background runs."""
