"""The web UI: server-rendered pages (Jinja2, autoescaped) with htmx for live parts."""
