"""A tiny local "dashboards" service: a small slice of Grafana's HTTP API over ../data/dashboards.json.

    python dashboards_service.py [--port N] [--verbose]

It gives the sample pipelines' webhook checks something real to call with no network: binds
127.0.0.1 (port 0, the default, takes any free port), prints exactly one line to stdout,
`listening on http://127.0.0.1:<port>`, and serves until it is stopped. `vectorstep demo` starts it
this way, reads the port from that line and sets VECTORSTEP_DEMO_SERVICE to the URL.

    GET /api/dashboards/uid/<uid>   200 {"dashboard": {uid, title, tags, panels, ...}, "meta": {url, ...}}
                                    404 {"message": "Dashboard not found"}
    GET /api/health                 200 {"database": "ok", ...}
    anything else                   404 {"message": "Not found"} (any other path, or a method other than GET/HEAD)

Standard library only. Request logs go to stderr, and only with --verbose.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "dashboards.json"
VERSION = "11.0.0-vectorstep-sample"
DASHBOARD_PREFIX = "/api/dashboards/uid/"


@cache
def dashboards() -> dict[str, dict[str, Any]]:
    document = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return {entry["uid"]: entry for entry in document["dashboards"]}


def dashboard_response(entry: dict[str, Any]) -> dict[str, Any]:
    """The shape of Grafana's GET /api/dashboards/uid/<uid>: the dashboard model plus its metadata."""
    return {
        "dashboard": {
            "uid": entry["uid"],
            "title": entry["title"],
            "tags": entry["tags"],
            "version": entry["version"],
            "timezone": "utc",
            "panels": entry["panels"],
        },
        "meta": {
            "type": "db",
            "slug": entry["slug"],
            "url": f"/d/{entry['uid']}/{entry['slug']}",
            "folderTitle": entry["folder"],
            "updated": entry["updated"],
            "canEdit": False,
            "provisioned": True,
        },
    }


def route(path: str) -> tuple[HTTPStatus, dict[str, Any]]:
    """Status and JSON body for a GET of `path` (no query string)."""
    if path == "/api/health":
        return HTTPStatus.OK, {"database": "ok", "version": VERSION}
    if path.startswith(DASHBOARD_PREFIX):
        uid = unquote(path.removeprefix(DASHBOARD_PREFIX))
        entry = dashboards().get(uid)
        if entry is None:
            return HTTPStatus.NOT_FOUND, {"message": "Dashboard not found"}
        return HTTPStatus.OK, dashboard_response(entry)
    return HTTPStatus.NOT_FOUND, {"message": "Not found"}


class Handler(BaseHTTPRequestHandler):
    server_version = "sample-dashboards/1.0"
    verbose = False

    def do_GET(self) -> None:
        self._answer(*route(urlsplit(self.path).path), body=True)

    def do_HEAD(self) -> None:
        self._answer(*route(urlsplit(self.path).path), body=False)

    def do_POST(self) -> None:
        self._not_found()

    def do_PUT(self) -> None:
        self._not_found()

    def do_PATCH(self) -> None:
        self._not_found()

    def do_DELETE(self) -> None:
        self._not_found()

    def _not_found(self) -> None:
        """This sample is read-only: like Grafana's router, an unregistered method and path is a 404."""
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # drain the body so the client sees the answer, not a reset
        self._answer(HTTPStatus.NOT_FOUND, {"message": "Not found"})

    def _answer(self, status: HTTPStatus, payload: dict[str, Any], *, body: bool = True) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        if self.verbose:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Serve a small slice of Grafana's API over the sample dashboards.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: any free port)")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    options = parser.parse_args(argv)
    dashboards()  # a broken data file fails here, before the "listening" line
    Handler.verbose = options.verbose
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"listening on http://127.0.0.1:{server.server_port}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
