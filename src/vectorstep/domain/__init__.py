"""Plain values of a run: the step contract, trace events, execution results, statuses, contexts."""
