"""Logging as Prometheus and its exporters print it: logfmt and JSON lines with ts/level/caller/msg.

A small logfmt reader (the go-logfmt grammar: bare values, or quoted ones with JSON-style escapes)
reads the lines back, so quoting and escaping are checked by round trip, not by string shape.
"""

from __future__ import annotations

import inspect
import io
import json
import logging
import re
import warnings
from collections.abc import Iterator

import pytest

from exporter import logging_setup
from exporter.logging_setup import JsonFormatter, LogfmtFormatter, logfmt_value

PAIR = re.compile(r'([^\s="]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?:\s+|$)')
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def read_logfmt(line: str) -> dict[str, str]:
    """One logfmt line as key -> value; fails on anything the grammar does not allow."""
    assert "\n" not in line
    out: dict[str, str] = {}
    pos = 0
    while pos < len(line):
        m = PAIR.match(line, pos)
        assert m is not None, f"not logfmt at {pos}: {line[pos:]!r}"
        key, raw = m.group(1), m.group(2)
        out[key] = json.loads(raw) if raw.startswith('"') else raw
        pos = m.end()
    return out


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO, logging.StreamHandler[io.StringIO]]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("tests.logging")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    yield logger, stream, handler
    logger.handlers[:] = []
    logger.propagate = True


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_logfmt_line_has_the_go_kit_keys_in_order(capture):
    logger, stream, handler = capture
    handler.setFormatter(LogfmtFormatter())
    line_no = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    logger.info("manifests loaded", extra={"objects": 12, "path": "examples/"})
    (line,) = lines(stream)
    assert re.fullmatch(rf'ts=\S+ level=info caller=test_logging\.py:{line_no} msg="manifests loaded" '
                        r"objects=12 path=examples/", line), line
    fields = read_logfmt(line)
    assert TS.fullmatch(fields["ts"])
    assert list(fields) == ["ts", "level", "caller", "msg", "objects", "path"]


@pytest.mark.parametrize(("value", "text"), [
    ("plain", "plain"),
    ("two words", '"two words"'),
    ("a=b", '"a=b"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("line\nbreak\ttab\rcr", '"line\\nbreak\\ttab\\rcr"'),
    ("bell\x07", '"bell\\u0007"'),
    ("del\x7f", '"del\\u007f"'),
    ("", '""'),
    ("null", '"null"'),
    ("back\\slash", "back\\slash"),
    ("héllo", "héllo"),
    ("lone\udc80", '"lone\ufffd"'),
    (12, "12"),
    (0.25, "0.25"),
    (True, "true"),
    (None, "null"),
    ({"Cluster": 3, "Machine": 9}, '"{\\"Cluster\\":3,\\"Machine\\":9}"'),
    (["a", "b"], '"[\\"a\\",\\"b\\"]"'),
], ids=["bare", "space", "equals", "quote", "whitespace-escapes", "control", "del", "empty", "null-string",
        "backslash", "unicode", "lone-surrogate", "int", "float", "bool", "none", "dict", "list"])
def test_logfmt_values_are_quoted_and_escaped_as_go_kit_does(value, text):
    assert logfmt_value(value) == text
    if isinstance(value, str) and "\udc80" not in value:
        assert read_logfmt(f"k={text}")["k"] == value  # reads back to the value


def test_an_exception_is_one_escaped_field_on_the_same_line(capture):
    logger, stream, handler = capture
    handler.setFormatter(LogfmtFormatter())
    try:
        raise ValueError('bad "value"\nsecond line')
    except ValueError:
        logger.error("cannot evaluate a group", exc_info=True, extra={"group": "capi/ns/c1"})
    (line,) = lines(stream)
    fields = read_logfmt(line)
    assert fields["level"] == "error" and fields["group"] == "capi/ns/c1"
    assert fields["exc"].startswith("Traceback (most recent call last):\n")
    assert fields["exc"].endswith('ValueError: bad "value"\nsecond line')


def test_json_has_the_same_keys_and_the_exception(capture):
    logger, stream, handler = capture
    handler.setFormatter(JsonFormatter())
    logger.warning("slow", extra={"seconds": 1.5, "level": "shadowed"})
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("failed")
    first, second = (json.loads(line) for line in lines(stream))
    assert list(first) == ["ts", "level", "caller", "msg", "seconds", "_level"]
    assert (first["level"], first["msg"]) == ("warn", "slow")
    assert (first["seconds"], first["_level"]) == (1.5, "shadowed")
    assert TS.fullmatch(first["ts"]) and first["caller"].startswith("test_logging.py:")
    assert second["level"] == "error" and second["exc"].endswith("RuntimeError: boom")


@pytest.mark.parametrize(("levelno", "name"), [
    (logging.DEBUG, "debug"), (logging.INFO, "info"), (logging.WARNING, "warn"), (logging.ERROR, "error"),
    (logging.CRITICAL, "error"),
])
def test_python_levels_read_as_go_kit_levels(levelno, name):
    assert logging_setup.level_name(levelno) == name


def test_setup_filters_by_the_canonical_level(capsys):
    logging_setup.setup("warn", "logfmt")
    log = logging.getLogger("tests.setup")
    log.info("hidden")
    log.warning("shown", extra={"n": 1})
    (line,) = capsys.readouterr().err.splitlines()
    assert read_logfmt(line)["msg"] == "shown"
    logging_setup.setup("debug", "json")
    log.debug("debugging")
    assert json.loads(capsys.readouterr().err)["level"] == "debug"
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # whatever filters earlier tests left
        logging.captureWarnings(False)  # the setups above captured them already
        logging_setup.setup("debug", "json")
        warnings.warn("old API", DeprecationWarning, stacklevel=1)
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["level"] == "warn" and "DeprecationWarning: old API" in record["msg"]


def test_keys_are_made_logfmt_safe():
    assert logging_setup.logfmt_key('a b=c"d') == "a_b_c_d"
    assert logging_setup.logfmt_key("") == "_"
