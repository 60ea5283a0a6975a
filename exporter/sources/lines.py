"""Complete lines out of a byte stream read a chunk at a time: the events of a watch response.

Owns ``LineReader``. A watch stream is one JSON event per line. Reading it a line at a time
(``readline``) costs an awaited call, a timeout scope and a scan of the client's buffer per event;
read a chunk at a time, a backlog of hundreds of buffered events is split in one pass and costs
one timeout scope. Owns no knowledge of what the lines hold.
"""

from __future__ import annotations

# The API server refuses objects over ~1.5 MiB (etcd's request limit); a line far past that is
# no watch event, and buffering it without end would be a way to exhaust memory.
MAX_LINE_BYTES = 16 << 20


class LineTooLong(ValueError):
    """A line went past ``LineReader.limit`` bytes without ending."""


class LineReader:
    """``feed`` chunks, take lines with ``next_line`` until None, then feed the next chunk."""

    __slots__ = ("_lines", "_next", "_pending", "_pending_bytes", "limit")

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._lines: list[bytes] = []
        self._next = 0
        # The start of a line whose end has not arrived yet, in the pieces it came in: joined
        # once it ends, not at every chunk (a large object spans many).
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def next_line(self) -> bytes | None:
        """The next complete line (without its newline), or None when all fed lines are taken."""
        if self._next < len(self._lines):
            line = self._lines[self._next]
            self._next += 1
            return line
        return None

    def feed(self, chunk: bytes) -> None:
        """Add the next bytes of the stream; call once ``next_line`` has returned None."""
        parts = chunk.split(b"\n")
        tail = parts.pop()
        if parts:
            if self._pending:
                parts[0] = b"".join((*self._pending, parts[0]))
                self._pending.clear()
                self._pending_bytes = 0
            self._lines, self._next = parts, 0
        if tail:
            self._pending.append(tail)
            self._pending_bytes += len(tail)
            if self._pending_bytes > self.limit:
                self._pending.clear()
                self._pending_bytes = 0
                raise LineTooLong(f"a line of the stream is longer than {self.limit} bytes")

    def rest(self) -> bytes:
        """At the end of the stream: the last line if it had no newline, else b""."""
        rest = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        return rest
