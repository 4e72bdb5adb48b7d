"""Executors: one module per kind of step work, behind one interface, in a registry."""
