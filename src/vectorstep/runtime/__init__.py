"""The agent runtime (the "gateway"): agents, the LLM ↔ tool loop, models, tools and trace capture."""
