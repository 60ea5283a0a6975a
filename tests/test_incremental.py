"""Incremental evaluation gives what full evaluation gives.

The store skips updates equal to what it holds and tells export-only updates (fields no rule
reads, ``exporter.engine.rule_inputs.EXPORT_ONLY``) from the others; the pipeline re-renders those
with their previous Result, and group evaluation reuses the Computed of unchanged Machines and of
owners whose inputs are unchanged. Random
changes are applied to the example fleet and to part of the benchmark fleet, and after every step
the pipeline's Results and, at checkpoints, its exposition are compared with a reference that
re-evaluates every group an update touches, without any of those shortcuts, with the same ``now``
and the same history (transition times carry over from previous Results). At the end the
exposition is also compared with a one-shot evaluation from scratch. The same harness run with a
rule-read field wrongly listed as export-only, with Machine reuse that ignores the clock or with
owner inputs that leave out the Machines must find a difference; owner reuse that ignores the
clock is shown wrong on a constructed group.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

import exporter.app as app_module
from exporter.app import FilteringSink, Pipeline
from exporter.engine import evaluate as evaluate_module
from exporter.engine import model, rule_inputs
from exporter.engine.evaluate import evaluate_all, evaluate_group, evaluate_group_reusing, finish
from exporter.engine.evaluate_types import CapiGroup, Computed
from exporter.engine.grouping import FleetIndex, GroupKey, evaluated_alone, group_key, group_projections
from exporter.engine.model import (
    Base,
    Cluster,
    Condition,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineSet,
    ManifestWork,
    Meta,
    ObjectKey,
    Result,
    Status,
    is_bare,
)
from exporter.engine.parse import project
from exporter.engine.rule_inputs import export_only_change
from exporter.engine.visibility import depends_on
from exporter.metrics.renderer import Renderer, render_fleet
from exporter.metrics.selfmetrics import ExporterStats
from exporter.store import Store
from exporter.timeslice import TimeSlice

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_795_176_000.0  # 2026-11-20T12:00:00Z


# ---- fleets -----------------------------------------------------------------------------------


def example_fleet() -> list[Base]:
    docs: list[dict[str, Any]] = []
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return [o for o in (project(d) for d in docs) if o is not None]


def benchmark_fleet(clusters: int = 8) -> list[Base]:
    """The Cluster API objects of a few Clusters of the 10 % benchmark fleet, the odd ones first."""
    from tests.benchmark.fleet import generate

    objects = [o for o in (project(r) for r in generate(10)) if o is not None]
    all_clusters = [o for o in objects if isinstance(o, Cluster)]
    with_pool = {o.cluster_name for o in objects if o.meta.kind == "MachinePool"}
    odd = [c for c in all_clusters if c.meta.deleting or c.spec_paused or c.meta.name in with_pool]
    picked = [*odd[:4], *all_clusters[: clusters - min(len(odd), 4)]]
    chosen = {(c.meta.namespace, c.meta.name) for c in picked}
    return [
        o for o in objects
        if o.meta.kind == "ClusterClass" or (o.meta.namespace, o.cluster_name) in chosen
    ]


# ---- random changes ---------------------------------------------------------------------------


def _meta(obj: Base, **changes: Any) -> Base:
    return dataclasses.replace(obj, meta=dataclasses.replace(obj.meta, **changes))


def _flip(conditions: tuple[Condition, ...], rng: random.Random) -> tuple[Condition, ...]:
    if not conditions:
        return (Condition("NodeHealthy", Status.FALSE, "NodeNotHealthy", "", NOW - 60),)
    i = rng.randrange(len(conditions))
    c = conditions[i]
    status = rng.choice([s for s in Status if s is not c.status])
    flipped = Condition(c.type, status, f"{c.reason}X"[:40], c.message,
                        rng.choice([None, NOW - rng.randrange(1, 3600)]), c.observed_generation, c.severity)
    return (*conditions[:i], flipped, *conditions[i + 1:])


def _without(conditions: tuple[Condition, ...], type_: str) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type != type_)


def _ready_since(conditions: tuple[Condition, ...], when: float) -> tuple[Condition, ...]:
    return tuple(c.at(when) if c.type == "Ready" else c for c in conditions)


def export_only_changes(m: Machine, rng: random.Random, now: float) -> Machine:
    """A change to fields no rule reads (one or several of them)."""
    options: list[Callable[[Machine], Base]] = [
        lambda o: dataclasses.replace(o, certificates_expiry=now + rng.randrange(1, 10**8)),
        lambda o: dataclasses.replace(o, addresses=("InternalIP", f"10.0.0.{rng.randrange(255)}")),
        lambda o: dataclasses.replace(o, failure_domain=f"fd-{rng.randrange(9)}"),
        lambda o: dataclasses.replace(o, failure_reason=rng.choice(["", "InsufficientResources"]),
                                      failure_message=rng.choice(["", "boom"])),
        lambda o: dataclasses.replace(o, observed_generation=rng.randrange(1, 9)),
        lambda o: _meta(o, generation=rng.randrange(1, 9)),
        lambda o: _meta(o, labels=MappingProxyType({**o.meta.labels, "team": str(rng.randrange(9))})),
        lambda o: _meta(o, annotations=MappingProxyType({"note": str(rng.randrange(9))})),
        lambda o: _meta(o, resource_version=str(rng.randrange(10**6))),
        lambda o: _meta(o, exported_labels=MappingProxyType({"env": str(rng.randrange(9))})),
        lambda o: _meta(o, exported_annotations=MappingProxyType({"owner": str(rng.randrange(9))})),
    ]
    out: Base = m
    for change in rng.sample(options, rng.randint(1, 3)):
        out = change(out)  # type: ignore[arg-type]
    assert isinstance(out, Machine)
    return out


def rule_read_change(obj: Base, rng: random.Random, now: float) -> Base:
    """A change to something a rule reads (conditions, lifecycle, links, versions, ...)."""
    common: list[Callable[[Base], Base]] = [
        lambda o: dataclasses.replace(o, conditions=_flip(o.conditions, rng)),
        lambda o: _meta(o, deletion_timestamp=rng.choice([None, now - 14 * 60 - rng.randrange(120),
                                                          now - rng.randrange(3600)])),
        lambda o: dataclasses.replace(o, paused_annotation=not o.paused_annotation),
        lambda o: dataclasses.replace(o, problems=rng.choice([(), ("status.phase: not a string",)])),
        lambda o: _meta(o, uid=f"uid-{rng.randrange(10**6)}"),
    ]
    specific: list[Callable[[Any], Base]] = []
    if isinstance(obj, Machine):
        specific = [
            lambda o: dataclasses.replace(o, node_name=rng.choice(["", "node-x", o.node_name])),
            lambda o: dataclasses.replace(o, provider_id=rng.choice(["", "docker://x"])),
            lambda o: dataclasses.replace(o, phase=rng.choice(["", "Running", "Provisioning"])),
            lambda o: dataclasses.replace(o, version=rng.choice(["v1.30.0", "v1.31.1", ""])),
            lambda o: _meta(o, creation_timestamp=now - rng.choice([1, 5, 30, 86_400])),
            lambda o: dataclasses.replace(o, min_ready_seconds=rng.choice([0, 0, 30, 600])),
            # Without a reported UpToDate the version and the age of a Machine count; after a
            # recent Ready, minReadySeconds does.
            lambda o: dataclasses.replace(o, conditions=_without(o.conditions, "UpToDate")),
            lambda o: dataclasses.replace(
                o, conditions=_ready_since(o.conditions, now - rng.randrange(1200))),
            lambda o: dataclasses.replace(o, layout=rng.choice(["v1beta2", "v1beta1+v1beta2", "v1beta1"])),
        ]
    elif isinstance(obj, Cluster):
        specific = [lambda o: dataclasses.replace(o, spec_paused=not o.spec_paused),
                    lambda o: dataclasses.replace(o, topology_version=rng.choice(["", "v1.31.1"]))]
    elif isinstance(obj, MachineSet | MachineDeployment | KubeadmControlPlane):
        specific = [lambda o: dataclasses.replace(o, version=rng.choice(["v1.30.0", "v1.31.1"])),
                    lambda o: dataclasses.replace(o, replicas=rng.choice([None, 0, 1, 3, 5]))]
    return rng.choice([*common, *specific])(obj)


class Reference:
    """Every update re-evaluates the groups it touches, without shortcuts: what the pipeline must match."""

    def __init__(self) -> None:
        self.index = FleetIndex()
        self.dirty: set[GroupKey] = set()
        self.previous: dict[ObjectKey, Result] = {}
        self.members: dict[GroupKey, list[ObjectKey]] = {}

    def upsert(self, obj: Base) -> None:
        self.dirty |= self.index.put(obj)

    def delete(self, key: ObjectKey) -> None:
        self.dirty |= self.index.remove(key)

    def evaluate(self, now: float) -> None:
        for key in sorted(g for g in self.dirty if g[0] != "none"):
            group = self.index.build(key)
            old = self.members.pop(key, [])
            results = evaluate_group(group, self.previous, now) if group is not None else []
            for r in results:
                self.previous[r.key] = r
            self.members[key] = [r.key for r in results]
            for k in set(old) - set(self.members[key]):
                del self.previous[k]
        self.dirty = set()


def _all_keys(index: FleetIndex) -> Iterator[ObjectKey]:
    for kind in index.count_by_kind():
        yield from index.keys_of_kind(kind)


def lines(body: bytes, *, without_transition_times: bool = False) -> list[bytes]:
    out = sorted(line for line in body.split(b"\n") if line)
    if without_transition_times:
        out = [line for line in out if b"_last_transition_time" not in line]
    return out


def run(
    fleet: list[Base], *, steps: int, seed: int, clock: bool = False, check_every: int = 10,
    store: Store | None = None,
) -> list[str]:
    """Apply random changes; return what differed (empty when the pipeline matched throughout)."""
    rng = random.Random(seed)
    store = store if store is not None else Store(export_only=export_only_change)
    renderer = Renderer()
    pipeline = Pipeline(store, FilteringSink(store), renderer, ExporterStats(), lambda _key: True)
    reference = Reference()
    loop = asyncio.new_event_loop()
    now = NOW
    pipeline.clock = lambda: now
    problems: list[str] = []

    def settle() -> None:
        groups, exported = store.take_dirty(), store.take_exported()
        loop.run_until_complete(pipeline.run_pass(groups, exported))
        reference.evaluate(now)

    def compare(step: int, exposition: bool) -> None:
        # The pipeline keeps no bare Result (made again from the object; the exposition shows it).
        kept = {k: r for k, r in reference.previous.items() if not is_bare(r)}
        if pipeline.previous != kept:
            keys = sorted(k for k in pipeline.previous.keys() | kept.keys()
                          if pipeline.previous.get(k) != kept.get(k))
            problems.append(f"step {step}: Results differ for {keys[:5]}")
        if exposition:
            objects = [o for k in _all_keys(reference.index) if (o := reference.index.get(k)) is not None]
            expected = render_fleet(objects, reference.previous.values())
            if lines(renderer.render_body()) != lines(expected):
                problems.append(f"step {step}: exposition differs")

    for obj in fleet:
        store.upsert(obj)
        reference.upsert(obj)
    settle()
    deleted: list[Base] = []
    keys = sorted(o.key for o in fleet)
    for step in range(steps):
        for _ in range(rng.choice([1, 1, 1, 2, 3])):  # several updates in one pass, sometimes
            key = rng.choice(keys)
            current = store.get(key)
            roll = rng.random()
            if current is None:
                if deleted and roll < 0.5:
                    back = deleted.pop(rng.randrange(len(deleted)))
                    store.upsert(back)
                    reference.upsert(back)
                continue
            if clock:
                # Only changes that make both sides evaluate: with the clock moving, a group left
                # alone (an equal or export-only update) keeps its Results until the next resync.
                new = rule_read_change(current, rng, now)
                if new == current:
                    continue
            elif roll < 0.03:
                store.delete(*key)
                reference.delete(key)
                deleted.append(current)
                continue
            elif roll < 0.13:
                new = dataclasses.replace(current)  # equal, not the same object
            elif isinstance(current, Machine) and roll < 0.63:
                new = export_only_changes(current, rng, now)
            else:
                new = rule_read_change(current, rng, now)
            store.upsert(new)
            reference.upsert(new)
        if clock:
            now += rng.choice([0.0, 5.0, 60.0, 400.0])
        settle()
        compare(step, exposition=step % check_every == 0 or step == steps - 1)
        if len(problems) > 3:
            break
    if not clock and not problems:
        objects = [o for k in _all_keys(reference.index) if (o := reference.index.get(k)) is not None]
        scratch = render_fleet(objects, evaluate_all(objects, now))
        # From scratch there is no history: computed transition times start at ``now`` where the
        # incremental run carried them over, so those samples alone may differ.
        if lines(renderer.render_body(), without_transition_times=True) != lines(
                scratch, without_transition_times=True):
            problems.append("exposition differs from a one-shot evaluation from scratch")
    loop.close()
    return problems


@pytest.fixture(scope="module")
def examples() -> list[Base]:
    return example_fleet()


@pytest.fixture(scope="module")
def bench() -> list[Base]:
    return benchmark_fleet()


# ---- the store ----------------------------------------------------------------------------------


def _machine(**changes: Any) -> Machine:
    meta = Meta(kind="Machine", api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name="m1", uid="u1")
    return dataclasses.replace(Machine(meta=meta, cluster_name="c1"), **changes)


def test_an_update_equal_to_the_stored_projection_marks_nothing() -> None:
    store = Store(export_only=export_only_change)
    store.upsert(_machine(node_name="n1"))
    store.take_dirty()
    generation = store.generation
    store.upsert(_machine(node_name="n1"))
    assert store.take_dirty() == set()
    assert store.take_exported() == {}
    assert store.generation == generation


def test_an_export_only_update_is_handed_over_for_rendering_not_evaluation() -> None:
    store = Store(export_only=export_only_change)
    store.upsert(_machine(certificates_expiry=1.0))
    store.take_dirty()
    store.upsert(_machine(certificates_expiry=2.0))
    assert store.take_dirty() == set()
    assert store.take_exported() == {("Machine", "ns", "m1"): ("capi", "ns", "c1")}
    stored = store.get(("Machine", "ns", "m1"))
    assert stored is not None and isinstance(stored, Machine) and stored.certificates_expiry == 2.0


def test_an_update_rules_read_dirties_the_group_and_supersedes_an_export_only_one() -> None:
    store = Store(export_only=export_only_change)
    store.upsert(_machine())
    store.take_dirty()
    store.upsert(_machine(certificates_expiry=2.0))
    store.upsert(_machine(certificates_expiry=2.0, node_name="n2"))
    assert store.take_dirty() == {("capi", "ns", "c1")}
    assert store.take_exported() == {}


def test_a_shard_filter_applies_to_export_only_updates() -> None:
    store = Store(keep=lambda g: g[2] != "c1", export_only=export_only_change)
    store.upsert(_machine())
    store.upsert(_machine(certificates_expiry=2.0))
    assert store.take_exported() == {}


# ---- the list of export-only fields -------------------------------------------------------------


def test_export_only_table_names_real_fields_only() -> None:
    with pytest.raises(ValueError):
        rule_inputs.compile_export_only({Machine: frozenset({"certificate_expiry"})})
    with pytest.raises(ValueError):
        rule_inputs.compile_export_only({Machine: frozenset({"meta.name"})})


def test_no_rule_module_reads_a_machine_only_export_field() -> None:
    """Fields only Machines have: an attribute access to one in a rule module is a read by a rule."""
    others = [c for c in vars(model).values()
              if isinstance(c, type) and issubclass(c, Base) and c is not Machine]
    own = {f.name for f in dataclasses.fields(Machine)} - {
        f.name for cls in others for f in dataclasses.fields(cls)}
    names = {n for n in rule_inputs.EXPORT_ONLY[Machine] if n in own}
    assert "certificates_expiry" in names
    engine = ROOT / "exporter" / "engine"
    for path in engine.glob("*.py"):
        if path.name.startswith("parse") or path.name in ("model.py", "rule_inputs.py"):
            continue
        read = {n.attr for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)}
        assert not read & names, f"{path.name} reads {sorted(read & names)}"


# ---- equivalence ----------------------------------------------------------------------------------


def test_incremental_matches_full_evaluation_on_the_example_fleet(examples: list[Base]) -> None:
    assert run(examples, steps=250, seed=1) == []


def test_incremental_matches_full_evaluation_on_the_benchmark_fleet(bench: list[Base]) -> None:
    assert run(bench, steps=200, seed=2) == []


@pytest.mark.parametrize("seed", [3, 4])
def test_reused_machine_results_follow_the_clock(examples: list[Base], bench: list[Base], seed: int) -> None:
    assert run(examples, steps=150, seed=seed, clock=True) == []
    assert run(bench, steps=100, seed=seed, clock=True) == []


def test_an_object_is_evaluated_alone_exactly_when_its_group_is_its_key(
    examples: list[Base], bench: list[Base]
) -> None:
    orphan = next(o for o in examples if isinstance(o, ManifestWork))
    orphan = dataclasses.replace(orphan, owner="")
    objects = [*examples, *bench, orphan]
    assert {o.key for o in objects if evaluated_alone(o)} == {o.key for o in objects if group_key(o) == o.key}
    assert evaluated_alone(orphan)


def test_objects_evaluated_alone_without_reading_the_clock_evaluate_the_same_later(
    examples: list[Base], bench: list[Base]
) -> None:
    # The periodic re-evaluation (Pipeline.clocked_groups) skips them.
    timeless = [o for o in [*examples, *bench]
                if group_key(o) == o.key and not rule_inputs.alone_reads_clock(o)]
    assert {o.meta.kind for o in timeless} >= {"DockerMachine", "KubeadmConfig", "ClusterResourceSet"}
    for o in timeless:
        assert not depends_on(o), o.key  # nor does a scope turning unreadable change them
        for later in (60.0, 3600.0, 40 * 86400.0):
            assert evaluate_all([o], NOW + later) == evaluate_all([o], NOW), o.key


@pytest.mark.parametrize("field", ["conditions", "phase", "node_name", "meta.deletion_timestamp", "layout",
                                   "meta.uid"])
def test_the_harness_catches_a_rule_read_field_listed_as_export_only(
    examples: list[Base], field: str
) -> None:
    table = rule_inputs.compile_export_only({Machine: rule_inputs.EXPORT_ONLY[Machine] | {field}})

    def wrong() -> Store:
        return Store(export_only=lambda old, new: rule_inputs.export_only_change(old, new, table))

    # Changes to the field now skip evaluation; the harness must notice that Results went stale.
    # Some fields matter to few example objects (node_name: only where the phase is not reported):
    # about one walk in four hits one, so the walks go on until one does.
    assert any(run(examples, steps=250, seed=seed, store=wrong()) for seed in range(1, 21))


@pytest.mark.pure_python
def test_the_harness_catches_reuse_that_ignores_the_clock(
    examples: list[Base], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evaluate_module, "machine_reads_clock", lambda *_: False)
    # Only walks that move the clock past a deleting or minReadySeconds Machine's threshold see it.
    assert any(run(examples, steps=150, seed=seed, clock=True) != [] for seed in range(1, 21))


# ---- transition times across passes ---------------------------------------------------------------


def _computed(result: Result, type_: str) -> Condition | None:
    return next((c for c in result.computed if c.type == type_), None)


def test_a_computed_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    """The pipeline hands the group's previous Results to the engine when it evaluates the group again."""
    store = Store(export_only=export_only_change)
    pipeline = Pipeline(store, FilteringSink(store), Renderer(), ExporterStats(), lambda _key: True)
    loop = asyncio.new_event_loop()
    clock = [NOW]
    pipeline.clock = lambda: clock[0]

    def settle() -> None:
        loop.run_until_complete(pipeline.run_pass(store.take_dirty(), store.take_exported()))

    store.upsert(_machine())  # reports nothing: Ready is computed, with no controller's time to take
    settle()
    ready = _computed(pipeline.previous[("Machine", "ns", "m1")], "Ready")
    assert ready is not None and ready.last_transition_time == NOW
    clock[0] = NOW + 600
    store.upsert(dataclasses.replace(_machine(), node_name="n1"))  # the group is evaluated again
    settle()
    again = _computed(pipeline.previous[("Machine", "ns", "m1")], "Ready")
    assert again is not None and again.status is ready.status and again.last_transition_time == NOW
    store.upsert(_machine(meta=dataclasses.replace(_machine().meta, uid="u2")))  # created again
    settle()
    fresh = _computed(pipeline.previous[("Machine", "ns", "m1")], "Ready")
    assert fresh is not None and fresh.last_transition_time == NOW + 600
    loop.close()


def test_a_result_keeps_the_tuple_of_computed_conditions_it_would_copy() -> None:
    obj = _machine()
    first = finish(obj, Computed(conditions=(Condition("Ready", Status.FALSE, "NotReady"),)), None, NOW)
    again = finish(obj, Computed(conditions=(Condition("Ready", Status.FALSE, "NotReady"),)), first, NOW + 60)
    assert again.computed is first.computed  # the previous Result's: every condition is its own
    changed = finish(obj, Computed(conditions=(Condition("Ready", Status.TRUE, "Ready"),)), first, NOW + 60)
    assert changed.computed[0] == Condition("Ready", Status.TRUE, "Ready", "", NOW + 60)
    timed = (Condition("Ready", Status.TRUE, "Ready", "", NOW - 5),)
    assert finish(obj, Computed(conditions=timed), changed, NOW).computed is timed  # the rules' own


@pytest.mark.pure_python
def test_the_harness_catches_owner_reuse_that_misses_an_input(
    examples: list[Base], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner's inputs without its Machines: a Machine's change no longer reaches its owners."""
    monkeypatch.setattr(evaluate_module, "owner_inputs",
                        lambda obj, view: (obj, view.cluster) if obj.meta.kind != "Cluster" else None)
    assert run(examples, steps=150, seed=1) != []


def _young_machine_group() -> CapiGroup:
    def meta(kind: str, name: str, **extra: Any) -> Meta:
        return Meta(kind=kind, api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name=name,
                    uid=f"uid-{name}", **extra)

    return CapiGroup(objects=(
        Cluster(meta=meta("Cluster", "c1"), cluster_name="c1"),
        MachineSet(meta=meta("MachineSet", "ms1"), cluster_name="c1", replicas=1),
        # Too young to have UpToDate: its MachineSet leaves it out of MachinesUpToDate for 10s.
        Machine(meta=meta("Machine", "m1", creation_timestamp=NOW - 5), cluster_name="c1", set_name="ms1"),
    ))


def _young_deployment_machine_group() -> CapiGroup:
    """A young Machine of a MachineDeployment: the engine judges its UpToDate from the templates,
    but it has not reported one, so its owners leave it out of MachinesUpToDate for 10s."""
    def meta(kind: str, name: str, **extra: Any) -> Meta:
        return Meta(kind=kind, api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name=name,
                    uid=f"uid-{name}", **extra)

    return CapiGroup(objects=(
        Cluster(meta=meta("Cluster", "c1"), cluster_name="c1"),
        MachineDeployment(meta=meta("MachineDeployment", "md1"), cluster_name="c1", replicas=1,
                          version="v1.30.0"),
        MachineSet(meta=meta("MachineSet", "ms1"), cluster_name="c1", replicas=1, deployment_name="md1",
                   version="v1.30.0"),
        Machine(meta=meta("Machine", "m1", creation_timestamp=NOW - 5), cluster_name="c1", set_name="ms1",
                deployment_name="md1"),
    ))


def _control_plane_with_a_fresh_issue_group() -> CapiGroup:
    """A KubeadmControlPlane whose second Machine's API server turned unhealthy 5s ago: Available
    holds, and names that Machine only once the issue is older than 10s."""
    def meta(kind: str, name: str, **extra: Any) -> Meta:
        return Meta(kind=kind, api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name=name,
                    uid=f"uid-{name}", **extra)

    def cp_machine(name: str, api: Status, since: float) -> Machine:
        conditions = (Condition("APIServerPodHealthy", api, "", "", since),
                      *(Condition(t, Status.TRUE, "", "", NOW - 600) for t in (
                          "ControllerManagerPodHealthy", "SchedulerPodHealthy", "EtcdPodHealthy",
                          "EtcdMemberHealthy")))
        return Machine(meta=meta("Machine", name, labels=MappingProxyType({
            "cluster.x-k8s.io/control-plane": "", "cluster.x-k8s.io/control-plane-name": "kcp1"})),
            cluster_name="c1", conditions=conditions, control_plane=True, control_plane_name="kcp1",
            provider_id=f"p-{name}", node_name=name)

    return CapiGroup(objects=(
        Cluster(meta=meta("Cluster", "c1"), cluster_name="c1"),
        KubeadmControlPlane(meta=meta("KubeadmControlPlane", "kcp1"), cluster_name="c1", replicas=2,
                            initialized=True,
                            conditions=(Condition("CertificatesAvailable", Status.TRUE, "Available"),)),
        cp_machine("m1", Status.TRUE, NOW - 600),
        cp_machine("m2", Status.FALSE, NOW - 5),
    ))


def _evaluated_later(group: CapiGroup) -> tuple[list[Result], list[Result]]:
    """(reusing the first evaluation's memo, from scratch) one minute later, with the same previous."""
    results, memo = evaluate_group_reusing(group, {}, NOW, None)
    previous = {r.key: r for r in results}
    later = NOW + 60
    return evaluate_group_reusing(group, previous, later, memo)[0], evaluate_group(group, previous, later)


def test_an_owner_is_evaluated_again_while_the_clock_matters_to_it() -> None:
    reused, fresh = _evaluated_later(_young_machine_group())
    assert reused == fresh


def test_an_owner_is_evaluated_again_while_its_young_machine_has_only_a_computed_up_to_date() -> None:
    reused, fresh = _evaluated_later(_young_deployment_machine_group())
    assert reused == fresh


def test_a_control_plane_is_evaluated_again_while_a_machine_issue_is_too_fresh_to_surface() -> None:
    reused, fresh = _evaluated_later(_control_plane_with_a_fresh_issue_group())
    assert reused == fresh
    available = _computed(next(r for r in fresh if r.kind == "KubeadmControlPlane"), "Available")
    assert available is not None
    assert available.message == "* 1 of 2 Machines has healthy control plane components, at least 1 required"


def test_an_owner_keeps_its_machines_and_what_they_computed_with_no_pair_for_each() -> None:
    kept = []
    for group in group_projections(example_fleet()):
        if isinstance(group, CapiGroup):
            _, memo = evaluate_group_reusing(group, {}, NOW, None)
            assert memo is not None
            kept += [inputs for inputs, _, _ in memo.owners.values() if isinstance(inputs[0], MachineSet)]
    assert any(len(inputs) > 3 for inputs in kept)
    for inputs in kept:
        machines, computed = inputs[3::2], inputs[4::2]
        assert all(isinstance(m, Machine) for m in machines)
        assert all(isinstance(c, Computed) for c in computed) and len(computed) == len(machines)


@pytest.mark.pure_python
def test_reuse_that_ignores_the_clock_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def ignoring_the_clock(obj: Base, view: Any) -> tuple[object, ...] | None:
        if not isinstance(obj, MachineSet):
            return None
        return (obj, view.cluster, *((m, view.computed(m.key)) for m in view.machines_of_set(obj)))

    monkeypatch.setattr(evaluate_module, "owner_inputs", ignoring_the_clock)
    reused, fresh = _evaluated_later(_young_machine_group())
    assert reused != fresh


def test_an_update_during_a_sliced_export_only_rendering_is_evaluated_by_the_next_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Export-only renderings yield between groups; what the source changes meanwhile still lands."""
    fleet = example_fleet()
    store, renderer, reference = Store(export_only=export_only_change), Renderer(), Reference()
    pipeline = Pipeline(store, FilteringSink(store), renderer, ExporterStats(), lambda _key: True)
    pipeline.clock = lambda: NOW
    monkeypatch.setattr(app_module, "TimeSlice", lambda: TimeSlice(0.0))  # yield after every group
    for obj in fleet:
        store.upsert(obj)
        reference.upsert(obj)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(pipeline.run_pass(store.take_dirty(), store.take_exported()))
    reference.evaluate(NOW)

    rng = random.Random(7)
    changed: dict[GroupKey, Machine] = {}
    for m in (o for o in fleet if isinstance(o, Machine)):
        new = dataclasses.replace(m, certificates_expiry=NOW + rng.randrange(1, 10**8))
        store.upsert(new)
        group = store.take_exported().get(new.key)
        if group is not None and group not in changed:
            changed[group] = new
            reference.upsert(new)
        else:
            store.upsert(m)  # back as it was: one export-only change per group
    assert len(changed) >= 2, "the example fleet has Machines in two groups"
    exported = {m.key: g for g, m in changed.items()}
    last = list(changed.values())[-1]
    flipped = dataclasses.replace(last, conditions=_flip(last.conditions, rng))

    async def interleaved() -> None:
        task = asyncio.create_task(pipeline.run_pass(set(), exported))
        await asyncio.sleep(0)  # the pass renders the first group, then gives way
        assert not task.done()
        store.upsert(flipped)  # the source, meanwhile: a change rules read, to a later Machine
        reference.upsert(flipped)
        await task
        await pipeline.run_pass(store.take_dirty(), store.take_exported())

    loop.run_until_complete(interleaved())
    loop.close()
    reference.evaluate(NOW)
    assert pipeline.previous == {k: r for k, r in reference.previous.items() if not is_bare(r)}
    objects = [o for k in _all_keys(reference.index) if (o := reference.index.get(k)) is not None]
    assert lines(renderer.render_body()) == lines(render_fleet(objects, reference.previous.values()))


def test_a_computed_condition_that_agrees_with_the_controllers_is_that_condition() -> None:
    """Equal but for observedGeneration: the Result holds the controller's condition object itself.

    (A computed condition with no time of its own takes the controller's when their statuses agree.)
    """
    from tests.benchmark.fleet import generate

    projections = [p for raw in generate(1, 5) if (p := project(raw)) is not None]
    by_key = {p.key: p for p in projections}
    shared = rebuilt = 0
    for result in evaluate_all(projections, NOW):
        obj = by_key[result.key]
        if not obj.has_v1beta2_conditions:
            continue
        reported = {c.type: c for c in reversed(obj.conditions)}
        for c in result.computed:
            r = reported.get(c.type)
            if r is None:
                continue
            if (r.status, r.reason, r.message, r.severity, r.last_transition_time) == (
                    c.status, c.reason, c.message, c.severity, c.last_transition_time):
                assert c is r
                shared += 1
            else:
                assert c is not r
                rebuilt += 1
    assert shared > 1000 and rebuilt > 0


def _moving_work(owner: str, rv: str) -> model.ManifestWork:
    meta = model.Meta(kind="ManifestWork", api_version="work.open-cluster-management.io/v1", namespace="c1",
                      name="w", uid="w-uid", resource_version=rv)
    return model.ManifestWork(meta=meta, owner=owner)


def _moving_machine(cluster: str, rv: str) -> Machine:
    meta = model.Meta(kind="Machine", api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name="m",
                      uid="m-uid", resource_version=rv)
    return Machine(meta=meta, cluster_name=cluster)


@pytest.mark.parametrize(("first", "then"), [
    (_moving_work("", "1"), _moving_work("apps.hello", "2")),  # an orphan ManifestWork is adopted by its MWRS
    (_moving_work("apps.hello", "1"), _moving_work("", "2")),  # and let go again
    (_moving_machine("a", "1"), _moving_machine("b", "2")),  # a Machine moves to a later Cluster
    (_moving_machine("b", "1"), _moving_machine("a", "2")),  # and back
], ids=["orphan-to-mwrs", "mwrs-to-orphan", "capi-a-to-b", "capi-b-to-a"])
def test_an_object_that_moves_to_another_group_stays_rendered(first: Base, then: Base) -> None:
    """Both groups are evaluated in the same pass, in either order: the one the object left must
    not take away what the one it joined rendered."""
    store = Store()
    pipeline = Pipeline(store, FilteringSink(store), Renderer(), ExporterStats(), lambda _key: True)
    pipeline.clock = lambda: 1_795_176_000.0
    mwrs = model.ManifestWorkReplicaSet(meta=model.Meta(
        kind="ManifestWorkReplicaSet", api_version="work.open-cluster-management.io/v1alpha1",
        namespace="apps", name="hello", uid="hello-uid"))
    store.upsert(mwrs)
    for obj in (first, then):
        store.upsert(obj)
        asyncio.run(pipeline.run_pass(store.take_dirty(), store.take_exported()))
        expected = {r.key: r for r in evaluate_all([mwrs, obj], 1_795_176_000.0)}
        assert pipeline.previous == expected
        assert set(pipeline.renderer._entries) == set(expected)


def test_an_export_only_change_leaves_no_older_projection_in_the_memo(bench: list[Base]) -> None:
    """The pipeline renders such a change without evaluating the group; the memo then holds the
    stored projection, not the one it was evaluated from (which it kept alive beside it)."""
    store = Store(export_only=export_only_change)
    pipeline = Pipeline(store, FilteringSink(store), Renderer(), ExporterStats(), lambda _key: True)
    pipeline.clock = lambda: NOW
    for obj in bench:
        store.upsert(obj)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(pipeline.run_pass(store.take_dirty(), store.take_exported()))
    machine = next(o for o in bench if isinstance(o, Machine) and o.meta.owner_refs)
    group = group_key(machine)
    memo = pipeline._memos[group]
    assert memo.machines[machine.key][0] is machine
    assert any(machine in inputs for inputs, _, _ in memo.owners.values())

    newer = dataclasses.replace(machine, certificates_expiry=NOW + 86_400)
    store.upsert(newer)
    assert store.take_dirty() == set()
    loop.run_until_complete(pipeline.run_pass(set(), store.take_exported()))
    loop.close()

    memo = pipeline._memos[group]
    assert memo.machines[machine.key][0] is newer
    assert not any(any(x is machine for x in inputs) for inputs, _, _ in memo.owners.values())
    assert any(any(x is newer for x in inputs) for inputs, _, _ in memo.owners.values())


def test_a_memo_keeps_its_projection_when_the_new_one_differs_in_a_field_rules_read(
        bench: list[Base]) -> None:
    group = next(g for g in group_projections(bench) if isinstance(g, CapiGroup))
    _, memo = evaluate_group_reusing(group, {}, NOW, None)
    assert memo is not None
    machine = next(iter(memo.machines.values()))[0]
    assert isinstance(machine, Machine)
    # Updated again after the store took the change as export-only: the group is dirty again.
    renamed = dataclasses.replace(machine, node_name="another-node")
    assert not export_only_change(machine, renamed)
    assert evaluate_module.memo_seeing(memo, [renamed]) is memo
