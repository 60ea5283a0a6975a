"""The exporter as a user runs it: ``fleet-status-exporter serve`` in its own process.

Owns starting it (against a kubeconfig or files), waiting for /readyz, scraping, reading its log,
stopping it; and parsing an exposition into comparable samples. Does not own assertions.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.realcluster.cluster import free_port

ROOT = Path(__file__).resolve().parents[2]
Sample = tuple[str, tuple[tuple[str, str], ...], str]
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Exporter:
    """``with Exporter(log, "--kubeconfig", path) as e:`` runs it until the block ends."""

    def __init__(self, log: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.args = [sys.executable, "-m", "exporter", "serve", "--web.listen-address",
                     f"127.0.0.1:{self.port}", "--log.level", "debug", *args]
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Exporter:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(self.args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        out.close()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()

    def wait_until(self, check: Callable[[], bool], what: str, timeout: float = 60) -> float:
        """Polls ``check`` until true; returns the seconds it took."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the exporter exited ({self.proc.returncode}):\n{self.log_text()[-3000:]}")
            try:
                if check():
                    return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{what} not within {timeout}s; exporter log:\n{self.log_text()[-3000:]}")

    def wait_ready(self, timeout: float = 60) -> float:
        return self.wait_until(lambda: self.get("/readyz")[0] == 200, "/readyz 200", timeout)

    def samples(self) -> set[Sample]:
        status, text = self.get("/metrics")
        assert status == 200, text
        return parse(text)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def parse(text: str) -> set[Sample]:
    found = set()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"not an exposition line: {line!r}"
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        found.add((m.group(1), labels, m.group(3)))
    return found


def value(samples: Iterable[Sample], name: str, **labels: str) -> float | None:
    for n, ls, v in samples:
        if n == name and all((k, want) in ls for k, want in labels.items()):
            return float(v)
    return None
