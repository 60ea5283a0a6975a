"""Per-event cost inside one process, by kind of change and by stage: ``python -m tests.benchmark.inprocess``.

Where ``python -m tests.benchmark`` measures the real ``serve`` from outside, this takes the same
fleet and the same changes (``mutations.py``) through the exporter's own pieces in one process,
with no HTTP, no scrapes and no other process on the CPU: each change is encoded as a watch event
line, then decoded, projected, stored, evaluated and rendered as the kube source and the pipeline
do, a pass every ``--per-pass`` events. It starts from the state ``serve`` is in once ready and
scraped (every bucket compressed, no line pending, the loaded fleet frozen for the garbage
collector), and its passes hand pending lines past the limit to the publisher's compression worker
as ``serve``'s do. It prints the CPU time per event of this process for each kind of change (the
worker's own is not in it) and how it splits over the stages, which is what a profile of one
stage cannot tell. Owns no exporter logic: it calls
the same functions ``serve`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import orjson

import exporter.app as app_module
from exporter import implementation
from exporter.app import FilteringSink, Pipeline
from exporter.engine.model import Base
from exporter.engine.parse import project
from exporter.engine.rule_inputs import export_only_change
from exporter.metrics import renderer as renderer_module
from exporter.metrics.publisher import Publisher
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats
from exporter.runtime import young_only
from exporter.store import Store
from tests.benchmark.fleet import Obj, generate
from tests.benchmark.mutations import Mutator, changed, recreated

KINDS = ("marker", "flip", "recreate", "mixed")
COMPILED = implementation() == "compiled"


class Stages:
    """CPU seconds spent in each wrapped function while ``active``."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.active = False

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return fn(*args, **kwargs)
            started = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.process_time() - started

        return timed


def load(scale: int, seed: int) -> tuple[list[Obj], Store, Pipeline, Renderer]:
    objects = list(generate(scale, seed))
    store = Store(export_only=export_only_change)
    sink = FilteringSink(store)
    by_kind: dict[str, list[Base]] = defaultdict(list)
    for raw in objects:
        p = project(raw)
        if p is not None:
            by_kind[type(p).__name__ if type(p).__name__ == "InfraMachinePool" else p.meta.kind].append(p)
    for kind, projections in by_kind.items():
        sink.replace(kind, projections)
    renderer = Renderer()
    pipeline = Pipeline(store, sink, renderer, ExporterStats(), lambda _: True)
    asyncio.run(pipeline.run_pass(store.take_dirty(), store.take_exported()))
    # As after serve's first scrape: every bucket has its member and no line is pending, so changes
    # add pending lines as they do in serve (in a fleet never compressed, each would replace a
    # line already pending, a cheaper state serve is never in).
    renderer.publish_here()
    return objects, store, pipeline, renderer


def events(objects: list[Obj], n: int, kind: str, seed: int) -> list[bytes]:
    """``n`` watch event lines changing random Machines (a recreate is a DELETED and an ADDED)."""
    machines = [o for o in objects if o["kind"] == "Machine"]
    mutator, rng = Mutator(seed), random.Random(seed)
    out: list[bytes] = []
    for i in range(n):
        index = rng.randrange(len(machines))
        current = machines[index]
        what = mutator.kind_of_change() if kind == "mixed" else kind
        marker = mutator.next_marker()
        if what == "recreate":
            new = recreated(current, marker, f"recreated-{i}")
            out.append(json.dumps({"type": "DELETED", "object": current}).encode())
            out.append(json.dumps({"type": "ADDED", "object": new}).encode())
        else:
            new = changed(current, marker, flip=what == "flip")
            out.append(json.dumps({"type": "MODIFIED", "object": new}).encode())
        machines[index] = new
    return out


def measure(scale: int, n: int, kind: str, per_pass: int, seed: int) -> dict[str, Any]:
    objects, store, pipeline, renderer = load(scale, seed)
    lines = events(objects, n, kind, seed + 1)
    stages = Stages()
    decode = stages.wrap("decode", orjson.loads)  # as the informer decodes watch lines
    to_projection = stages.wrap("project", project)
    sink = pipeline.sink
    upsert = stages.wrap("store", sink.upsert)
    delete = stages.wrap("store", sink.delete)
    # The pipeline's calls into the engine and the renderer, wrapped where the pipeline looks them up.
    saved = (app_module.evaluate_group_reusing, renderer.update_group, renderer.update_objects,
             renderer_module.render_object)
    app_module.evaluate_group_reusing = stages.wrap("evaluate", saved[0])
    if not COMPILED:  # a compiled renderer calls its own functions directly and has no method to replace
        renderer_module.render_object = stages.wrap("render lines", saved[3])
        renderer.update_group = stages.wrap("renderer", saved[1])  # type: ignore[method-assign]
        renderer.update_objects = stages.wrap("renderer", saved[2])  # type: ignore[method-assign]

    async def run() -> None:
        # Pending lines past the limit go to the compression worker during the passes, as in serve.
        publisher = Publisher(renderer)
        pipeline.relieve = publisher.relieve
        await publisher.start()
        try:
            await changes()
        finally:
            await publisher.stop()

    async def changes() -> None:
        for i, line in enumerate(lines, 1):
            event = decode(line)
            obj = event["object"]
            if event["type"] == "DELETED":
                meta = obj["metadata"]
                delete(obj["kind"], meta["namespace"], meta["name"])
            else:
                # The informer hands over the object's last projection, as here.
                meta = obj["metadata"]
                projection = to_projection(obj, store.get((obj["kind"], meta["namespace"], meta["name"])))
                if projection is not None:
                    upsert(projection)
            if i % per_pass == 0:
                await pipeline.run_pass(store.take_dirty(), store.take_exported())
        await pipeline.run_pass(store.take_dirty(), store.take_exported())

    renders = renderer.renders
    # The collector as serve's leaves it once ready (``runtime.manage_gc``): the fleet frozen, the
    # young generation alone collected by itself. Left as it is, full collections over the whole
    # fleet, which serve never makes, fell on some of the events.
    gc.collect()
    gc.freeze()
    stages.active = True
    started = time.process_time()
    try:
        with young_only():
            asyncio.run(run())
    finally:
        stages.active = False
        app_module.evaluate_group_reusing, _, _, renderer_module.render_object = saved
        gc.unfreeze()
    total = time.process_time() - started
    per_event = {name: s / len(lines) * 1e6 for name, s in stages.seconds.items()}
    # "renderer" includes "render lines" (it calls it): report the rest of it on its own.
    if "renderer" in per_event:
        per_event["renderer"] = per_event["renderer"] - per_event.get("render lines", 0.0)
    return {
        "scale": scale, "kind": kind, "events": len(lines), "objects": len(renderer),
        "us_per_event": total / len(lines) * 1e6, "stages_us": per_event,
        "renders_per_event": (renderer.renders - renders) / len(lines),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.benchmark.inprocess",
                                description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=10, help="share of the target fleet in percent (default 10)")
    p.add_argument("--events", type=int, default=3000, help="changes per kind (default 3000)")
    p.add_argument("--kind", choices=KINDS, action="append", help="default: all")
    p.add_argument("--per-pass", type=int, default=10, help="events between evaluation passes (default 10)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="write the figures as JSON to this path")
    args = p.parse_args(argv)
    rows = [measure(args.scale, args.events, kind, args.per_pass, args.seed) for kind in args.kind or KINDS]
    stages = ["decode", "project", "store", "evaluate", "render lines", "renderer"]
    print(f"{'change':<10}{'events':>8}{'us/event':>10}" + "".join(f"{s:>14}" for s in stages)
          + f"{'renders/ev':>12}")
    for r in rows:
        print(f"{r['kind']:<10}{r['events']:>8}{r['us_per_event']:>10.0f}"
              + "".join(f"{r['stages_us'][s]:>14.0f}" if s in r["stages_us"] else f"{'-':>14}"
                        for s in stages)
              + f"{r['renders_per_event']:>12.2f}")
    print(f"scale {args.scale} % ({rows[0]['objects']:,} objects rendered, {implementation()} build), "
          "CPU time per watch event of this process (the compression worker's not in it); the stages "
          "do not add up to the total: the rest is the pipeline's own bookkeeping and its hand-offs to "
          "the worker"
          + ("" if not COMPILED else "; the renderer's stages are in the rest when it is compiled"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
