"""Integer-or-percent arithmetic of rollout and remediation limits.

Owns how ``maxSurge``, ``maxUnavailable`` and MachineHealthCheck ``maxUnhealthy`` values (an integer
or "N%") turn into a number of Machines: percentages of a total, rounded up for surge and down
for unavailability/unhealthiness, the defaults (surge 1, unavailable 0) and the rule that a
rolling update must be able to make progress (surge and unavailable both 0 → unavailable 1).
Owns no condition: the kind modules decide what the numbers mean.
"""

from __future__ import annotations

import re
from typing import Final

DEFAULT_MAX_SURGE: Final = 1
DEFAULT_MAX_UNAVAILABLE: Final = 0
ROLLING_UPDATE: Final = "RollingUpdate"

_PERCENT = re.compile(r"^\s*([0-9]+)\s*%\s*$")
_RANGE = re.compile(r"^\s*\[\s*([0-9]+)\s*-\s*([0-9]+)\s*\]\s*$")


def scaled(value: int | str | None, total: int, *, round_up: bool, default: int) -> int:
    """An int-or-percent as a count out of ``total``; unset or unreadable → ``default``."""
    if value is None:
        return default
    if isinstance(value, int):
        return value
    match = _PERCENT.match(value)
    if match is None:
        return default
    percent = int(match.group(1))
    if round_up:
        return -(-percent * total // 100)
    return percent * total // 100


def fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable) for ``desired`` replicas, never both 0 so a rollout can always proceed."""
    surge = scaled(max_surge, desired, round_up=True, default=DEFAULT_MAX_SURGE)
    unavailable = scaled(max_unavailable, desired, round_up=False, default=DEFAULT_MAX_UNAVAILABLE)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_unavailable(strategy_type: str, max_surge: int | str | None, max_unavailable_value: int | str | None,
                    replicas: int) -> int:
    """How many of ``replicas`` may be unavailable: 0 unless rolling, at most ``replicas``."""
    if (strategy_type or ROLLING_UPDATE) != ROLLING_UPDATE or replicas == 0:
        return 0
    _, unavailable = fenceposts(max_surge, max_unavailable_value, replicas)
    return min(unavailable, replicas)


def max_surge(strategy_type: str, max_surge_value: int | str | None, max_unavailable_value: int | str | None,
              replicas: int) -> int:
    """How many Machines above ``replicas`` a rollout may create: 0 unless rolling."""
    if (strategy_type or ROLLING_UPDATE) != ROLLING_UPDATE:
        return 0
    surge, _ = fenceposts(max_surge_value, max_unavailable_value, replicas)
    return surge


def max_unhealthy(value: int | str | None, expected: int) -> int:
    """MachineHealthCheck maxUnhealthy / unhealthyLessThanOrEqualTo (default 100%), rounded down."""
    if value is None:
        return expected
    return scaled(value, expected, round_up=False, default=expected)


def parse_range(text: str) -> tuple[int, int] | None:
    """An ``unhealthyInRange`` / ``unhealthyRange`` value "[min-max]"; None when absent or malformed."""
    match = _RANGE.match(text) if text else None
    if match is None:
        return None
    low, high = int(match.group(1)), int(match.group(2))
    return (low, high) if low <= high else None


def display(value: int | str | None, default: int) -> str:
    """The value as a user wrote it (``25%``, ``1``), the default when unset."""
    return str(default) if value is None else str(value)
