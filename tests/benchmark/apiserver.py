"""The fake Kubernetes API server serving the benchmark fleet, in its own process, with a control port.

Run by the harness as ``python -m tests.benchmark.apiserver --scale N --port P --control-port C
--kubeconfig-out PATH``; it prints one JSON line (``{"ready": ...}``) once the fleet is loaded. It runs
in a process of its own so that serving and mutating objects does not share an interpreter (and a
GIL) with the measuring client. The control port answers:

- ``GET /info``: objects per kind;
- ``POST /burst {"n": N}``: makes N changes at once (the API server's loop is busy while it does,
  then streams the N events back to back) and returns when they were made and the last marker;
- ``POST /churn {"rate": R}``: makes R changes per second until ``POST /churn/stop``;
- ``GET /changes?since=I``: the changes made from index I on (name, marker, time).

List/watch semantics are ``tests.kubeapi``'s; what a change is, is ``mutations.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.benchmark.fleet import Obj, count_by_kind, generate
from tests.benchmark.mutations import Change, Mutator, changed, recreated
from tests.kubeapi import BOOTSTRAP_TYPES, CAPI_TYPES, INFRA_TYPES, OCM_TYPES, FakeKubeAPI


class FleetServer:
    """A ``FakeKubeAPI`` loaded with the fleet, plus the changes the harness asks for."""

    def __init__(self, scale: int, seed: int) -> None:
        # The history only has to cover a watch reconnect; a burst is streamed from live queues.
        # BOOKMARKs every minute, as API servers send them once a resource's cache has moved past
        # a watch's start: the churned kinds' watches re-open at their deadline from a version
        # still in the history instead of relisting (410 Gone).
        self.api = FakeKubeAPI(history_limit=50_000, bookmark_interval=60.0)
        self.api.install(*CAPI_TYPES, *INFRA_TYPES, *BOOTSTRAP_TYPES, *OCM_TYPES)
        objects = list(generate(scale, seed))
        for obj in objects:
            self.api.create(obj)
        self.counts = count_by_kind(objects)
        self.machines = [
            (o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Machine"
        ]
        self.machine_rt = self.api.resource("Machine").key
        self.mutator = Mutator(seed + 6)
        self.changes: list[Change] = []
        self.churn_task: asyncio.Task[None] | None = None

    def change_one(self) -> Change:
        ns, name = self.machines[self.mutator.rng.randrange(len(self.machines))]
        current = self.api.store.get(self.machine_rt, ns, name)
        assert current is not None
        marker = self.mutator.next_marker()
        kind = self.mutator.kind_of_change()
        if kind == "recreate":
            self.api.store.delete(self.machine_rt, ns, name)
            self.api.store.create(self.machine_rt, recreated(current, marker, str(uuid.uuid4())))
            events = 2
        else:
            self.api.store.update(self.machine_rt, changed(current, marker, flip=kind == "flip"))
            events = 1
        change = Change(ns, name, marker, time.monotonic(), events)
        self.changes.append(change)
        return change

    # ---- control API ----

    async def info(self, _: web.Request) -> web.Response:
        return web.json_response(
            {
                "counts": self.counts,
                "total": sum(self.counts.values()),
                "url": self.api.url,
                "changes": len(self.changes),
            }
        )

    async def burst(self, request: web.Request) -> web.Response:
        n = int((await request.json())["n"])
        start = time.monotonic()
        events = 0
        last: Change | None = None
        for _ in range(n):
            last = self.change_one()
            events += last.events
        assert last is not None
        return web.json_response(
            {
                "start": start,
                "end": time.monotonic(),
                "events": events,
                "last": _change_json(last),
                "first_index": len(self.changes) - n,
            }
        )

    async def churn(self, request: web.Request) -> web.Response:
        rate = float((await request.json())["rate"])
        await self._stop_churn()
        self.churn_task = asyncio.create_task(self._churn(rate))
        return web.json_response({"started": time.monotonic(), "index": len(self.changes)})

    async def churn_stop(self, _: web.Request) -> web.Response:
        await self._stop_churn()
        return web.json_response({"stopped": time.monotonic(), "index": len(self.changes)})

    async def changes_since(self, request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0"))
        return web.json_response(
            {"changes": [_change_json(c) for c in self.changes[since:]], "next": len(self.changes)}
        )

    async def _stop_churn(self) -> None:
        if self.churn_task is not None:
            self.churn_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.churn_task
            self.churn_task = None

    async def _churn(self, rate: float) -> None:
        # Paced by elapsed time, not by sleeps, so a slow tick is made up for at the next one.
        start, done = time.monotonic(), 0
        while True:
            due = int((time.monotonic() - start) * rate)
            while done < due:
                self.change_one()
                done += 1
            await asyncio.sleep(0.005)

    def control_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/info", self.info)
        app.router.add_post("/burst", self.burst)
        app.router.add_post("/churn", self.churn)
        app.router.add_post("/churn/stop", self.churn_stop)
        app.router.add_get("/changes", self.changes_since)
        return app


def _change_json(c: Change) -> dict[str, Any]:
    return {"namespace": c.namespace, "name": c.name, "marker": c.marker, "at": c.at, "events": c.events}


async def serve(args: argparse.Namespace) -> None:
    fleet = FleetServer(args.scale, args.seed)
    await fleet.api.start(args.port)
    runner = web.AppRunner(fleet.control_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.control_port)
    await site.start()
    kubeconfig = fleet.api.write_kubeconfig(Path(args.kubeconfig_out))
    ready: Obj = {"ready": True, "url": fleet.api.url, "kubeconfig": str(kubeconfig), "counts": fleet.counts}
    print(json.dumps(ready), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await fleet._stop_churn()
    await runner.cleanup()
    await fleet.api.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.benchmark.apiserver")
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--control-port", type=int, required=True)
    p.add_argument("--kubeconfig-out", required=True)
    asyncio.run(serve(p.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
