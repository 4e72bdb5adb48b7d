"""Which process drives a run, and when.

A process that drives runs is a `RunHost` (`vectorstep serve` and `vectorstep worker` each have
one). Its dispatcher decides who drives what: on SQLite, the one process drives every run itself
(`inline`); on PostgreSQL, runs are jobs on a procrastinate queue that any worker process takes
(`queue`), so a run whose worker dies is taken up by another.
"""
