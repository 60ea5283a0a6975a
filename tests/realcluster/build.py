"""Builds the real components the suite runs against, pinned, into a cache outside the repository.

Owns: the versions of everything real the tests start or install (the Go modules in ``tools/``
and ``helm/`` pin kube-apiserver with its etcd and Helm; ``CRD_SOURCES`` pins the upstream CRDs),
building the binaries with ``go build`` into ``<cache>/bin/<module digest>/`` (a changed go.mod or
go.sum builds anew, an unchanged one is reused by every later run on the machine), and fetching
the CRD modules into the Go module cache. Does not own starting anything (``cluster.py``).

    python -m tests.realcluster.build          # build what is missing, print where it is
    python -m tests.realcluster.build --check  # exit 1 when something is missing
    python -m tests.realcluster.build --capi   # the Cluster API managers of both eras (``make capi-tools``)
    python -m tests.realcluster.build --ksm    # kube-state-metrics for the benchmark (``make ksm-tool``)

The cache is ``$FSE_TOOLS_CACHE``, else ``$XDG_CACHE_HOME/fleet-status-exporter``, else
``~/.cache/fleet-status-exporter``. Go's own caches (module and build) are used as they are set.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Binary:
    name: str  # the file name in the cache
    module: str  # the folder under tests/realcluster holding the go.mod that pins it
    package: str  # the main package to build
    # A Kubernetes component reports the version of this module (pinned by the same go.mod) at
    # /version, stamped at link time as its release builds do; unstamped it reports
    # v0.0.0-master, which clients checking the server's version refuse (Cluster API's managers).
    kube_version_of: str | None = None


BINARIES = (
    Binary("kube-apiserver", "tools", "k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes"),
    Binary("etcd", "tools", "go.etcd.io/etcd/server/v3"),
    Binary("helm", "helm", "helm.sh/helm/v3/cmd/helm"),
)

# The Cluster API managers the controller tests (marker ``capi``) run, pinned by ``capi/``. Kept
# apart from BINARIES: the suite does not need them, and they take minutes more to build.
CAPI_BINARIES = (
    Binary("capi-core-manager", "capi", "sigs.k8s.io/cluster-api/core"),
    Binary("capi-kubeadm-control-plane-manager", "capi", "sigs.k8s.io/cluster-api/controlplane/kubeadm"),
    Binary("capi-kubeadm-bootstrap-manager", "capi", "sigs.k8s.io/cluster-api/bootstrap/kubeadm"),
    # The Docker provider; its in-memory backend (DevCluster/DevMachine with backend.inMemory)
    # simulates workload clusters, their API servers served on loopback, with no Docker engine.
    Binary("capd-manager", "capi", "sigs.k8s.io/cluster-api/test/infrastructure/docker"),
)

# The same managers of Cluster API v1.10 (v1beta1 storage, the v1beta2 conditions under
# status.v1beta2), pinned by ``capi110/``: the controller tests run the v1beta1 era with them. The
# core manager is the module's root package in that release.
CAPI_V1BETA1_BINARIES = (
    Binary("capi-core-manager", "capi110", "sigs.k8s.io/cluster-api"),
    Binary("capi-kubeadm-control-plane-manager", "capi110", "sigs.k8s.io/cluster-api/controlplane/kubeadm"),
    Binary("capi-kubeadm-bootstrap-manager", "capi110", "sigs.k8s.io/cluster-api/bootstrap/kubeadm"),
    Binary("capd-manager", "capi110", "sigs.k8s.io/cluster-api/test/infrastructure/docker"),
)


# kube-state-metrics, pinned by ``ksm/``: the benchmark runs it beside the exporter (``--ksm``) with
# the custom-resource-state configuration Cluster API publishes (KSM_CONFIG), to compare CPU per
# watch event. Neither the suite nor CI needs it.
KSM_BINARIES = (Binary("kube-state-metrics", "ksm", "k8s.io/kube-state-metrics/v2"),)

# The configuration is read from the module cache where it is generated (from ``templates/``), at
# the Cluster API release whose CRDs the benchmark's fake API server serves.
KSM_CONFIG = ("sigs.k8s.io/cluster-api", "v1.14.2", "core/config/metrics/crd-metrics-config.yaml")


@dataclass(frozen=True)
class CrdSource:
    module: str
    version: str
    globs: tuple[str, ...]  # CRD files inside the module


CAPI_GLOBS = (
    "config/crd/bases/cluster.x-k8s.io_*.yaml",
    "core/config/crd/bases/cluster.x-k8s.io_*.yaml",
    "config/crd/bases/addons.cluster.x-k8s.io_*.yaml",
    "core/config/crd/bases/addons.cluster.x-k8s.io_*.yaml",
    "config/crd/bases/runtime.cluster.x-k8s.io_*.yaml",
    "core/config/crd/bases/runtime.cluster.x-k8s.io_*.yaml",
    "config/crd/bases/ipam.cluster.x-k8s.io_ipaddressclaims.yaml",
    "core/config/crd/bases/ipam.cluster.x-k8s.io_ipaddressclaims.yaml",
    "controlplane/kubeadm/config/crd/bases/*.yaml",
    "bootstrap/kubeadm/config/crd/bases/*.yaml",
)
OCM_GLOBS = (
    "work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml",
    "work/v1alpha1/0000_00_work.open-cluster-management.io_manifestworkreplicasets.crd.yaml",
    "cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml",
    "cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml",
    "cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml",
    "addon/v1alpha1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml",
)

CRD_SOURCES = {
    # Stores v1beta1, with the v1beta2 conditions under status.v1beta2.
    "capi-v1beta1": CrdSource("sigs.k8s.io/cluster-api", "v1.10.6", CAPI_GLOBS),
    # Stores v1beta2 (v1beta1 still served).
    "capi-v1beta2": CrdSource("sigs.k8s.io/cluster-api", "v1.14.2", CAPI_GLOBS),
    # An infrastructure provider's MachinePool, InfraCluster and InfraMachine kinds: the AWS
    # provider's, as the examples use.
    "aws-machinepool": CrdSource(
        "sigs.k8s.io/cluster-api-provider-aws/v2", "v2.10.0",
        ("config/crd/bases/infrastructure.cluster.x-k8s.io_awsmachinepools.yaml",
         "config/crd/bases/infrastructure.cluster.x-k8s.io_awsclusters.yaml",
         "config/crd/bases/infrastructure.cluster.x-k8s.io_awsmachines.yaml"),
    ),
    # The Docker provider's InfraCluster and InfraMachine kinds, which the staging examples reference.
    "capd": CrdSource(
        "sigs.k8s.io/cluster-api/test", "v1.14.2",
        ("infrastructure/docker/config/crd/bases/infrastructure.cluster.x-k8s.io_dockerclusters.yaml",
         "infrastructure/docker/config/crd/bases/infrastructure.cluster.x-k8s.io_dockermachines.yaml"),
    ),
    # Writes the MWRS summary key "Applied" (before the rename to "applied" in v1.1.0).
    "ocm-v1.0": CrdSource("open-cluster-management.io/api", "v1.0.0", OCM_GLOBS),
    # "applied", plus desiredTotal and updated.
    "ocm-v1.2": CrdSource("open-cluster-management.io/api", "v1.2.0", OCM_GLOBS),
    # The Prometheus operator's ServiceMonitor, PodMonitor and PrometheusRule, which the Helm chart
    # can create.
    "prometheus-operator": CrdSource(
        "github.com/prometheus-operator/prometheus-operator", "v0.85.0",
        ("example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
         "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
         "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"),
    ),
}


ALL_BINARIES = (*BINARIES, *CAPI_BINARIES, *CAPI_V1BETA1_BINARIES, *KSM_BINARIES)


class Missing(Exception):
    """A component is not built or fetched yet."""


def cache_dir() -> Path:
    explicit = os.environ.get("FSE_TOOLS_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fleet-status-exporter"


def pinned_version(module: str, dependency: str) -> str:
    """The version tests/realcluster/<module>/go.mod requires of ``dependency``."""
    text = (HERE / module / "go.mod").read_text()
    m = re.search(rf"^\s*{re.escape(dependency)} (v\S+)", text, re.MULTILINE)
    if m is None:
        raise Missing(f"{dependency} is not required by tests/realcluster/{module}/go.mod")
    return m.group(1)


def ldflags(binary: Binary) -> str:
    if binary.kube_version_of is None:
        return ""
    version = pinned_version(binary.module, binary.kube_version_of)
    major, minor = version.removeprefix("v").split(".")[:2]
    fields = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    return " ".join(f"-X k8s.io/component-base/version.{k}={v}" for k, v in fields.items())


def module_digest(module: str) -> str:
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        h.update((HERE / module / name).read_bytes())
    for b in ALL_BINARIES:
        if b.module == module and ldflags(b):
            h.update(f"{b.name} {ldflags(b)}".encode())
    return h.hexdigest()[:16]


def binary_path(binary: Binary) -> Path:
    return cache_dir() / "bin" / module_digest(binary.module) / binary.name


def binary(name: str, module: str | None = None) -> Path:
    """The built binary (of the go.mod in ``module`` when given); raises Missing with the command
    that builds it."""
    spec = next(b for b in ALL_BINARIES if b.name == name and module in (None, b.module))
    path = binary_path(spec)
    if not path.is_file():
        if spec in CAPI_BINARIES or spec in CAPI_V1BETA1_BINARIES:
            raise Missing(f"{name} (tests/realcluster/{spec.module}) is not built: run `make capi-tools` "
                          "(or `python -m tests.realcluster.build --capi`)")
        if spec in KSM_BINARIES:
            raise Missing(f"{name} (tests/realcluster/{spec.module}) is not built: run `make ksm-tool` "
                          "(or `python -m tests.realcluster.build --ksm`)")
        raise Missing(f"{name} is not built: run `make tools` (or `python -m tests.realcluster.build`)")
    return path


def ksm_config() -> Path:
    """Cluster API's kube-state-metrics configuration for its kinds, in the Go module cache."""
    module, version, relative = KSM_CONFIG
    path = module_dir(module, version) / relative
    if not path.is_file():
        raise Missing(f"{relative} is not in {module}@{version}")
    return path


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-buildvcs=false")
    env["GOWORK"] = "off"
    env.pop("GO111MODULE", None)
    return env


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise Missing("the Go toolchain is not installed (`go` not on PATH)")
    return go


def build_binaries(binaries: tuple[Binary, ...] = BINARIES) -> None:
    by_module: dict[str, list[Binary]] = {}
    for b in binaries:
        if not binary_path(b).is_file():
            by_module.setdefault(b.module, []).append(b)
    for module, wanted in by_module.items():
        out = binary_path(wanted[0]).parent
        out.mkdir(parents=True, exist_ok=True)
        scratch = out / ".build"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        started = time.monotonic()
        print(f"building {', '.join(b.name for b in wanted)} (tests/realcluster/{module}) ...", flush=True)
        for b in wanted:
            subprocess.run(
                [_go(), "build", "-trimpath", "-ldflags", ldflags(b), "-o", str(scratch / b.name), b.package],
                cwd=HERE / module, env=_go_env(), check=True,
            )
        for b in wanted:
            (scratch / b.name).replace(binary_path(b))  # complete binaries only, never a partial one
        scratch.rmdir()
        print(f"built in {time.monotonic() - started:.0f}s into {out}", flush=True)


@functools.cache
def module_dir(module: str, version: str) -> Path:
    """The module's folder in the Go module cache, downloading it when absent."""
    result = subprocess.run(
        [_go(), "mod", "download", "-json", f"{module}@{version}"],
        cwd=HERE / "tools", env=_go_env(), capture_output=True, text=True,
    )
    info = json.loads(result.stdout or "{}")
    if result.returncode != 0 or "Dir" not in info:
        raise Missing(f"cannot fetch {module}@{version}: {info.get('Error') or result.stderr.strip()}")
    return Path(info["Dir"])


def crd_files(era: str) -> list[Path]:
    source = CRD_SOURCES[era]
    root = module_dir(source.module, source.version)
    files = sorted({p for g in source.globs for p in root.glob(g)})
    if not files:
        raise Missing(f"no CRDs found in {source.module}@{source.version} ({', '.join(source.globs)})")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when something is missing")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--capi", action="store_true",
                       help="the Cluster API managers of the controller tests instead of the suite's tools")
    which.add_argument("--ksm", action="store_true",
                       help="kube-state-metrics and its Cluster API configuration, for the benchmark's --ksm")
    args = parser.parse_args(argv)
    binaries = ((*CAPI_BINARIES, *CAPI_V1BETA1_BINARIES) if args.capi
                else KSM_BINARIES if args.ksm else BINARIES)
    missing = [f"{b.name} (tests/realcluster/{b.module})" for b in binaries if not binary_path(b).is_file()]
    if args.check:
        for name in missing:
            print(f"missing: {name}", file=sys.stderr)
        return 1 if missing else 0
    try:
        build_binaries(binaries)
        if args.ksm:
            print(f"kube-state-metrics configuration: {ksm_config()}")
        elif not args.capi:
            for era in CRD_SOURCES:
                crd_files(era)
    except (Missing, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for b in binaries:
        print(f"{b.name}: {binary_path(b)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
