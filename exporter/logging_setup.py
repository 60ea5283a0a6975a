"""Structured logging: ``--log.format text|json`` and ``--log.level``.

Owns the two formatters. Code logs a short constant message and puts the facts in ``extra``
(``log.info("manifests loaded", extra={"objects": 12})``); both formats print those fields, the
JSON one as keys of one object per line. Owns no decision about what to log.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final

LEVELS: Final = ("debug", "info", "warning", "error")
FORMATS: Final = ("text", "json")
# Attributes every LogRecord has; anything else was passed through ``extra``.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, sort_keys=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        pairs = " ".join(f"{k}={_text(v)}" for k, v in _fields(record).items())
        line = f"{_time(record)} {record.levelname.lower():<7} {record.name}: {record.getMessage()}"
        if pairs:
            line = f"{line} {pairs}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return json.dumps(text) if (" " in text or not text) else text


def setup(level: str, fmt: str) -> None:
    """Configure the root logger once, at start-up (writes to stderr)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log would print one line per scrape; keep it for debugging only.
    logging.getLogger("aiohttp.access").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
