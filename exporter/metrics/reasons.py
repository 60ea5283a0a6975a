"""Bounded reason labels: a condition's reason when the vocabulary allows it, else ``Other``.

Owns ``bounded_reason``; the allow-lists are data of the engine's vocabulary
(``exporter.engine.vocabulary``: ``ALLOWED`` per condition type, ``COMMON`` for every type, and
``COMPUTED``, what the rules set). A provider writing free text into ``reason`` cannot grow the
series count. Owns no metric names.
"""

from __future__ import annotations

from typing import Final

from exporter.engine.vocabulary import ALLOWED, COMMON, COMPUTED

OTHER: Final = "Other"


def bounded_reason(type_: str, reason: str, *, computed: bool = False) -> str:
    """The reason itself when allowed for this condition type (or set by an engine rule), else ``Other``."""
    if computed and reason in COMPUTED:
        return reason
    allowed = ALLOWED.get(type_)
    if allowed is not None and reason in allowed:
        return reason
    if allowed is None and reason in COMMON:
        return reason
    return OTHER
