"""How often queue workers beat, and when the others take them for gone (PostgreSQL)."""

HEARTBEAT_SECONDS = 2.0
STALLED_SECONDS = 10.0  # a worker whose heartbeat is older than this is gone: its runs are taken up
MAINTENANCE_SECONDS = 2.0  # how often each worker looks for jobs and runs that nothing moves
QUIET_SECONDS = 10.0  # an unleased running run younger than this may still be about to get its job
