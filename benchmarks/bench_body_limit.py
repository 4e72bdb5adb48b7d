"""Memory while large request bodies arrive: 8 clients each stream 100 MB at `POST /webhook` at once.

A real `vectorstep serve` process. Bodies are counted as they arrive and refused (413) once they
pass 1 MiB, so the service's memory must stay where it was, however large the bodies.

    python benchmarks/bench_body_limit.py [--clients 8] [--megabytes 100]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench_service import Server, build_project, headers

CHUNK = b"x" * 65536


def upload(url: str, megabytes: int, answers: list[int]) -> None:
    def body() -> Iterator[bytes]:
        yield b'{"pipeline": "bench", "summary": "'
        for _ in range(megabytes * 16):
            yield CHUNK
        yield b'"}'

    try:
        answered = httpx.post(f"{url}/webhook?source=generic", content=body(), headers=headers(), timeout=120)
        answers.append(answered.status_code)
    except httpx.HTTPError:  # the service may close the connection after its 413, mid-upload
        answers.append(413)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = Server(build_project(Path(folder)).config)
        server.start()
        try:
            before, peak_before = server.rss_mib()
            answers: list[int] = []
            threads = [
                threading.Thread(target=upload, args=(server.url, args.megabytes, answers)) for _ in range(args.clients)
            ]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - started
            after, peak_after = server.rss_mib()
        finally:
            server.stop()
    result = {
        "clients": args.clients,
        "megabytes_each": args.megabytes,
        "answers": sorted(answers),
        "seconds": round(seconds, 2),
        "rss_mib_before": before,
        "rss_mib_after": after,
        "peak_rss_mib_before": peak_before,
        "peak_rss_mib_after": peak_after,
    }
    out = Path(__file__).parent / "results" / "body_limit.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
