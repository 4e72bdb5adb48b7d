"""Version history's pure parts: finding a version by a prefix, diffing two, summarising calibration."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from vectorstep.domain.calibration_report import LabelledStep
from vectorstep.domain.versions import NOT_RECORDED, Version, diff_versions, find_version, version_calibration
from vectorstep.errors import NotFoundError, PayloadError

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def version(hash_: str, text: str | None = "line\n", kind: str = "prompt") -> Version:
    return Version(kind, hash_, "incident/triage", text, T0, T0, 1)  # type: ignore[arg-type]


VERSIONS = [version("a1b2c3d4e5f60718"), version("a1b9000000000000"), version("ffee000011112222")]


@pytest.mark.parametrize(
    ("given", "found"),
    [("a1b2", "a1b2c3d4e5f60718"), ("FFEE", "ffee000011112222"), ("a1b2c3d4e5f60718", "a1b2c3d4e5f60718")],
    ids=["prefix", "any-case", "whole"],
)
def test_a_unique_prefix_finds_its_version(given: str, found: str) -> None:
    assert find_version(given, VERSIONS, "incident/triage").hash == found


def test_an_ambiguous_prefix_lists_the_candidates() -> None:
    with pytest.raises(PayloadError) as raised:
        find_version("a1b", VERSIONS, "incident/triage")
    assert str(raised.value) == (
        "'a1b' matches 2 versions of incident/triage: a1b2c3d4e5f6 (prompt template), a1b900000000 (prompt template); "
        "give more of the hash"
    )


def test_an_unknown_version_says_which_exist_and_the_closest() -> None:
    with pytest.raises(NotFoundError) as raised:
        find_version("a1b2c3d4e5f7", VERSIONS, "incident/triage")
    assert str(raised.value) == (
        "no version 'a1b2c3d4e5f7' of incident/triage (did you mean 'a1b2c3d4e5f6'?); "
        "its versions: a1b2c3d4e5f6, a1b900000000, ffee00001111"
    )
    with pytest.raises(PayloadError):
        find_version("  ", VERSIONS, "incident/triage")


def test_the_diff_is_unified_and_marks_each_line() -> None:
    old = version("aaaa00000000", "Alert on {{ service }}.\nFind the cause.\n")
    new = version("bbbb00000000", "Alert on {{ service }}.\nFind the cause and say why.\n")
    found = diff_versions(old, new)
    assert found.diff == (
        "--- incident/triage aaaa00000000\n"
        "+++ incident/triage bbbb00000000\n"
        "@@ -1,2 +1,2 @@\n"
        " Alert on {{ service }}.\n"
        "-Find the cause.\n"
        "+Find the cause and say why.\n"
    )
    assert [kind for kind, _ in found.lines()] == ["file", "file", "hunk", "same", "remove", "add"]
    assert diff_versions(old, old).diff == ""  # the same text: nothing differs


def test_a_version_without_its_text_has_no_diff_and_says_why() -> None:
    found = diff_versions(version("aaaa00000000", None), version("bbbb00000000"))
    assert found.diff is None
    assert found.reason == f"aaaa00000000: {NOT_RECORDED}; there is nothing to compare"
    assert found.as_json()["a"]["text_recorded"] is False


def test_two_versions_of_different_kinds_are_not_compared() -> None:
    with pytest.raises(PayloadError, match="compare two of a kind"):
        diff_versions(version("aaaa00000000"), version("bbbb00000000", kind="agent"))


def test_the_calibration_summary_is_the_calibration_reports() -> None:
    labelled = [LabelledStep(0.9, 1.0)] * 18 + [LabelledStep(0.9, 0.0)] * 2 + [LabelledStep(0.4, 0.5)]
    found = version_calibration(labelled, bin_width=0.1, n_min=20, estimator="lower_bound", confidence=0.9)
    assert found is not None
    assert (found.n, found.bins, found.validated_bins) == (21, 2, 1)
    assert found.accuracy == pytest.approx(18.5 / 21, abs=1e-6)
    assert found.predicted == pytest.approx((0.9 * 20 + 0.4) / 21, abs=1e-6)
    assert found.accuracy_low < found.accuracy < found.accuracy_high
    assert version_calibration([], bin_width=0.1, n_min=20, estimator="mean", confidence=0.9) is None
    assert replace(version("a"), calibration=found).as_json()["calibration"]["n"] == 21
