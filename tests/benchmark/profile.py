"""Optional sampling profiles of the exporter during a phase (``--profile``), with py-spy.

Owns attaching ``py-spy record`` to the exporter process for the duration of a phase (collapsed
stacks, ``raw`` format, written next to the run's logs) and summarising a profile as the functions
with the most inclusive and self samples, which is what docs/performance.md quotes. py-spy is not
a project dependency: without it (``pip install py-spy``) profiling is skipped with a note.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any


class Profiler:
    """``with Profiler(pid, path):`` samples ``pid`` while the block runs (no-op without py-spy)."""

    def __init__(self, pid: int, path: Path, enabled: bool = True, rate: int = 200) -> None:
        self.pid, self.path, self.rate = pid, path, rate
        self.enabled = enabled and shutil.which("py-spy") is not None
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Profiler:
        if self.enabled:
            cmd = [
                "py-spy",
                "record",
                "-p",
                str(self.pid),
                "-o",
                str(self.path),
                "-f",
                "raw",
                "-r",
                str(self.rate),
                "--nonblocking",
            ]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _frame(frame: str) -> str:
    # py-spy frames read "function (path/to/module.py:line)"; keep function and module file.
    name, _, where = frame.partition(" (")
    file = where.rsplit(":", 1)[0]
    for marker in ("/exporter/", "/site-packages/", "/lib/python"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{name} ({file})"


def summarize(path: Path, top: int = 15) -> dict[str, Any]:
    """Top functions by inclusive and by self share of the samples in a collapsed-stack file."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    if not path.exists():
        return {"samples": 0}
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";") if f and not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += count
        for f in set(frames):
            inclusive[f] += count
        own[frames[-1]] += count

    def share(c: Counter[str]) -> list[tuple[str, float]]:
        return [(f, round(n / total, 3)) for f, n in c.most_common(top)] if total else []

    return {"samples": total, "inclusive": share(inclusive), "self": share(own)}
