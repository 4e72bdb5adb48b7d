"""Running pipelines: the runner, evaluating one step, and the events observers watch."""
