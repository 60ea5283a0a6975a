"""kube-state-metrics beside the exporter, for the CPU per watch event of both (``--ksm``).

Owns starting the pinned kube-state-metrics (``make ksm-tool``, tests/realcluster/build.py) with
the custom-resource-state configuration Cluster API publishes for its kinds, read from the Go
module cache, against the benchmark's fake API server, and knowing when it has read the fleet.
Does not own the measurement (``harness.py``: paced streams, one process measured at a time, from
/proc).
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from pathlib import Path

import aiohttp

from tests.benchmark import probes
from tests.benchmark.probes import Child
from tests.realcluster import build

SYNC_POLL_SECONDS = 2.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KubeStateMetrics:
    """One kube-state-metrics process serving only the custom resources of Cluster API's config.

    Raises ``build.Missing`` (with the command that builds it) when the binary or the
    configuration is not there: the comparison is never made up.
    """

    def __init__(self, workdir: Path, kubeconfig: str) -> None:
        self.binary = build.binary("kube-state-metrics")
        self.config = build.ksm_config()
        self.kubeconfig = kubeconfig
        self.log = workdir / "kube-state-metrics.log"
        self.port = free_port()
        self.child: Child | None = None

    @property
    def pid(self) -> int:
        assert self.child is not None
        return self.child.pid

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def command(self) -> list[str]:
        return [
            str(self.binary),
            f"--kubeconfig={self.kubeconfig}",
            "--custom-resource-state-only",
            f"--custom-resource-state-config-file={self.config}",
            "--host=127.0.0.1",
            f"--port={self.port}",
            "--telemetry-host=127.0.0.1",
            f"--telemetry-port={free_port()}",
        ]

    def start(self) -> None:
        fh = self.log.open("wb")
        self.child = Child(subprocess.Popen(self.command(), stdout=fh, stderr=fh), self.log)

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()

    @staticmethod
    def version() -> str:
        """The version tests/realcluster/ksm/go.mod pins (the binary is built unstamped)."""
        return build.pinned_version("ksm", "k8s.io/kube-state-metrics/v2")

    async def wait_synced(self, session: aiohttp.ClientSession, machines: int, limit: float) -> None:
        """Until kube-state-metrics serves ``capi_machine_info`` for every Machine of the fleet."""
        assert self.child is not None
        start = time.monotonic()
        served = -1
        while time.monotonic() - start < limit:
            if not self.child.alive():
                raise RuntimeError(f"kube-state-metrics exited:\n{self.child.log_tail()}")
            try:
                s = await probes.scrape(session, self.metrics_url, False)
                served = sum(1 for line in s.text().splitlines() if line.startswith("capi_machine_info{"))
                if served == machines:
                    return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(SYNC_POLL_SECONDS)
        raise TimeoutError(f"kube-state-metrics served {served} of {machines} Machines after {limit:.0f}s:\n"
                           f"{self.child.log_tail()}")
