"""What a URL, an HTTP header and a command-line argument can carry, checked before anything is sent.

Agent answers and alert payloads reach URLs, headers and commands through templates. A value they
cannot carry (a NUL byte, a line break in a header, a lone surrogate, a non-ASCII header value, an
argument longer than the kernel takes) is refused here with the reason and where it sits — never
the value itself, which may be hostile or secret — so the check or executor fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import httpx

from vectorstep.domain.storable import LONE_SURROGATE

MAX_URL_CHARS = 16_384
MAX_HEADER_VALUE_CHARS = 8_192
# Linux refuses a single argument longer than MAX_ARG_STRLEN (32 pages) with E2BIG.
MAX_ARGUMENT_BYTES = 131_072
_CONTROL = re.compile("[\\x00-\\x1f\\x7f]")
_HEADER_CONTROL = re.compile("[\\x00-\\x08\\x0a-\\x1f\\x7f]")  # a tab is allowed inside a header value
_NUL = re.compile("\\x00")
_NON_ASCII = re.compile("[^\\x00-\\x7f]")
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


class Uncarriable(ValueError):
    """A value that cannot be sent as it is; the message says why and where, never what."""


def checked_url(url: str) -> str:
    if len(url) > MAX_URL_CHARS:
        raise Uncarriable(f"the URL is {len(url):,} characters; at most {MAX_URL_CHARS:,} are sent")
    _refuse(url, "the URL", LONE_SURROGATE, "a lone surrogate")
    _refuse(url, "the URL", _CONTROL, "a control character")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as error:
        raise Uncarriable(f"the URL is not valid: {error}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise Uncarriable("the URL must be http:// or https:// with a host")
    return url


def checked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            raise Uncarriable(f"header name {name[:40]!r} is not a valid HTTP header name")
        where = f"header {name}"
        if len(value) > MAX_HEADER_VALUE_CHARS:
            raise Uncarriable(f"{where} is {len(value):,} characters; at most {MAX_HEADER_VALUE_CHARS:,} are sent")
        _refuse(value, where, LONE_SURROGATE, "a lone surrogate")
        _refuse(value, where, _HEADER_CONTROL, "a line break or control character")
        _refuse(value, where, _NON_ASCII, "a non-ASCII character", "; headers carry ASCII only")
    return dict(headers)


def checked_arguments(argv: Sequence[str]) -> list[str]:
    for number, argument in enumerate(argv):
        where = f"argument {number}" if number else "the program"
        _refuse(argument, where, LONE_SURROGATE, "a lone surrogate")
        _refuse(argument, where, _NUL, "a NUL byte")
        size = len(argument.encode("utf-8"))
        if size > MAX_ARGUMENT_BYTES:
            raise Uncarriable(f"{where} is {size:,} bytes; one argument holds at most {MAX_ARGUMENT_BYTES:,}")
    return list(argv)


def _refuse(text: str, where: str, pattern: re.Pattern[str], what: str, why: str = "") -> None:
    found = pattern.search(text)
    if found is not None:
        raise Uncarriable(f"{where} holds {what} ({_shown(found.group())}) at position {found.start()}{why}")


def _shown(character: str) -> str:
    return f"U+{ord(character):04X}"
