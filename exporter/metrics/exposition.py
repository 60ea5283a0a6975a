"""Prometheus text format 0.0.4 primitives: escaping, sample lines, family headers.

Owns how one sample and one family header are written as bytes. Owns no metric names (see
``catalog``) and no caching (see ``renderer``). Kept free of prometheus_client so that rendering
an object costs a few string joins, not a registry walk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Sample = tuple[tuple[str, ...], float]
"""Label values (in the family's label order) and the sample value."""


def escape_label_value(value: str) -> str:
    # The three escapes the text format defines; anything else passes through as UTF-8.
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


# State sets and info families write 0 and 1 for most samples; skip the general path for them.
_COMMON_VALUES = {0.0: "0", 1.0: "1"}


def format_value(value: float) -> str:
    """Integral values without a fraction (counts, timestamps), others as Python's repr."""
    common = _COMMON_VALUES.get(value)
    if common is not None:
        return common
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def label_pairs(names: Sequence[str], values: Sequence[str]) -> str:
    """``a="x",b="y"`` for zipped names and values (no braces)."""
    if len(names) != len(values):
        raise ValueError(f"labels {names} got {len(values)} values")
    return ",".join([f'{n}="{escape_label_value(v)}"' for n, v in zip(names, values, strict=False)])


def sample_lines(name: str, prefix: str, label_names: Sequence[str], samples: Iterable[Sample]) -> str:
    """One line per sample; ``prefix`` holds the object's pre-escaped identity pairs (may be empty)."""
    out: list[str] = []
    for values, value in samples:
        pairs = label_pairs(label_names, values)
        labels = f"{prefix},{pairs}" if prefix and pairs else prefix or pairs
        body = f"{name}{{{labels}}}" if labels else name
        out.append(f"{body} {format_value(value)}\n")
    return "".join(out)


def header(name: str, help_text: str, type_: str) -> bytes:
    return f"# HELP {name} {escape_help(help_text)}\n# TYPE {name} {type_}\n".encode()
