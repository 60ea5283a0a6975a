"""``LineReader``: a watch stream's lines, whatever chunks the bytes arrive in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.sources.lines import LineReader, LineTooLong


def read_all(chunks: list[bytes], limit: int = 1 << 20) -> list[bytes]:
    reader, out = LineReader(limit), []
    for chunk in chunks:
        reader.feed(chunk)
        while (line := reader.next_line()) is not None:
            out.append(line)
    rest = reader.rest()
    return [*out, rest] if rest else out


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
       st.booleans(), st.lists(st.integers(min_value=1, max_value=30), max_size=60))
def test_lines_are_the_same_whatever_the_chunks(lines: list[bytes], final_newline: bool,
                                                cuts: list[int]) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    chunks, at = [], 0
    for n in cuts:
        chunks.append(data[at:at + n])
        at += n
    chunks.append(data[at:])
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()  # a final newline ends the last line; it starts none
    assert read_all([c for c in chunks if c]) == expected


def test_a_line_spread_over_many_chunks_is_joined_once_it_ends() -> None:
    assert read_all([b'{"a"', b":", b"1}", b'\n{"b":2}\n', b'{"c"']) == [b'{"a":1}', b'{"b":2}', b'{"c"']


def test_a_line_longer_than_the_limit_is_refused() -> None:
    reader = LineReader(limit=10)
    reader.feed(b"ok\n0123456")
    assert reader.next_line() == b"ok"
    with pytest.raises(LineTooLong):
        reader.feed(b"789ab")  # 12 bytes and no end yet
    assert isinstance(LineTooLong("x"), ValueError)  # the watch treats it as an undecodable line
    # The rest of the stream still reads.
    reader.feed(b"\nnext\n")
    assert reader.next_line() == b""
    assert reader.next_line() == b"next"
