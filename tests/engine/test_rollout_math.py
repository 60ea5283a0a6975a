"""Int-or-percent rollout and remediation arithmetic: rounding, defaults, the progress rule, caps."""

from __future__ import annotations

import pytest

from exporter.engine.rollout_math import (
    display,
    fenceposts,
    max_surge,
    max_unavailable,
    max_unhealthy,
    parse_range,
    scaled,
)

SCALED = [
    ("int-as-is", 2, 10, True, 1, 2),
    ("unset-default", None, 10, True, 1, 1),
    ("percent-round-up", "25%", 10, True, 1, 3),
    ("percent-round-down", "25%", 10, False, 0, 2),
    ("percent-exact", "50%", 10, True, 0, 5),
    ("percent-of-zero", "50%", 0, True, 1, 0),
    ("hundred-percent", "100%", 7, False, 0, 7),
    ("malformed-default", "abc", 10, True, 1, 1),
]


@pytest.mark.parametrize(("value", "total", "up", "default", "expected"), [c[1:] for c in SCALED],
                         ids=[c[0] for c in SCALED])
def test_scaled(value: int | str | None, total: int, up: bool, default: int, expected: int) -> None:
    assert scaled(value, total, round_up=up, default=default) == expected


FENCEPOSTS = [
    ("defaults-surge-1-unavailable-0", None, None, 3, (1, 0)),
    ("both-zero-forces-one-unavailable", 0, 0, 3, (0, 1)),
    ("percent-both-round-to-zero", "0%", "10%", 3, (0, 1)),
    ("surge-rounds-up-unavailable-down", "10%", "40%", 3, (1, 1)),
]


@pytest.mark.parametrize(("surge", "unavailable", "desired", "expected"), [c[1:] for c in FENCEPOSTS],
                         ids=[c[0] for c in FENCEPOSTS])
def test_fenceposts(surge: int | str | None, unavailable: int | str | None, desired: int,
                    expected: tuple[int, int]) -> None:
    assert fenceposts(surge, unavailable, desired) == expected


MAX_UNAVAILABLE = [
    ("on-delete-is-zero", "OnDelete", None, 5, 3, 0),
    ("zero-replicas-is-zero", "RollingUpdate", None, 5, 0, 0),
    ("capped-at-replicas", "RollingUpdate", None, 5, 3, 3),
    ("percent", "RollingUpdate", None, "34%", 3, 1),
    ("empty-strategy-is-rolling", "", None, 2, 3, 2),
    ("progress-rule", "RollingUpdate", 0, 0, 3, 1),
]


@pytest.mark.parametrize(("strategy", "surge", "unavailable", "replicas", "expected"),
                         [c[1:] for c in MAX_UNAVAILABLE], ids=[c[0] for c in MAX_UNAVAILABLE])
def test_max_unavailable(strategy: str, surge: int | str | None, unavailable: int | str | None, replicas: int,
                         expected: int) -> None:
    assert max_unavailable(strategy, surge, unavailable, replicas) == expected


def test_max_surge() -> None:
    assert max_surge("RollingUpdate", "25%", None, 5) == 2
    assert max_surge("RollingUpdate", None, None, 5) == 1
    assert max_surge("OnDelete", 3, None, 5) == 0


@pytest.mark.parametrize(("value", "expected_machines", "expected"), [
    (None, 5, 5), (2, 5, 2), ("40%", 5, 2), ("40%", 4, 1), ("bad", 5, 5),
], ids=["default-100-percent", "int", "percent", "percent-rounds-down", "malformed-means-100-percent"])
def test_max_unhealthy(value: int | str | None, expected_machines: int, expected: int) -> None:
    assert max_unhealthy(value, expected_machines) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("[1-3]", (1, 3)), (" [ 0 - 2 ] ", (0, 2)), ("", None), ("1-3", None), ("[3-1]", None),
], ids=["plain", "spaces", "empty", "no-brackets", "inverted"])
def test_parse_range(text: str, expected: tuple[int, int] | None) -> None:
    assert parse_range(text) == expected


def test_display() -> None:
    assert (display("25%", 0), display(2, 0), display(None, 0)) == ("25%", "2", "0")
