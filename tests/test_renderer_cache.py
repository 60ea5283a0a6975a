"""The renderer's compressed bucket cache under random interleavings of changes, removals, bucket
splits and rounds (a scrape's, over every dirty bucket; a relief's, over the heaviest; finished
late or abandoned): every scrape serves exactly the lines of the objects as they were when its
round began, raw or gzip, however many changes came during the round."""

from __future__ import annotations

import gzip
import random
from dataclasses import replace

import pytest

from exporter.engine.model import Machine, Meta, Result
from exporter.metrics.catalog import kind_spec
from exporter.metrics.renderer import Rebuild, Renderer, render_object
from tests.test_renderer import built, gzip_body

PHASES = ("Running", "Provisioning", "Deleting", "Failed")


def machine(i: int, version: int) -> Machine:
    return Machine(
        meta=Meta(kind="Machine", api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name=f"m{i}",
                  uid=f"uid-{i}", creation_timestamp=1_700_000_000.0 + i),
        cluster_name=f"c{i % 5}", layout="v1beta2", version=f"v1.{version}.0", phase="Running",
        node_name=f"node-{i}" if version % 3 else "",
    )


def result(m: Machine, version: int) -> Result:
    return Result(key=m.key, api_version=m.meta.api_version, uid=m.meta.uid, cluster_name=m.cluster_name,
                  phase=PHASES[version % len(PHASES)], layout=m.layout)


def expected(objects: dict[int, int], renderer: Renderer) -> list[bytes]:
    index = {f.name: i for i, f in enumerate(renderer.families)}
    out: list[bytes] = []
    for i, version in objects.items():
        m = machine(i, version)
        spec = kind_spec(m)
        assert spec is not None
        for _, text in render_object(spec, index, m, result(m, version)):
            out.extend(text.splitlines())
    return sorted(out)


def samples(body: bytes) -> list[bytes]:
    return sorted(line for line in body.splitlines() if not line.startswith(b"#"))


@pytest.mark.parametrize("seed", range(8))
def test_random_interleavings_serve_exactly_the_lines_of_each_rounds_moment(seed: int) -> None:
    rng = random.Random(seed)
    renderer = Renderer(bucket_bytes=rng.choice((512, 2048, 8192)))
    objects: dict[int, int] = {}
    groups: dict[int, set[int]] = {g: set() for g in range(5)}
    # The round in flight (rounds run one at a time), and the lines it must publish (None: a relief).
    running: tuple[list[Rebuild], list[bytes] | None] | None = None

    def put_group(g: int) -> None:
        items = []
        for i in sorted(groups[g]):
            m = machine(i, objects[i])
            items.append((m, result(m, objects[i])))
        renderer.update_group(("capi", "ns", f"c{g}"), items)

    for step in range(200):
        op = rng.random()
        if op < 0.55:  # some objects of one group change, appear or disappear
            g = rng.randrange(5)
            for _ in range(rng.randrange(1, 12)):
                i = rng.randrange(g, 400, 5)
                if i in objects and rng.random() < 0.2:
                    del objects[i]
                    groups[g].discard(i)
                else:
                    objects[i] = objects.get(i, 0) + rng.randrange(1, 4)
                    groups[g].add(i)
            put_group(g)
        elif running is None:
            if op < 0.8:
                running = renderer.take_round(), expected(objects, renderer)
            else:
                running = renderer.take_heaviest(rng.randrange(1, 1 << 14)), None
        else:  # the round in flight ends: installed, or given back
            rebuilds, lines = running
            running = None
            if rng.random() < 0.15:
                renderer.abandon_round(rebuilds)
                continue
            renderer.finish_round(built(rebuilds))
            if lines is not None:
                published = renderer.published()
                body = b"".join(published.texts())
                assert samples(body) == lines, f"step {step}"
                assert len(body) == published.size
                assert gzip.decompress(b"".join(published.gzip_parts())) == body
        if running is None and step % 25 == 0:
            raw = renderer.render_body()
            assert samples(raw) == expected(objects, renderer)
            assert gzip.decompress(gzip_body(renderer)) == raw
    if running is not None:
        renderer.finish_round(built(running[0]))
    raw = renderer.render_body()
    assert samples(raw) == expected(objects, renderer)
    assert gzip.decompress(gzip_body(renderer)) == raw
    assert renderer.pending_bytes == 0 and renderer.pending_bytes == sum(
        b.pending_bytes for fam in renderer._families for b in fam.buckets)
    for g in groups:
        renderer.remove_group(("capi", "ns", f"c{g}"))
    assert renderer.render_body() == b"" and len(renderer) == 0


def test_an_object_changing_in_one_family_dirties_one_bucket() -> None:
    renderer = Renderer(bucket_bytes=1024)
    ms = [machine(i, 1) for i in range(100)]
    renderer.update_group(("capi", "ns", "c"), [(m, result(m, 1)) for m in ms])
    gzip_body(renderer)
    m = replace(ms[42], node_name="elsewhere")  # only the noderef family changes
    others = [(x, result(x, 1)) for x in ms if x is not ms[42]]
    renderer.update_group(("capi", "ns", "c"), [(m, result(m, 1)), *others])
    dirty = renderer.take_round()
    assert len(dirty) == 1 and set(dirty[0].job()[3]) == {renderer._entries[m.key].id}


def test_an_update_equal_to_the_last_rendering_keeps_the_new_objects_not_both() -> None:
    # The store and the pipeline hold the newest projection and Result; an equal but distinct
    # pair must replace the rendered one, or each such update keeps a second copy alive.
    renderer = Renderer(bucket_bytes=1024)
    ms = [machine(i, 1) for i in range(10)]
    renderer.update_group(("capi", "ns", "c"), [(m, result(m, 1)) for m in ms])
    gzip_body(renderer)
    again = [(replace(m), result(m, 1)) for m in ms]
    assert all(new == old and new is not old for (new, _), old in zip(again, ms, strict=True))
    renderer.update_group(("capi", "ns", "c"), again)
    assert renderer.take_round() == []  # nothing to render again
    for obj, res in again:
        entry = renderer._entries[obj.key]
        assert entry.obj is obj and entry.result is res
    once_more = replace(ms[4])
    assert renderer.update_objects(("capi", "ns", "c"), [(once_more, again[4][1])])
    assert renderer._entries[ms[4].key].obj is once_more and renderer.take_round() == []
