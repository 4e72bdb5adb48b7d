"""Grounding: is a step's answer backed by its own tool results? Transcript, evidence windows, the judge."""
