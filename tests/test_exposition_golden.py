"""Golden exposition of the example fleet: parses, passes promtool, matches tests/golden/examples.prom.

The comparison is on sorted lines (family order and series order inside a family are not part
of the contract). Regenerate deliberately with ``UPDATE_GOLDEN=1 python -m pytest
tests/test_exposition_golden.py``, then review the diff like code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.engine.evaluate import evaluate_all
from exporter.metrics.renderer import render_fleet
from exporter.sources.files import load

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden" / "examples.prom"
NOW = 1_795_392_000.0  # 2026-11-22T00:00:00Z: after every timestamp in examples/


def exposition() -> str:
    loaded = load(EXAMPLES)
    assert not loaded.errors
    return render_fleet(loaded.projections, evaluate_all(loaded.projections, NOW)).decode()


def normalised(text: str) -> str:
    return "\n".join(sorted(line for line in text.splitlines() if line)) + "\n"


@pytest.fixture(scope="module")
def text() -> str:
    return exposition()


def test_matches_golden(text):
    got = normalised(text)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(got, encoding="utf-8")
    want = GOLDEN.read_text(encoding="utf-8")
    assert got == want, "exposition changed: review, then regenerate with UPDATE_GOLDEN=1"


def test_parses_with_prometheus_client_without_duplicates(text):
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    families = list(text_string_to_metric_families(text))
    assert families
    for fam in families:
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in seen, f"duplicate series {key}"
            seen.add(key)


def test_every_family_header_appears_once(text):
    helps = [line.split()[2] for line in text.splitlines() if line.startswith("# HELP ")]
    assert len(helps) == len(set(helps))


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian package prometheus)")
def test_promtool_check_metrics_is_clean(text):
    proc = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True,
                          timeout=60)
    assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), (
        proc.stdout.decode() + proc.stderr.decode()
    )
