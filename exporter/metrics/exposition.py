"""Prometheus text format 0.0.4 primitives: escaping, sample lines, family headers.

Owns how one sample and one family header are written as bytes, and the small memo tables that
make writing the same label tail twice cost a dictionary lookup. Owns no metric names (see
``catalog``) and no per-object caching (see ``renderer``). Kept free of prometheus_client so that
rendering an object costs a few string joins, not a registry walk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Sample = tuple[tuple[str, ...], float]
"""Label values (in the family's label order) and the sample value."""

# Most label tails repeat across objects (`type="Ready",status="True"` and its value): they are
# memoised per label-name tuple. Families whose values are unique per object (names, addresses)
# would grow their table without bound, so each table is dropped when it fills up; small, as such
# a table's tails are never used again, where the repeating ones number a few hundred at most
# (condition types by status or by reason).
_TAIL_TABLE_LIMIT: Final = 256
_MAX_TABLES: Final = 512
# 'a="x",b="y"', the same closed with value 0, with value 1; of variable length so that the
# compiled build keeps one object per table entry (see engine.model.ObjectKey)
_Tails = tuple[str, ...]
_tables: dict[tuple[str, ...], dict[tuple[str, ...], _Tails]] = {}


def escape_label_value(value: str) -> str:
    # The three escapes the text format defines; anything else passes through as UTF-8.
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


# Counts and state sets are small integers; their text is a lookup (-0.0 hashes as 0.0: "0").
_COMMON_VALUES: Final = {float(i): str(i) for i in range(1025)}


def format_value(value: float) -> str:
    """Integral values without a fraction (counts, timestamps), others as Python's repr."""
    common = _COMMON_VALUES.get(value)
    if common is not None:
        return common
    try:
        integral = int(value)
    except (ValueError, OverflowError):  # NaN, infinities
        if math.isnan(value):
            return "NaN"
        return "+Inf" if value > 0 else "-Inf"
    if integral == value and -1e15 < value < 1e15:
        return str(integral)
    return repr(float(value))


def label_pairs(names: Sequence[str], values: Sequence[str]) -> str:
    """``a="x",b="y"`` for zipped names and values (no braces)."""
    if len(names) != len(values):
        raise ValueError(f"labels {names} got {len(values)} values")
    return ",".join([f'{n}="{escape_label_value(v)}"' for n, v in zip(names, values, strict=False)])


def _tails(names: tuple[str, ...], table: dict[tuple[str, ...], _Tails], values: tuple[str, ...]) -> _Tails:
    pairs = label_pairs(names, values)
    tails = (pairs, f"{pairs}}} 0\n", f"{pairs}}} 1\n")
    if len(table) >= _TAIL_TABLE_LIMIT:
        table.clear()
    table[values] = tails
    return tails


def _table(names: tuple[str, ...]) -> dict[tuple[str, ...], _Tails]:
    table = _tables.get(names)
    if table is None:
        if len(_tables) >= _MAX_TABLES:
            _tables.clear()
        table = _tables[names] = {}
    return table


def sample_lines(name: str, prefix: str, label_names: Sequence[str], samples: Iterable[Sample]) -> str:
    """One line per sample; ``prefix`` holds the object's pre-escaped identity pairs (may be empty)."""
    # Every line starts with the same head (name, brace, identity), so the lines are the tails
    # joined by the head: one join instead of a format per line (the leading "" puts a head first).
    tails: list[str] = [""]
    if not label_names:
        for values, value in samples:
            if values:
                label_pairs(label_names, values)  # raises: values without label names
            tails.append(f"{format_value(value)}\n")
        head = f"{name}{{{prefix}}} " if prefix else f"{name} "
    else:
        names = label_names if type(label_names) is tuple else tuple(label_names)
        table = _table(names)
        for values, value in samples:
            try:
                entry = table.get(values)
            except TypeError:  # unhashable values (a list): format without the table
                entry = _tails(names, {}, tuple(values))
            if entry is None:
                entry = _tails(names, table, values)
            if value == 1.0:
                tails.append(entry[2])
            elif value == 0.0:
                tails.append(entry[1])
            else:
                tails.append(f"{entry[0]}}} {format_value(value)}\n")
        head = f"{name}{{{prefix}," if prefix else f"{name}{{"
    return head.join(tails) if len(tails) > 1 else ""


def free_label_lines(name: str, prefix: str, samples: Iterable[Sample]) -> str:
    """One line per sample whose values alternate label names and values (``name1, value1, ...``).

    For families whose label names differ per object (``*_labels``): no memo table, as their
    values are mostly unique per object.
    """
    lines: list[str] = []
    for values, value in samples:
        pairs = label_pairs(values[0::2], values[1::2])
        inner = f"{prefix},{pairs}" if prefix and pairs else prefix or pairs
        lines.append(f"{name}{{{inner}}} {format_value(value)}\n")
    return "".join(lines)


def header(name: str, help_text: str, type_: str) -> bytes:
    return f"# HELP {name} {escape_help(help_text)}\n# TYPE {name} {type_}\n".encode()
