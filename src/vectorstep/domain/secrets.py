"""Values that came from the environment (`${VAR}` in configuration): secrets, never shown or stored in clear.

Every value a `${VAR}` reference put into `vectorstep.yaml`, a pipeline, a step or an agent file is
remembered here when the file is read, unless the variable is listed in `public_vars`. Whatever is
written to the database, printed as JSON, logged or answered over HTTP passes through `mask`, so a
token that ended up in a URL, a header, a shell command or a prompt shows as `••••••`. A run's spec
snapshot keeps `${VAR}` in its place instead (`as_references`), so a resumed run reads the value
from the environment again.
"""

from __future__ import annotations

import re
import threading

MASK = "••••••"
# Shorter values are not masked: "1" or "true" would garble every page they appear on.
MIN_SECRET_CHARS = 6
# What VectorStep itself puts in the environment for configuration to use: not a secret.
ALWAYS_PUBLIC = frozenset({"VECTORSTEP_PYTHON"})


class Secrets:
    def __init__(self) -> None:
        self._names: dict[str, str] = {}  # value -> the variable it came from
        self._public: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._stale = False
        self._lock = threading.Lock()

    def remember(self, name: str, value: str) -> None:
        if name in ALWAYS_PUBLIC or len(value) < MIN_SECRET_CHARS:
            return
        with self._lock:
            if self._names.get(value) != name:
                self._names[value] = name
                self._stale = True

    def make_public(self, names: frozenset[str]) -> None:
        with self._lock:
            self._public = names
            self._stale = True

    def mask(self, text: str) -> str:
        pattern = self._compiled()
        if pattern is None or not text:
            return text
        return pattern.sub(MASK, text)

    def as_references(self, text: str) -> str:
        """`text` with each secret written as the `${VAR}` it came from (and a literal `${` as `$${`)."""
        pattern = self._compiled()
        if pattern is None or not text:
            return text
        escaped = text.replace("${", "$${")
        return pattern.sub(lambda found: f"${{{self._names[found.group()]}}}", escaped)

    def _compiled(self) -> re.Pattern[str] | None:
        if not self._stale:
            return self._pattern
        with self._lock:
            values = sorted((value for value, name in self._names.items() if name not in self._public), key=len)
            # Longest first: a secret that contains another is masked whole.
            alternatives = "|".join(re.escape(value) for value in reversed(values))
            self._pattern = re.compile(alternatives) if values else None
            self._stale = False
            return self._pattern


SECRETS = Secrets()  # this process's
