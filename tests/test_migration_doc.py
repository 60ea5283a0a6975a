"""docs/migrating-from-kube-state-metrics.md matches the catalog, and what it tells users to run works.

Every kube-state-metrics-compatible family of the catalog is covered by the family table; every
family the page names exists, or is one it lists as not served; every PromQL expression (before
and after) passes `promtool check rules`; the relabeling that adds the customresource_* labels
gives each family the group and kind kube-state-metrics would, and nothing to the others, and a
real Prometheus scraping the exporter with it serves those labels to the page's "before" queries.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.metrics.catalog import KINDS, object_families
from tests.test_e2e_prometheus import ROOT, Prom, _free_port, _stop, _wait

DOC = Path(__file__).resolve().parents[1] / "docs" / "migrating-from-kube-state-metrics.md"
TEXT = DOC.read_text(encoding="utf-8")
NOT_SERVED = TEXT.split("### Families not served", 1)[1].split("## What to change in rules", 1)[0]
GROUPS = {"KubeadmControlPlane": "controlplane.cluster.x-k8s.io"}


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, flags=re.DOTALL)


def test_every_compatible_family_is_covered_by_the_family_table() -> None:
    table = TEXT.split("## Family by family", 1)[1].split("### Families not served", 1)[0]
    for spec in KINDS:
        for fam in spec.families:
            if not fam.compat:
                continue
            suffix = fam.name.removeprefix(spec.prefix)
            named = fam.name in table or f"capi_<kind>{suffix}" in table or f"`{suffix}`" in table
            assert named, f"{fam.name} ({spec.kind}) is not in the family table"


def test_every_family_named_exists_or_is_listed_as_not_served() -> None:
    served = {f.name for f in object_families()}
    named = set(re.findall(r"\bcapi_[a-z_]*[a-z]\b", TEXT))
    missing = {n for n in named - served if n not in NOT_SERVED and not n.endswith("_")}
    assert missing == set()
    assert not {n for n in re.findall(r"`(capi_[a-z_]+)`", NOT_SERVED) if n in served}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian package prometheus)")
def test_every_promql_expression_passes_promtool(tmp_path: Path) -> None:
    expressions: list[str] = []
    for block in blocks("promql"):
        current: list[str] = []
        for line in [*block.splitlines(), "#"]:
            if line.startswith("#"):
                if current:
                    expressions.append(" ".join(current))
                current = []
            elif line.strip():
                current.append(line.strip())
    assert len(expressions) >= 12
    rules = {"groups": [{"name": "migration", "rules": [
        {"record": f"migration:expression_{i}", "expr": e} for i, e in enumerate(expressions)]}]}
    path = tmp_path / "migration.rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def relabel(name: str, configs: list[dict[str, Any]]) -> dict[str, str]:
    """What Prometheus' replace action adds to a series of this name (regexes are anchored)."""
    labels: dict[str, str] = {}
    for c in configs:
        assert c["source_labels"] == ["__name__"]
        if re.fullmatch(c["regex"], name):
            labels[c["target_label"]] = c["replacement"]
    return labels


def test_the_relabeling_gives_each_family_its_group_and_only_the_kind_it_names() -> None:
    (block,) = blocks("yaml")
    configs = yaml.safe_load(block)["metric_relabel_configs"]
    kinds_given = {c["replacement"] for c in configs if c["target_label"] == "customresource_kind"}
    for spec in KINDS:
        if not spec.prefix.startswith("capi_") or spec.kind == "InfraMachinePool":
            continue
        if not any(fam.compat for fam in spec.families):
            continue  # a kind kube-state-metrics' configuration does not cover: nothing to migrate

        for fam in spec.families:
            if fam.identity is False:
                continue  # capi_finding: several kinds in one family, no kube-state-metrics twin
            got = relabel(fam.name, configs)
            assert got.get("customresource_group") == GROUPS.get(spec.kind, "cluster.x-k8s.io"), fam.name
            if spec.kind in kinds_given:
                assert got.get("customresource_kind") == spec.kind, fam.name
            else:
                assert "customresource_kind" not in got, fam.name
    assert relabel("capi_finding", configs) == {}
    assert relabel("fleet_status_exporter_build_info", configs) == {}


def relabel_configs() -> list[dict[str, Any]]:
    (block,) = blocks("yaml")
    configs: list[dict[str, Any]] = yaml.safe_load(block)["metric_relabel_configs"]
    return configs


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (Debian package prometheus)")
def test_a_real_prometheus_adds_the_labels_with_the_relabeling(tmp_path: Path) -> None:
    exporter_port, prom_port = _free_port(), _free_port()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--from-files", "examples/",
         "--web.listen-address", f"127.0.0.1:{exporter_port}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=(tmp_path / "exporter.log").open("wb"))]
    try:
        config = {"global": {"scrape_interval": "1s"}, "scrape_configs": [{
            "job_name": "fleet-status-exporter", "honor_labels": True,
            "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}],
            "metric_relabel_configs": relabel_configs()}]}
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        procs.append(subprocess.Popen(
            [str(shutil.which("prometheus")), f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{prom_port}",
             "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("wb")))
        prom = Prom(f"http://127.0.0.1:{prom_port}")
        infos = 'count by (__name__, customresource_group, customresource_kind) ({__name__=~"capi_.+_info"})'

        def scraped() -> list[dict[str, Any]] | None:
            found = prom.query(infos)
            return found if len(found) >= 8 else None

        rows = _wait("the example fleet scraped", scraped, 60)
        # The page's "before" query finds the MachineDeployments by kind again.
        before = prom.query('count by (customresource_kind) '
                            '({__name__=~"capi_.+_info", customresource_group="cluster.x-k8s.io"})')
    finally:
        for proc in reversed(procs):
            _stop(proc)
    kinds = {spec.prefix + "_info": spec.kind for spec in KINDS if spec.prefix.startswith("capi_")}
    got = {r["metric"]["__name__"]: (r["metric"].get("customresource_group"),
                                     r["metric"].get("customresource_kind")) for r in rows}
    ksm = {f"capi_{k}_info" for k in ("cluster", "clusterclass", "kubeadmcontrolplane", "machinedeployment",
                                      "machineset", "machinepool", "machine", "machinehealthcheck")}
    assert ksm <= set(got)
    for name in set(got) - ksm:  # kinds kube-state-metrics does not cover: the rules leave them alone
        assert got[name] == (None, None), name
    for name, (group, kind) in got.items():
        if name not in ksm:
            continue
        assert group == GROUPS.get(kinds[name], "cluster.x-k8s.io"), name
        assert kind == ("MachineDeployment" if name == "capi_machinedeployment_info" else None), name
    assert "MachineDeployment" in {r["metric"].get("customresource_kind") for r in before}
