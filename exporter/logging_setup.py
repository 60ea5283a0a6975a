"""Structured logging: ``--log.format logfmt|json`` and ``--log.level debug|info|warn|error``.

Owns the two formatters, spelled as Prometheus and its exporters print them (go-kit/slog):
logfmt ``ts=2026-11-25T10:00:00.123Z level=info caller=app.py:123 msg="manifests loaded"
objects=12``, or one JSON object per line with the same keys. Code logs a short constant message
and puts the facts in ``extra`` (``log.info("manifests loaded", extra={"objects": 12})``); both
formats print those fields after ``msg``. One record is one line: an exception's traceback is
the escaped ``exc`` field of its record. Also owns the accepted spellings of the two flags and
their aliases (``warning`` for ``warn``; ``text``, the format before logfmt, for ``logfmt``).
Owns no decision about what to log.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final

LEVELS: Final = ("debug", "info", "warn", "error")
LEVEL_ALIASES: Final = {"warning": "warn"}
FORMATS: Final = ("logfmt", "json")
# ``text`` was the human-oriented format before logfmt; accepted, with a deprecation warning.
FORMAT_ALIASES: Final = {"text": "logfmt"}
_PYTHON_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                         "error": logging.ERROR}
# Attributes every LogRecord has; anything else was passed through ``extra``.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
# The keys every record starts with; an ``extra`` field of the same name is printed with a ``_``.
_FIXED: Final = ("ts", "level", "caller", "msg")


def level_name(levelno: int) -> str:
    """The go-kit level of a Python level: critical reads as error, as there is no higher one."""
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warn"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "ts": datetime.fromtimestamp(record.created, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "level": level_name(record.levelno),
        "caller": f"{record.filename}:{record.lineno}",
        "msg": record.getMessage(),
    }
    for key, value in vars(record).items():
        if key not in _STANDARD and not key.startswith("_"):
            while key in fields:
                key = f"_{key}"
            fields[key] = value
    return fields


def _exception(formatter: logging.Formatter, record: logging.LogRecord) -> str | None:
    if record.exc_info:
        return formatter.formatException(record.exc_info)
    if record.exc_text:
        return record.exc_text
    return None


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = _fields(record)
        exc = _exception(self, record)
        if exc is not None:
            doc["exc"] = exc
        if record.stack_info:
            doc["stack"] = record.stack_info
        # ensure_ascii: a lone surrogate (from a JSON manifest) cannot break the stream's encoding.
        return json.dumps(doc, default=str)


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record)
        exc = _exception(self, record)
        if exc is not None:
            fields["exc"] = exc
        if record.stack_info:
            fields["stack"] = record.stack_info
        return " ".join(f"{logfmt_key(k)}={logfmt_value(v)}" for k, v in fields.items())


def logfmt_key(key: str) -> str:
    """A key as logfmt allows it: no space, ``=``, ``"`` or control character (each becomes ``_``)."""
    out = "".join("_" if c <= " " or c in '="' or c == "\x7f" else c for c in key)
    return out or "_"


def logfmt_value(value: Any) -> str:
    """A value as go-kit's logfmt writes it: bare when it can be, else quoted and escaped.

    Booleans and None read ``true``/``false``/``null``; numbers as Python prints them; strings
    are quoted when empty or when they hold a space, ``=``, ``"``, a control character or a
    character that cannot be printed; anything else is written as compact JSON first.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | tuple | dict):
        text = json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False)
    else:
        text = str(value)
    if text and text != "null" and all(_bare(c) for c in text):
        return text
    return _quoted(text)


def _bare(c: str) -> bool:
    return c > " " and c not in '="' and c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF


_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quoted(text: str) -> str:
    out = ['"']
    for c in text:
        escaped = _ESCAPES.get(c)
        if escaped is not None:
            out.append(escaped)
        elif 0xD800 <= ord(c) <= 0xDFFF:
            out.append("\ufffd")  # a lone surrogate is no character: Go writes the replacement
        elif c < " " or "\x7f" <= c <= "\x9f":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def canonical_level(value: str) -> str | None:
    """The level a ``--log.level`` value names (aliases resolved), None when it names none."""
    value = LEVEL_ALIASES.get(value, value)
    return value if value in LEVELS else None


def canonical_format(value: str) -> str | None:
    value = FORMAT_ALIASES.get(value, value)
    return value if value in FORMATS else None


def setup(level: str, fmt: str) -> None:
    """Configure the root logger once, at start-up (writes to stderr)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_PYTHON_LEVELS[level])
    # Python's warnings (a library's DeprecationWarning) become records too: one line each.
    logging.captureWarnings(True)
    # aiohttp's access log would print one line per scrape; keep it for debugging only.
    logging.getLogger("aiohttp.access").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
