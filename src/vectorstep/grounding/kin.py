"""Words that name one thing in what tools print and in how people write about it.

"memory" is the `heap` of a JVM and the `working_set_bytes` of a container; "errors" are `5xx`;
"times" something happened is a `count`, an `(x14 over 46m)`. Words are kept as `anchors.stem`
leaves them.
"""

from __future__ import annotations

_KIN_GROUPS = (
    "memory mem heap rss working",
    "connection conn client pool",
    "request req rps qps traffic throughput",
    "error err fail failur exception 5xx",
    "latency duration p99 p95 p50 quantile",
    "deploy rollout sync releas revision",
    "version tag imag chart",
    "disk filesystem storag volum nodefs imagefs",
    "lag offset behind delay",
    "node host instanc",
    "certificat cert tls x509",
    "restart restartcount",
    "cpu core millicor",
    "replica pod",
    "maximum max maxpod maxreplica",
    "minimum min minpod minreplica",
    "time count occurrenc",
)
_KIN = {word: tuple(group.split()) for group in _KIN_GROUPS for word in group.split()}


def kin_of(word: str) -> tuple[str, ...]:
    """The word and the words that name the same thing (the word alone when it has none)."""
    return _KIN.get(word, (word,))
