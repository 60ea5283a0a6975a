"""The renderer: per-object fragments, effective conditions, contiguous families, bucket cache reuse,
buckets filled in arrival order, gzip members, rounds (what a scrape serves is one moment), removal."""

from __future__ import annotations

import gzip
import zlib
from dataclasses import replace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.engine.model import (
    Condition,
    Finding,
    InfraObject,
    Machine,
    MachineDeployment,
    ManagedCluster,
    Meta,
    Result,
    Status,
    bare_result,
)
from exporter.metrics import exposition
from exporter.metrics.members import rebuild
from exporter.metrics.renderer import Rebuild, Renderer, render_fleet

T, F, U = Status.TRUE, Status.FALSE, Status.UNKNOWN
GROUP = ("capi", "ns", "c1")


def gzip_body(renderer: Renderer) -> bytes:
    """The body as a gzip stream of members, as a scrape takes it: a round, then what it publishes."""
    return b"".join(renderer.publish_here().gzip_parts())


def built(rebuilds: list[Rebuild]) -> list[Rebuild]:
    """The rebuilds of a round done here, as the worker would do them."""
    for r in rebuilds:
        r.done(rebuild(r.job()))
    return rebuilds


def machine(name: str = "m1", *, layout: str = "v1beta2", version: str = "v1.30.0") -> Machine:
    return Machine(
        meta=Meta(kind="Machine", api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name=name,
                  uid=f"uid-{name}", creation_timestamp=1_700_000_000.0),
        cluster_name="c1", layout=layout, version=version, phase="Running", node_name=f"node-{name}",
        addresses=("InternalIP", "10.0.0.1", "Hostname", name),
    )


def result(obj, *, reported=(), computed=(), counters=None, findings=(), phase=None) -> Result:
    return Result(key=obj.key, api_version=obj.meta.api_version, uid=obj.meta.uid,
                  cluster_name=obj.cluster_name, reported=tuple(reported), computed=tuple(computed),
                  counters=counters or {}, phase=phase, findings=tuple(findings), layout=obj.layout)


def samples(body: bytes) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(body: bytes, metric: str, **labels: str) -> float | None:
    for (n, ls), v in samples(body).items():
        if n == metric and set(labels.items()) <= ls:
            return v
    return None


def test_effective_condition_is_the_reported_one_else_the_computed_one():
    m = machine()
    r = result(m, reported=[Condition("Ready", F, "NotReady")],
               computed=[Condition("Ready", T, "Ready"),
                         Condition("Available", F, "NotReady", "", 1_700_000_100.0)])
    body = render_fleet([m], [r])
    assert value(body, "capi_machine_status_condition", type="Ready", status="False") == 1
    assert value(body, "capi_machine_status_condition", type="Ready", status="True") == 0
    assert value(body, "capi_machine_status_condition", type="Available", status="False") == 1
    assert value(body, "capi_machine_status_condition_computed", type="Ready") is None
    assert value(body, "capi_machine_status_condition_computed", type="Available") == 1
    assert value(body, "capi_machine_status_condition_mismatch", type="Ready") == 1
    assert value(body, "capi_machine_status_condition_mismatch", type="Available") is None
    assert value(body, "capi_machine_status_condition_reason", type="Ready", reason="NotReady") == 1
    assert value(body, "capi_machine_status_condition_last_transition_time", type="Available",
                 status="False") == 1_700_000_100.0


def test_v1beta1_conditions_never_count_as_effective():
    m = machine(layout="v1beta1")
    r = result(m, reported=[Condition("Ready", T, "")], computed=[Condition("Ready", F, "NotReady")])
    body = render_fleet([m], [r])
    assert value(body, "capi_machine_status_condition", type="Ready", status="False") == 1
    assert value(body, "capi_machine_status_condition_computed", type="Ready") == 1


def test_identity_labels_and_ksm_families():
    m = machine()
    body = render_fleet([m], [result(m, phase="Running")])
    ident = {"name": "m1", "namespace": "ns", "uid": "uid-m1", "cluster_name": "c1"}
    assert value(body, "capi_machine_info", version="v1.30.0", **ident) == 1
    assert value(body, "capi_machine_status_phase", phase="Running", **ident) == 1
    assert value(body, "capi_machine_status_phase", phase="Deleting", **ident) == 0
    assert value(body, "capi_machine_status_noderef", node_name="node-m1") == 1
    assert value(body, "capi_machine_addresses", address="10.0.0.1", type="InternalIP") == 1
    assert value(body, "capi_machine_created") == 1_700_000_000


def test_unset_counters_are_absent_not_zero():
    md = MachineDeployment(meta=Meta(kind="MachineDeployment", api_version="cluster.x-k8s.io/v1beta2",
                                     namespace="ns", name="md1"), cluster_name="c1", replicas=None)
    body = render_fleet([md], [result(md, counters={"replicas": 3, "readyReplicas": None})])
    assert value(body, "capi_machinedeployment_status_replicas") == 3
    assert value(body, "capi_machinedeployment_status_replicas_ready") is None
    assert value(body, "capi_machinedeployment_spec_replicas") is None


def test_findings_count_per_code_and_bounded_reasons():
    m = machine()
    r = result(m, reported=[Condition("Ready", F, "free text from a provider")],
               findings=[Finding("MalformedField", "a"), Finding("MalformedField", "b")])
    body = render_fleet([m], [r])
    assert value(body, "capi_finding", kind="Machine", code="MalformedField", severity="warning") == 2
    assert value(body, "capi_machine_status_condition_reason", type="Ready", reason="Other") == 1


def test_label_values_are_escaped():
    m = replace(machine(), version='v1 "quoted" \\ back\nline')
    body = render_fleet([m], [result(m)])
    assert value(body, "capi_machine_info", version='v1 "quoted" \\ back\nline') == 1


def test_families_are_contiguous_with_one_header_each():
    renderer = Renderer()
    objs = [machine(f"m{i}") for i in range(3)]
    for i, m in enumerate(objs):
        renderer.update_group(("capi", "ns", f"c{i}"), [(m, result(m, phase="Running"))])
    body = renderer.render_body().decode()
    current, finished = None, set()
    for line in body.splitlines():
        if line.startswith("# HELP"):
            name = line.split()[2]
            assert name not in finished, f"{name} has two header blocks"
            if current:
                finished.add(current)
            current = name
        elif not line.startswith("#"):
            assert line.split("{")[0].split(" ")[0] == current, line
    assert body.count("# TYPE capi_machine_info gauge") == 1


def test_unchanged_objects_are_not_rendered_again_and_buckets_are_reused():
    renderer = Renderer()
    m = machine()
    r = result(m, phase="Running")
    renderer.update_group(GROUP, [(m, r)])
    first = renderer.render_body()
    gzip_body(renderer)
    renderer.update_group(GROUP, [(m, r)])
    assert renderer.renders == 1
    assert renderer.take_round() == [], "every family is served from the cache"
    assert renderer.render_body() == first


def fleet(renderer: Renderer, n: int) -> list[Machine]:
    objs = [machine(f"m{i}") for i in range(n)]
    renderer.update_group(GROUP, [(m, result(m, phase="Running")) for m in objs])
    return objs


def lines(body: bytes) -> list[bytes]:
    return sorted(body.splitlines())


def test_buckets_fill_up_to_bucket_bytes_and_deletions_leave_room_for_new_objects():
    small, one = Renderer(bucket_bytes=2048), Renderer(bucket_bytes=1 << 30)
    objs = fleet(small, 200)
    fleet(one, 200)
    assert lines(small.render_body()) == lines(one.render_body())
    assert gzip.decompress(gzip_body(small)) == small.render_body()
    info = small._families[small._index["capi_machine_info"]]
    body = small.render_body().splitlines(keepends=True)
    line = max(len(t) for t in body if t.startswith(b"capi_machine_info"))
    assert all(2048 <= b.size < 2048 + line for b in info.buckets[:-1]), "full, one object over at most"
    assert len(info.buckets) <= -(-info.size // 2048)
    assert small.buckets() > one.buckets() == len(one.publish_here().families)
    buckets = len(info.buckets)
    keep = objs[:50]
    small.update_group(GROUP, [(m, result(m, phase="Running")) for m in keep])
    one.update_group(GROUP, [(m, result(m, phase="Running")) for m in keep])
    assert lines(small.render_body()) == lines(one.render_body())
    more = [machine(f"n{i}") for i in range(150)]
    small.update_group(GROUP, [(m, result(m, phase="Running")) for m in keep + more])
    one.update_group(GROUP, [(m, result(m, phase="Running")) for m in keep + more])
    assert lines(small.render_body()) == lines(one.render_body())
    assert len(info.buckets) <= buckets + 1, "new objects refill emptied buckets"
    assert gzip.decompress(gzip_body(small)) == small.render_body()


def test_a_change_rebuilds_only_the_buckets_of_the_changed_object():
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 200)
    gzip_body(renderer)
    changed = replace(objs[7], version="v1.31.0")
    renderer.update_group(GROUP, [(changed, result(changed, phase="Running")), *(
        (m, result(m, phase="Running")) for m in objs if m is not objs[7])])
    dirty = renderer.take_round()
    assert dirty, "the changed object's buckets must be rebuilt"
    assert len(dirty) < renderer.buckets() // 4, "only the changed object's buckets are dirty"
    assert all(set(r.job()[3]) == {renderer._entries[changed.key].id} for r in dirty)
    renderer.finish_round(built(dirty))
    assert renderer.take_round() == [], "every family cached again"


def test_what_a_scrape_serves_is_never_changed_by_later_changes():
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 100)
    published = renderer.publish_here()
    before = b"".join(published.texts())
    assert len(before) == published.size
    changed = replace(objs[3], version="v1.31.0")
    renderer.update_group(GROUP, [(changed, result(changed, phase="Running")), *(
        (m, result(m, phase="Running")) for m in objs[4:])])  # drops m0..m2
    renderer.publish_here()  # the next round replaces the changed buckets' bases
    assert b"".join(published.texts()) == before, "published members are never mutated"
    body = renderer.render_body()
    assert value(body, "capi_machine_info", name="m3", version="v1.31.0") == 1
    assert b'name="m0"' not in body and b'name="m0"' in before
    assert gzip.decompress(gzip_body(renderer)) == body


def test_changes_during_a_round_wait_for_the_next_one():
    renderer = Renderer(bucket_bytes=1 << 30)
    objs = fleet(renderer, 20)
    rebuilds = renderer.take_round()  # everything pending: the first round compresses it all
    m5 = replace(objs[5], version="v1.31.0")
    renderer.update_group(GROUP, [(m5, result(m5, phase="Running")), *(
        (m, result(m, phase="Running")) for m in objs if m is not objs[5])])
    renderer.finish_round(built(rebuilds))
    old = b"".join(renderer.published().texts())
    assert value(old, "capi_machine_info", name="m5", version="v1.30.0") == 1, "the round's moment"
    info = renderer._families[renderer._index["capi_machine_info"]].buckets[0]
    m5_id = renderer._entries[m5.key].id
    assert set(info.pending) == {m5_id}, "the later change waits"
    assert info.pending_bytes == len(info.pending[m5_id] or b"")
    body = renderer.render_body()
    assert value(body, "capi_machine_info", name="m5", version="v1.31.0") == 1
    assert len(lines(body)) == len(lines(old))
    assert renderer.pending_bytes == 0 and not renderer._dirty


def test_an_abandoned_round_gives_its_pending_lines_back_and_later_ones_win():
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 50)
    gzip_body(renderer)
    first = replace(objs[1], version="v1.31.0")
    renderer.update_objects(GROUP, [(first, result(first, phase="Running"))])
    rebuilds = renderer.take_round()
    assert rebuilds and renderer.pending_bytes == 0
    later = replace(objs[1], version="v1.32.0")
    other = replace(objs[2], version="v1.33.0")
    renderer.update_objects(GROUP, [(later, result(later, phase="Running")),
                                    (other, result(other, phase="Running"))])
    renderer.abandon_round(rebuilds)
    assert renderer.pending_bytes == sum(b.pending_bytes for b in renderer._dirty)
    body = renderer.render_body()
    assert value(body, "capi_machine_info", name="m1", version="v1.32.0") == 1
    assert value(body, "capi_machine_info", name="m1", version="v1.31.0") is None
    assert value(body, "capi_machine_info", name="m2", version="v1.33.0") == 1


def test_an_installed_rebuild_lets_go_of_what_it_took_and_built():
    # A round lists its rebuilds to its end; installed ones must not keep the members they replace.
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 50)
    gzip_body(renderer)
    renderer.update_objects(GROUP, [(replace(m, version="v1.31.0"), result(m, phase="Running"))
                                    for m in objs])
    first, *rest = built(renderer.take_round())
    assert first.job()[0] and first.job()[3] and first.built is not None
    renderer.finish_round([first])
    assert first.built is None and first.job()[0] == b"" and not first.job()[3]
    assert all(r.built is not None and r.job()[3] for r in rest), "the others are not installed yet"
    renderer.finish_round(rest)
    assert gzip.decompress(gzip_body(renderer)) == renderer.render_body()


def test_the_heaviest_buckets_go_first():
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 300)
    gzip_body(renderer)
    renderer.update_objects(GROUP, [(replace(m, version="v1.31.0"), result(m, phase="Running"))
                                    for m in objs[::7]])
    heaviest = max(b.pending_bytes for b in renderer._dirty)
    (one,) = renderer.take_heaviest(1)
    assert one.carried - len(one.job()[0]) == heaviest
    renderer.finish_round(built([one]))
    assert renderer.pending_bytes > 0
    assert gzip.decompress(gzip_body(renderer)) == renderer.render_body()


def test_raw_text_is_joined_one_bucket_at_a_time():
    renderer = Renderer(bucket_bytes=2048)
    fleet(renderer, 200)
    published = renderer.publish_here()
    texts = published.texts()
    first = [next(texts) for _ in range(3)]
    assert all(len(t) < 4 * 2048 for t in first), "a bucket's text, not the body"
    assert sum(map(len, first)) + sum(map(len, texts)) == published.size


def members(data: bytes) -> list[bytes]:
    """Decode a gzip stream member by member, as a multistream reader does."""
    out = []
    while data:
        d = zlib.decompressobj(wbits=31)
        out.append(d.decompress(data))
        assert d.eof, "every member must be complete"
        data = d.unused_data
    return out


def test_gzip_body_is_a_stream_of_members_that_decodes_to_the_raw_body():
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 100)
    for _ in range(2):  # cold, then from the cache
        raw, gz = renderer.render_body(), gzip_body(renderer)
        assert gzip.decompress(gz) == raw
        decoded = members(gz)
        headers = len(renderer.publish_here().families)
        assert len(decoded) == headers + renderer.buckets(), "one member per header and per bucket"
        assert b"".join(decoded) == raw
    changed = replace(objs[0], version="v1.31.0")
    renderer.update_group(GROUP, [(changed, result(changed, phase="Running")), *(
        (m, result(m, phase="Running")) for m in objs[1:])])
    gz = gzip_body(renderer)
    assert gzip.decompress(gz) == renderer.render_body()
    assert value(gzip.decompress(gz), "capi_machine_info", name="m0", version="v1.31.0") == 1


def test_a_round_serves_the_versions_it_was_taken_with_and_later_ones_after_it():
    renderer = Renderer()
    m = machine()
    renderer.update_group(GROUP, [(m, result(m, phase="Running"))])
    rebuilds = renderer.take_round()
    newer = replace(m, version="v1.31.0")
    renderer.update_group(GROUP, [(newer, result(newer, phase="Deleting"))])
    renderer.finish_round(built(rebuilds))
    old = b"".join(renderer.published().texts())
    assert value(old, "capi_machine_info", name="m1", version="v1.30.0") == 1
    assert value(old, "capi_machine_status_phase", name="m1", phase="Running") == 1
    assert gzip.decompress(b"".join(renderer.published().gzip_parts())) == old
    body = renderer.render_body()
    assert value(body, "capi_machine_info", name="m1", version="v1.31.0") == 1
    assert value(body, "capi_machine_info", name="m1", version="v1.30.0") is None
    assert value(body, "capi_machine_status_phase", name="m1", phase="Deleting") == 1


def test_changed_object_replaces_its_lines_and_removed_object_vanishes():
    renderer = Renderer()
    m1, m2 = machine("m1"), machine("m2")
    renderer.update_group(GROUP, [(m1, result(m1, phase="Running")), (m2, result(m2, phase="Running"))])
    renderer.render_body()
    m1b = replace(m1, version="v1.31.0")
    renderer.update_group(GROUP, [(m1b, result(m1b, phase="Deleting"))])
    body = renderer.render_body()
    assert value(body, "capi_machine_info", name="m1", version="v1.31.0") == 1
    assert value(body, "capi_machine_info", name="m1", version="v1.30.0") is None
    assert value(body, "capi_machine_status_phase", name="m1", phase="Deleting") == 1
    assert b'name="m2"' not in body
    renderer.remove_group(GROUP)
    assert b"capi_machine" not in renderer.render_body()
    assert len(renderer) == 0


def test_object_evaluated_without_rules_renders_its_reported_conditions():
    mc = ManagedCluster(meta=Meta(kind="ManagedCluster", api_version="cluster.open-cluster-management.io/v1",
                                  namespace="", name="spoke1", uid="u1"),
                        conditions=(Condition("ManagedClusterConditionAvailable", U,
                                              "ManagedClusterLeaseUpdateStopped"),))
    from exporter.engine.evaluate import evaluate_all

    body = render_fleet([mc], evaluate_all([mc], 0.0))
    assert value(body, "ocm_managedcluster_status_condition", name="spoke1",
                 type="ManagedClusterConditionAvailable", status="Unknown") == 1
    assert value(body, "ocm_managedcluster_info", name="spoke1", uid="u1") == 1


def test_managedcluster_inventory_families():
    meta = Meta(kind="ManagedCluster", api_version="cluster.open-cluster-management.io/v1",
                namespace="", name="spoke1", uid="u1")
    mc = ManagedCluster(meta=meta, kubernetes_version="v1.32.1", cluster_id="id1", platform="AWS",
                        product="EKS", region="eu-west-1", capacity_cpu=24.0, capacity_memory=2.0**30,
                        allocatable_cpu=23.5)
    from exporter.engine.evaluate import evaluate_all

    body = render_fleet([mc], evaluate_all([mc], 0.0))
    assert value(body, "ocm_managedcluster_info", name="spoke1", kubernetes_version="v1.32.1",
                 cluster_id="id1", platform="AWS", product="EKS", region="eu-west-1") == 1
    assert value(body, "ocm_managedcluster_status_capacity", resource="cpu", unit="core") == 24.0
    assert value(body, "ocm_managedcluster_status_capacity", resource="memory", unit="byte") == 2.0**30
    assert value(body, "ocm_managedcluster_status_allocatable", resource="cpu", unit="core") == 23.5
    # an unreported quantity has no series, not a zero
    assert value(body, "ocm_managedcluster_status_allocatable", resource="memory") is None
    bare = replace(mc, kubernetes_version="", platform="", capacity_cpu=None, capacity_memory=None,
                   allocatable_cpu=None)
    body = render_fleet([bare], evaluate_all([bare], 0.0))
    assert value(body, "ocm_managedcluster_info", name="spoke1", kubernetes_version="", platform="") == 1
    assert b"ocm_managedcluster_status_capacity{" not in body


def test_update_objects_renders_the_given_members_and_keeps_the_others():
    renderer = Renderer()
    m1, m2 = machine("m1"), machine("m2")
    renderer.update_group(GROUP, [(m1, result(m1, phase="Running")), (m2, result(m2, phase="Running"))])
    renders = renderer.renders
    m1b = replace(m1, version="v1.31.0")
    assert renderer.update_objects(GROUP, [(m1b, result(m1b, phase="Running"))])
    assert renderer.renders == renders + 1  # m2 was neither rendered nor compared
    body = renderer.render_body()
    assert value(body, "capi_machine_info", name="m1", version="v1.31.0") == 1
    assert value(body, "capi_machine_info", name="m2", version="v1.30.0") == 1


def test_update_objects_refuses_an_object_the_group_does_not_hold():
    renderer = Renderer()
    m1, stranger = machine("m1"), machine("m9")
    renderer.update_group(GROUP, [(m1, result(m1, phase="Running"))])
    before = renderer.render_body()
    newer = replace(m1, version="v1.31.0")
    assert not renderer.update_objects(GROUP, [(newer, result(newer, phase="Running")),
                                               (stranger, result(stranger, phase="Running"))])
    assert renderer.render_body() == before  # nothing changed, not even the member
    assert not renderer.update_objects(("capi", "ns", "other"), [(m1, result(m1, phase="Running"))])


def test_a_change_to_one_side_gives_the_lines_a_fresh_rendering_gives():
    # Only the families that read the changed side (object or Result) are rendered again.
    m = machine()
    r = result(m, reported=[Condition("Ready", T, "Ready", last_transition_time=1.0)], phase="Running")
    renderer = Renderer()
    renderer.update_group(GROUP, [(m, r)])
    steps = [
        (replace(m, certificates_expiry=2_000_000_000.0, version="v1.31.0"), r),  # object only
        (None, result(m, reported=[Condition("Ready", F, "NotReady", last_transition_time=2.0)],
                      phase="Running")),  # Result only
        (replace(m, meta=replace(m.meta, uid="uid-other")), None),  # identity changed
    ]
    obj, res = m, r
    for new_obj, new_res in steps:
        obj, res = new_obj or obj, new_res or res
        before = renderer.renders
        renderer.update_group(GROUP, [(obj, res)])
        assert renderer.renders == before + 1
        fresh = Renderer()
        fresh.update_group(GROUP, [(obj, res)])
        assert renderer.render_body() == fresh.render_body()


def spy_on_extraction(monkeypatch) -> list[str]:
    """The names of the families each rendering from now on extracts (is not skipped)."""
    from exporter.metrics import renderer as renderer_module

    extracted: list[str] = []
    real = renderer_module.render_object

    def spy(spec, index, obj, res, kept=()):
        extracted.extend(f.name for f in spec.families if f.name in index and index[f.name] not in kept)
        return real(spec, index, obj, res, kept)

    monkeypatch.setattr(renderer_module, "render_object", spy)
    return extracted


@pytest.mark.pure_python
def test_an_owner_whose_computed_conditions_change_behind_reported_ones_keeps_its_condition_lines(
        monkeypatch):
    # An owner's Machines changed: its computed conditions and counters are new, its projection and
    # the conditions its controller reports are not. The families reading only the effective
    # conditions are not extracted again; the mismatch and counter families are.
    md = MachineDeployment(meta=Meta(kind="MachineDeployment", api_version="cluster.x-k8s.io/v1beta2",
                                     namespace="ns", name="md1"), cluster_name="c1", replicas=3)
    reported = [Condition("Available", T, "Available", last_transition_time=1.0)]
    before = result(md, reported=reported, computed=[Condition("Available", T, "Available")],
                    counters={"readyReplicas": 3})
    renderer = Renderer()
    renderer.update_group(GROUP, [(md, before)])
    extracted = spy_on_extraction(monkeypatch)
    after = replace(before, computed=(Condition("Available", F, "NotAvailable"),),
                    counters={"readyReplicas": 2})
    renderer.update_group(GROUP, [(md, after)])
    assert "capi_machinedeployment_status_condition_mismatch" in extracted
    assert "capi_machinedeployment_status_replicas_ready" in extracted
    assert not [n for n in extracted if n.endswith(("_condition", "_reason", "_transition_time"))]
    body = renderer.render_body()
    fresh = Renderer()
    fresh.update_group(GROUP, [(md, after)])
    assert body == fresh.render_body()
    assert value(body, "capi_machinedeployment_status_condition_mismatch", type="Available") == 1
    assert value(body, "capi_machinedeployment_status_condition", type="Available", status="True") == 1

    # A computed condition of a type the controller does not report is an effective one: rendered.
    extracted.clear()
    extra = replace(after, computed=(*after.computed, Condition("RollingOut", T, "RollingOut")))
    renderer.update_group(GROUP, [(md, extra)])
    assert "capi_machinedeployment_status_condition" in extracted
    assert value(renderer.render_body(), "capi_machinedeployment_status_condition", type="RollingOut",
                 status="True") == 1


@pytest.mark.pure_python
def test_a_change_of_one_field_renders_only_the_families_that_read_it(monkeypatch):
    m = machine()
    r = result(m, reported=[Condition("Ready", T, "Ready", last_transition_time=1.0)], phase="Running")
    renderer = Renderer()
    renderer.update_group(GROUP, [(m, r)])
    extracted = spy_on_extraction(monkeypatch)
    steps = [
        # the certificate expiry alone: its family, and the families that declare no fields
        (replace(m, certificates_expiry=2_000_000_000.0), {"capi_machine_status_certificatesexpirydate"}),
        (replace(m, certificates_expiry=2_000_000_000.0, version="v1.31.0"),
         {"capi_machine_info"}),
        (replace(m, certificates_expiry=2_000_000_000.0, version="v1.31.0", node_name="other"),
         {"capi_machine_status_noderef"}),
    ]
    for obj, read in steps:
        extracted.clear()
        renderer.update_group(GROUP, [(obj, r)])
        assert read <= set(extracted)
        skipped = {"capi_machine_info", "capi_machine_addresses", "capi_machine_created",
                   "capi_machine_status_noderef", "capi_machine_status_certificatesexpirydate"} - read
        assert not skipped & set(extracted), skipped & set(extracted)
        fresh = Renderer()
        fresh.update_group(GROUP, [(obj, r)])
        assert renderer.render_body() == fresh.render_body()
    # A new uid (the object was recreated) renders every family again: its identity labels changed.
    extracted.clear()
    renderer.update_group(GROUP, [(replace(obj, meta=replace(obj.meta, uid="uid-new")), r)])
    assert {"capi_machine_info", "capi_machine_created", "capi_machine_addresses"} <= set(extracted)


@pytest.mark.pure_python
def test_a_family_reading_both_sides_is_rendered_again_only_when_its_fields_or_the_result_change(
        monkeypatch):
    # The phase family reads the Result's phase, else the object's: a change of another field with
    # the same Result (a marker-only update, whose evaluation is reused) keeps its lines.
    m = machine()
    r = result(m, phase="Running")
    renderer = Renderer()
    renderer.update_group(GROUP, [(m, r)])
    extracted = spy_on_extraction(monkeypatch)
    phase = "capi_machine_status_phase"
    other = replace(m, certificates_expiry=2_000_000_000.0)
    steps = [
        (other, r, False),  # another field, the same Result
        (replace(other, phase="Deleting"), r, True),  # its field
        (replace(other, phase="Deleting"), result(m, phase="Failed"), True),  # a new Result
    ]
    for obj, res, rendered in steps:
        extracted.clear()
        renderer.update_group(GROUP, [(obj, res)])
        assert (phase in extracted) is rendered, (obj.phase, res.phase)
        fresh = Renderer()
        fresh.update_group(GROUP, [(obj, res)])
        assert renderer.render_body() == fresh.render_body()
    assert value(renderer.render_body(), phase, phase="Failed") == 1


def test_a_group_of_its_own_object_is_known_from_its_entry_with_nothing_of_its_own():
    # Provider objects and ClusterClasses are groups of their own (group key = object key): most
    # groups at scale. Their membership is known from the entry (or the failed rendering), with
    # no tuple or dict entry for the group.
    renderer = Renderer()
    objs = [InfraObject(meta=Meta(kind="DockerMachine", api_version="infrastructure.cluster.x-k8s.io/v1beta2",
                                  namespace="ns", name=name, uid=f"uid-{name}"),
                        cluster_name="c1", layout="v1beta2", provisioned=True)
            for name in ("d1", "d\ud800")]  # the second cannot be encoded: its rendering fails
    for obj in objs:
        renderer.update_group(obj.key, [(obj, result(obj))])
        assert renderer.objects_of(obj.key) == (obj.key,)
        assert obj.key not in renderer._group_objects
    assert [key for key, _ in renderer.take_failed()] == [objs[1].key]
    assert b'name="d1"' in gzip.decompress(gzip_body(renderer))
    assert renderer.update_objects(objs[0].key, [(objs[0], result(objs[0]))])
    for obj in objs:
        renderer.remove_group(obj.key)
        assert renderer.objects_of(obj.key) == () and obj.key not in renderer._failing
    assert b'name="d1"' not in gzip.decompress(gzip_body(renderer))


def test_a_bare_result_is_not_kept_and_one_equal_to_it_renders_nothing_again():
    # A provider object's Result holds nothing its object does not (``model.bare_result``): the
    # entry keeps none, and the next evaluation's equal Result changes no line.
    renderer = Renderer()
    obj = InfraObject(meta=Meta(kind="DockerMachine", api_version="infrastructure.cluster.x-k8s.io/v1beta2",
                                namespace="ns", name="d1", uid="uid-d1"),
                      cluster_name="c1", layout="v1beta2", provisioned=True,
                      conditions=(Condition("Ready", Status.TRUE, last_transition_time=1.0),))
    renderer.update_group(obj.key, [(obj, bare_result(obj))])
    body, renders = gzip.decompress(gzip_body(renderer)), renderer.renders
    assert renderer._entries[obj.key].kept is None
    assert renderer._entries[obj.key].result == bare_result(obj)
    renderer.update_group(obj.key, [(obj, bare_result(obj))])
    assert renderer.renders == renders and gzip.decompress(gzip_body(renderer)) == body
    # A Result with something computed is kept, and its lines follow it.
    found = replace(bare_result(obj), findings=(Finding("Code", "message"),))
    renderer.update_group(obj.key, [(obj, found)])
    assert renderer._entries[obj.key].kept is found and renderer.renders == renders + 1
    assert b'code="Code"' in gzip.decompress(gzip_body(renderer))


@pytest.mark.pure_python
def test_label_tails_of_values_unique_per_object_are_kept_in_a_bounded_table() -> None:
    # An info family's values are one object's own: its tails are never used again, so what the
    # table holds of them is bounded by its limit, and the lines stay right across each clearing.
    names = ("node_name", "provider_id")
    for i in range(5 * exposition._TAIL_TABLE_LIMIT):
        text = exposition.sample_lines("capi_machine_info", 'name="m"', names, [((f"n{i}", f"p{i}"), 1.0)])
        assert text == f'capi_machine_info{{name="m",node_name="n{i}",provider_id="p{i}"}} 1\n'
        assert len(exposition._tables[names]) <= exposition._TAIL_TABLE_LIMIT
