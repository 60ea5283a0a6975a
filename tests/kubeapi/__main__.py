"""Run the fake API server standalone, serving a directory of manifests.

    python -m tests.kubeapi --port 8001 --from-files examples/

installs a CRD for every kind found in the manifests (plus the Cluster API and OCM kinds the
exporter watches, with ``--all-kinds``), loads the objects and prints the URL and a kubeconfig
path, so the kube source can be tried without a cluster::

    fleet-status-exporter --kubeconfig /tmp/.../kubeconfig
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
from pathlib import Path

from tests.kubeapi.catalog import CAPI_TYPES, OCM_TYPES, load_manifests
from tests.kubeapi.server import FakeKubeAPI


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.kubeapi", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--from-files", action="append", default=[], metavar="PATH", help="file or directory (repeatable)"
    )
    p.add_argument("--all-kinds", action="store_true", help="also install every CAPI and OCM kind")
    p.add_argument("--kubeconfig-out", default="", metavar="PATH", help="where to write the kubeconfig")
    p.add_argument("--bookmark-interval", type=float, default=60.0, metavar="SECONDS",
                   help="send BOOKMARKs on open watches this often, as API servers do (default 60)")
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    api = FakeKubeAPI(host=args.host, bookmark_interval=args.bookmark_interval)
    if args.all_kinds:
        api.install(*CAPI_TYPES, *OCM_TYPES)
    total = sum(api.load(load_manifests(path)) for path in args.from_files)
    await api.start(args.port)
    out = Path(args.kubeconfig_out or Path(tempfile.mkdtemp(prefix="fake-kubeapi-")) / "kubeconfig")
    api.write_kubeconfig(out)
    kinds = ", ".join(sorted(t.kind for t in api.resources.values())) or "none"
    print(f"fake Kubernetes API serving {total} objects at {api.url}", flush=True)
    print(f"kinds: {kinds}", flush=True)
    print(f"kubeconfig: {out}", flush=True)
    print(f"try: KUBECONFIG={out} python -m exporter --kubeconfig {out}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await api.stop()


def main(argv: list[str] | None = None) -> int:
    asyncio.run(serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
