"""A computed value that depends on a kind the exporter cannot read is not published as fact.

When the source may not read a kind (403, 404: ``resource_unreadable``), the engine is told which
(kind, namespace) pairs are unreadable: every condition an object's rules compute over that kind
becomes Unknown with reason ``InputsUnreadable`` (or is left to the controller's reported one),
the counters computed from it are withheld, and an ``InputsUnreadable`` finding names the kinds.
"""

from __future__ import annotations

from pathlib import Path

from exporter.engine.evaluate import evaluate_all, evaluate_group
from exporter.engine.evaluate_types import CapiGroup, MwrsGroup
from exporter.engine.model import Base, Result, Status
from exporter.engine.visibility import INPUTS_UNREADABLE
from exporter.metrics.reasons import bounded_reason
from tests.engine.builders import (
    NOW,
    T,
    capi_cluster,
    cond,
    healthy_machine_conditions,
    machine,
    machine_deployment,
    machine_set,
    manifest_work,
    mwrs,
    summary,
    work_conditions,
)


def fleet(with_sets: bool = True) -> list[Base]:
    """A Cluster with a MachineDeployment of 3 replicas, all there: nothing is scaling."""
    objs: list[Base] = [capi_cluster(), machine_deployment("md1", 3)]
    if with_sets:
        objs.append(machine_set("ms1", 3, deployment_name="md1"))
    objs += [machine(f"m{i}", healthy_machine_conditions(), set_name="ms1", deployment_name="md1")
             for i in range(3)]
    return objs


def by_kind(results: list[Result], kind: str) -> Result:
    (result,) = [r for r in results if r.kind == kind]
    return result


def computed(result: Result, type_: str) -> tuple[Status, str] | None:
    for c in result.computed:
        if c.type == type_:
            return c.status, c.reason
    return None


def test_full_view_is_not_scaling() -> None:
    md = by_kind(evaluate_all(fleet(), NOW), "MachineDeployment")
    assert computed(md, "ScalingUp") == (Status.FALSE, "NotScalingUp")
    assert md.counters["replicas"] == 3


def test_unreadable_machinesets_withhold_what_is_computed_over_them() -> None:
    # Without being told, the partial view reads as an empty kind: ScalingUp True, 0 replicas.
    blind = by_kind(evaluate_all(fleet(with_sets=False), NOW), "MachineDeployment")
    assert computed(blind, "ScalingUp") == (Status.TRUE, "ScalingUp")

    results = evaluate_all(fleet(with_sets=False), NOW, unreadable={("MachineSet", "")})
    md = by_kind(results, "MachineDeployment")
    for type_ in ("ScalingUp", "ScalingDown", "Available", "RollingOut", "MachinesReady"):
        assert computed(md, type_) == (Status.UNKNOWN, INPUTS_UNREADABLE), type_
    assert computed(md, "Paused") == (Status.FALSE, "NotPaused")  # the object's own: still a fact
    scaling = next(c for c in md.computed if c.type == "ScalingUp")
    assert "MachineSet" in scaling.message
    assert dict(md.counters) == {"desiredReplicas": 3}  # replicas & co. absent, not 0
    assert [(f.code, f.severity) for f in md.findings] == [(INPUTS_UNREADABLE, "warning")]
    assert md.phase is None
    cluster = by_kind(results, "Cluster")  # aggregates over MachineDeployments and MachineSets
    assert computed(cluster, "ScalingUp") == (Status.UNKNOWN, INPUTS_UNREADABLE)
    assert computed(cluster, "Paused") == (Status.FALSE, "NotPaused")
    # Machines do not depend on MachineSets: computed as usual.
    machines = [r for r in results if r.kind == "Machine"]
    assert machines and all(not r.findings for r in machines)
    assert bounded_reason("ScalingUp", INPUTS_UNREADABLE, computed=True) == INPUTS_UNREADABLE


def test_unreadable_in_another_namespace_changes_nothing() -> None:
    results = evaluate_all(fleet(), NOW, unreadable={("MachineSet", "elsewhere")})
    md = by_kind(results, "MachineDeployment")
    assert computed(md, "ScalingUp") == (Status.FALSE, "NotScalingUp") and not md.findings
    scoped = evaluate_all(fleet(with_sets=False), NOW, unreadable={("MachineSet", "ns")})
    assert computed(by_kind(scoped, "MachineDeployment"), "ScalingUp") == (Status.UNKNOWN, INPUTS_UNREADABLE)


def test_a_reported_condition_stays_effective_and_is_not_flagged_as_a_mismatch() -> None:
    from dataclasses import replace

    objs = fleet(with_sets=False)
    md = machine_deployment("md1", 3)
    objs[1] = replace(md, conditions=(cond("ScalingUp", Status.FALSE, "NotScalingUp"),))
    results = evaluate_all(objs, NOW, unreadable={("MachineSet", "")})
    result = by_kind(results, "MachineDeployment")
    assert computed(result, "ScalingUp") is None  # the controller's says it; nothing to compare
    assert computed(result, "Available") == (Status.UNKNOWN, INPUTS_UNREADABLE)


def test_unreadable_machines_reach_every_owner() -> None:
    objs = [capi_cluster(), machine_deployment("md1", 3), machine_set("ms1", 3, deployment_name="md1")]
    results = evaluate_group(CapiGroup(objects=tuple(objs)), {}, NOW, {("Machine", "")})
    for kind in ("MachineSet", "MachineDeployment", "Cluster"):
        assert computed(by_kind(results, kind), "MachinesReady" if kind != "Cluster" else
                        "WorkerMachinesReady") == (Status.UNKNOWN, INPUTS_UNREADABLE), kind


def test_unreadable_manifestworks_withhold_the_mwrs_rollout() -> None:
    work = manifest_work("c1", work_conditions(applied=T))
    group = MwrsGroup(mwrs=mwrs(summary(1, 1, 1, 0)), manifest_works=(work,))
    full = evaluate_group(group, {}, NOW)
    partial = evaluate_group(group, {}, NOW, {("ManifestWork", "c2")})  # any namespace counts
    (before,) = [r for r in full if r.kind == "ManifestWorkReplicaSet"]
    (after,) = [r for r in partial if r.kind == "ManifestWorkReplicaSet"]
    assert computed(before, "Progressing") is not None
    assert computed(after, "Progressing") == (Status.UNKNOWN, INPUTS_UNREADABLE)
    assert [f.code for f in after.findings] == [INPUTS_UNREADABLE]


async def test_the_kube_source_names_the_scopes_it_may_not_read(tmp_path: Path) -> None:
    from tests.kubeapi import CAPI_TYPES
    from tests.kubeapi.fixtures import eventually, make_env, obj

    env = await make_env(tmp_path)
    try:
        env.api.install(*CAPI_TYPES)
        env.api.create(obj("MachineSet", "ms1"))
        env.api.create(obj("Machine", "m1", ns="ns2"))
        env.api.fail("MachineSet", 403)
        env.api.fail("Machine", 403, namespace="ns2")
        source = await env.start_source(namespaces=("ns1", "ns2"))
        await eventually(source.all_synced)
        assert source.unreadable() == {("MachineSet", "ns1"), ("MachineSet", "ns2"), ("Machine", "ns2")}
        env.api.clear_faults()  # granted: readable again at the next retry
        await eventually(lambda: not source.unreadable(), what="readable again")
    finally:
        await env.close()
