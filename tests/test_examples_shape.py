"""Shape checks for the example fleet under examples/.

The examples feed the demo, the ``evaluate`` golden tests, the fake Kubernetes API server and the
end-to-end Prometheus tests, so they must look like ``kubectl get -o yaml`` output and be internally
consistent (labels, owner references and MWRS links resolve) and every documented story must be
present. This module checks the files only; what the engine computes from them is tested elsewhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOW = datetime.fromisoformat("2026-11-20T12:00:00+00:00")  # the --now the golden tests evaluate with
# Small enough to read: each story adds a few objects; raise with the stories, not more.
MAX_OBJECTS = 177

CLUSTER_NAME = "cluster.x-k8s.io/cluster-name"
MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
CLUSTER_SCOPED = {"ManagedCluster", "ExtensionConfig"}

Obj = dict[str, Any]
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster on these files


def _load() -> list[tuple[Path, Obj]]:
    docs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=_LOADER):
            if doc is not None:
                docs.append((path, doc))
    return docs


DOCS = _load()
OBJECTS = [doc for _, doc in DOCS]


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _time(text: str) -> datetime:
    assert isinstance(text, str) and text.endswith("Z"), text
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ns(obj: Obj) -> str:
    return str(obj["metadata"].get("namespace", ""))


def _of(kind: str) -> list[Obj]:
    return [o for o in OBJECTS if o.get("kind") == kind]


def _cond(obj: Obj, type_: str, path: str = "status.conditions") -> Obj | None:
    return next((c for c in _get(obj, path) or [] if c.get("type") == type_), None)


def _has(obj: Obj, type_: str, status: str, reason: str | None = None,
         path: str = "status.conditions") -> bool:
    c = _cond(obj, type_, path)
    return c is not None and c["status"] == status and (reason is None or c.get("reason") == reason)


def _walk_conditions(obj: Any, path: str = "") -> Iterator[tuple[str, list[Any]]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "conditions" and isinstance(v, list):
                yield f"{path}.{k}", v
            else:
                yield from _walk_conditions(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk_conditions(v, f"{path}[{i}]")


def _ids(docs: list[tuple[Path, Obj]]) -> list[str]:
    return [f"{p.relative_to(EXAMPLES)}:{d.get('kind')}/{_get(d, 'metadata.name')}" for p, d in docs]


# ---- every object ---------------------------------------------------------------------------


def test_examples_exist_and_stay_small() -> None:
    assert {p.parent.name for p, _ in DOCS} == {"capi", "ocm"}
    assert 100 <= len(OBJECTS) <= MAX_OBJECTS
    assert (EXAMPLES / "README.md").is_file()


@pytest.mark.parametrize("obj", OBJECTS, ids=_ids(DOCS))
def test_object_has_kubectl_metadata(obj: Obj) -> None:
    assert isinstance(obj.get("apiVersion"), str) and "/" in obj["apiVersion"]
    assert isinstance(obj.get("kind"), str)
    meta = obj["metadata"]
    for field in ("name", "uid", "resourceVersion", "creationTimestamp"):
        assert isinstance(meta.get(field), str) and meta[field], field
    assert ("namespace" in meta) != (obj["kind"] in CLUSTER_SCOPED)
    assert _time(meta["creationTimestamp"]) <= NOW
    if "deletionTimestamp" in meta:
        assert _time(meta["creationTimestamp"]) < _time(meta["deletionTimestamp"]) <= NOW
        assert meta.get("finalizers"), "an object being deleted is only still there because of a finalizer"


@pytest.mark.parametrize("obj", OBJECTS, ids=_ids(DOCS))
def test_conditions_are_well_formed(obj: Obj) -> None:
    for where, conds in _walk_conditions(obj.get("status", {}), "status"):
        types = [c["type"] for c in conds]
        assert len(types) == len(set(types)), f"{where}: duplicate condition types {types}"
        for c in conds:
            assert c["status"] in ("True", "False", "Unknown"), (where, c)
            assert _time(c["lastTransitionTime"]) <= NOW, (where, c)
            if "severity" in c:  # CAPI v1beta1 conditions carry a severity only while False
                assert c["status"] == "False" and c["severity"] in ("Error", "Warning", "Info"), (where, c)
            if "observedGeneration" in c:  # metav1 conditions: reason and message are required
                assert c["reason"] and isinstance(c["message"], str), (where, c)


def test_uids_are_unique() -> None:
    counts = Counter(o["metadata"]["uid"] for o in OBJECTS)
    assert [uid for uid, n in counts.items() if n > 1] == []


def test_names_are_unique_per_kind_and_namespace() -> None:
    counts = Counter((o["kind"], _ns(o), o["metadata"]["name"]) for o in OBJECTS)
    assert [key for key, n in counts.items() if n > 1] == []


# ---- links between objects ------------------------------------------------------------------


def test_cluster_name_labels_point_to_clusters() -> None:
    clusters = {(_ns(c), c["metadata"]["name"]) for c in _of("Cluster")}
    dangling = [
        (o["kind"], _ns(o), o["metadata"]["name"])
        for o in OBJECTS
        if CLUSTER_NAME in (o["metadata"].get("labels") or {})
        and (_ns(o), o["metadata"]["labels"][CLUSTER_NAME]) not in clusters
    ]
    assert dangling == []


def test_owner_references_resolve() -> None:
    index = {(o["kind"], _ns(o), o["metadata"]["name"]): o for o in OBJECTS}
    for o in OBJECTS:
        for ref in o["metadata"].get("ownerReferences", []):
            owner = index.get((ref["kind"], _ns(o), ref["name"]))
            assert owner is not None, (o["kind"], o["metadata"]["name"], ref)
            assert owner["metadata"]["uid"] == ref["uid"], ref
            assert owner["apiVersion"].split("/")[0] == ref["apiVersion"].split("/")[0], ref


def test_capi_descendants_name_their_cluster_consistently() -> None:
    for o in OBJECTS:
        label = (o["metadata"].get("labels") or {}).get(CLUSTER_NAME)
        cluster_name = _get(o, "spec.clusterName")
        if label and cluster_name:
            assert label == cluster_name, (o["kind"], o["metadata"]["name"])


def test_manifestworks_link_to_mwrs_and_managed_clusters() -> None:
    mwrs = {f"{_ns(m)}.{m['metadata']['name']}" for m in _of("ManifestWorkReplicaSet")}
    managed = {m["metadata"]["name"] for m in _of("ManagedCluster")}
    works = _of("ManifestWork")
    assert works
    for w in works:
        assert w["metadata"]["labels"][MWRS_LABEL] in mwrs, w["metadata"]
        assert _ns(w) in managed, "a ManifestWork lives in its ManagedCluster's namespace"


def test_managed_cluster_addons_live_in_their_cluster_namespace() -> None:
    managed = {m["metadata"]["name"] for m in _of("ManagedCluster")}
    addons = _of("ManagedClusterAddOn")
    assert addons
    for a in addons:
        assert _ns(a) in managed, "a ManagedClusterAddOn lives in its ManagedCluster's namespace"
        assert a["metadata"]["labels"]["open-cluster-management.io/addon-name"] == a["metadata"]["name"]


def test_cluster_resource_set_bindings_name_their_cluster_and_sets() -> None:
    clusters = {(_ns(c), c["metadata"]["name"]) for c in _of("Cluster")}
    sets = {(_ns(s), s["metadata"]["name"]) for s in _of("ClusterResourceSet")}
    bindings = _of("ClusterResourceSetBinding")
    assert bindings
    for b in bindings:
        # the controller names a binding after its Cluster
        assert b["metadata"]["name"] == _get(b, "spec.clusterName")
        assert (_ns(b), _get(b, "spec.clusterName")) in clusters
        for entry in _get(b, "spec.bindings"):
            assert (_ns(b), entry["clusterResourceSetName"]) in sets


def test_placement_decisions_match_placements() -> None:
    decisions = {d["metadata"]["name"]: d for d in _of("PlacementDecision")}
    for p in _of("Placement"):
        names = [n for g in _get(p, "status.decisionGroups") or [] for n in g["decisions"]]
        selected = [c["clusterName"] for n in names for c in decisions[n]["status"]["decisions"]]
        assert len(selected) == p["status"]["numberOfSelectedClusters"], p["metadata"]["name"]


# ---- the stories ------------------------------------------------------------------------------


def _clusters_where(pred: Callable[[Obj], bool]) -> list[str]:
    return [c["metadata"]["name"] for c in _of("Cluster") if pred(c)]


def _story_healthy() -> bool:
    def ok(c: Obj) -> bool:
        name, ns = c["metadata"]["name"], _ns(c)
        pools = [p for p in _of("MachinePool") if _get(p, "spec.clusterName") == name and _ns(p) == ns]
        infra = {i["metadata"]["name"]: i for i in _of("AWSMachinePool") if _ns(i) == ns}
        return (c["apiVersion"].endswith("/v1beta2") and _has(c, "Available", "True")
                and any(len(_get(infra.get(p["metadata"]["name"], {}), "spec.providerIDList") or [])
                        == _get(infra[p["metadata"]["name"]], "status.replicas") for p in pools)
                and any(_get(m, "spec.clusterName") == name for m in _of("MachineHealthCheck")))
    return bool(_clusters_where(ok))


def _story_availability_gates() -> bool:
    for cc in _of("ClusterClass"):
        gates = _get(cc, "spec.availabilityGates") or []
        if not any(g.get("polarity") == "Negative" for g in gates):
            continue
        users = [c for c in _of("Cluster")
                 if _get(c, "spec.topology.classRef.name") == cc["metadata"]["name"]]
        if any(all(_cond(c, g["conditionType"]) for g in gates) for c in users):
            return True
    return False


def _story_rolling_out() -> bool:
    kcps = [k for k in _of("KubeadmControlPlane")
            if _has(k, "RollingOut", "True") and _get(k, "spec.version") != _get(k, "status.version")]
    drift = "* Version v1.31.4, v1.32.1 required"
    version_drift = [m for m in _of("Machine") if (_cond(m, "UpToDate") or {}).get("message") == drift]
    sets_per_md = Counter((_ns(s), s["metadata"]["labels"]["cluster.x-k8s.io/deployment-name"])
                          for s in _of("MachineSet"))
    return bool(kcps and version_drift and max(sets_per_md.values()) >= 2
                and _clusters_where(lambda c: _has(c, "RollingOut", "True")))


def _story_scaling_up() -> bool:
    for md in _of("MachineDeployment"):
        machines = [m for m in _of("Machine") if m["metadata"]["labels"].get(
            "cluster.x-k8s.io/deployment-name") == md["metadata"]["name"] and _ns(m) == _ns(md)]
        provisioning = [m for m in machines if "nodeRef" not in m["status"]
                        and _has(m, "InfrastructureReady", "False")]
        if (_has(md, "ScalingUp", "True") and md["spec"]["replicas"] == 5 and len(machines) == 3
                and len(provisioning) == 2):
            return True
    return False


def _story_remediation() -> bool:
    waiting = [m for m in _of("Machine") if _has(m, "HealthCheckSucceeded", "False", "UnhealthyNode")
               and _has(m, "OwnerRemediated", "False", "WaitingForRemediation")
               and _has(m, "NodeHealthy", "False")]
    etcd = [k for k in _of("KubeadmControlPlane") if _has(k, "ControlPlaneComponentsHealthy", "False")]
    sick_cp = [m for m in _of("Machine") if _has(m, "EtcdPodHealthy", "False")]
    return bool(waiting and etcd and sick_cp and _ns(waiting[0]) == _ns(etcd[0]))


def _story_remediation_blocked() -> bool:
    return any(_has(m, "RemediationAllowed", "False", "TooManyUnhealthy")
               and m["status"]["remediationsAllowed"] == 0
               and m["status"]["expectedMachines"] - m["status"]["currentHealthy"] == 2
               for m in _of("MachineHealthCheck"))


def _story_deleting() -> bool:
    draining = [m for m in _of("Machine") if _has(m, "Deleting", "True", "DrainingNode")
                and NOW - _time(m["metadata"]["deletionTimestamp"]) > timedelta(minutes=15)
                and NOW - _time(m["status"]["deletion"]["nodeDrainStartTime"]) > timedelta(minutes=5)]
    return bool(draining and _clusters_where(lambda c: "deletionTimestamp" in c["metadata"])
                and any("deletionTimestamp" in md["metadata"] for md in _of("MachineDeployment")))


def _story_deleted_manifest() -> bool:
    """The whole manifest deleted: KubeadmControlPlane waiting for a MachinePool whose
    InfraMachinePool cannot be deleted."""
    deleting = [k for k in _of("KubeadmControlPlane") if "deletionTimestamp" in k["metadata"]
                and _has(k, "Deleting", "True", "WaitingForWorkersDeletion")]
    infra = {(_ns(i), i["metadata"]["name"]) for i in _of("AWSMachinePool")
             if "deletionTimestamp" in i["metadata"]}
    pools = [p for p in _of("MachinePool") if "deletionTimestamp" in p["metadata"]
             and (_ns(p), _get(p, "spec.template.spec.infrastructureRef.name")) in infra]
    return bool(deleting and pools and _ns(deleting[0]) == _ns(pools[0]))


def _story_control_plane_remediation_refused() -> bool:
    for k in _of("KubeadmControlPlane"):
        retries = _get(k, "status.lastRemediation.retryCount") or 0
        owner = ("cluster.x-k8s.io/control-plane-name", k["metadata"]["name"])
        refused = [m for m in _of("Machine") if _ns(m) == _ns(k)
                   and m["metadata"]["labels"].get(owner[0]) == owner[1]
                   and _has(m, "OwnerRemediated", "False", "CannotBeRemediated")]
        if (_has(k, "Remediating", "True") and retries > 0
                and retries >= (_get(k, "spec.remediation.maxRetry") or 0) and refused):
            return True
    return False


def _story_paused() -> bool:
    def long_paused(c: Obj) -> bool:
        cond = _cond(c, "Paused")
        return (_get(c, "spec.paused") is True and cond is not None and cond["status"] == "True"
                and NOW - _time(cond["lastTransitionTime"]) >= timedelta(days=2))
    annotated = [md for md in _of("MachineDeployment")
                 if "cluster.x-k8s.io/paused" in (md["metadata"].get("annotations") or {})]
    return bool(_clusters_where(long_paused) and annotated)


def _story_v1beta1_with_v1beta2_status() -> bool:
    v1beta1 = ("cluster.x-k8s.io/v1beta1", "controlplane.cluster.x-k8s.io/v1beta1")
    v1 = [o for o in OBJECTS if o["apiVersion"] in v1beta1]
    clusters = [c for c in v1 if c["kind"] == "Cluster" and _get(c, "status.v1beta2.controlPlane")
                and _get(c, "status.v1beta2.workers") and _get(c, "spec.topology.class")]
    kcps = [k for k in v1 if k["kind"] == "KubeadmControlPlane"
            and _get(k, "status.v1beta2.readyReplicas") is not None
            and _get(k, "spec.rolloutStrategy.rollingUpdate") and "updatedReplicas" in k["status"]
            and "initialized" in k["status"]]
    mds = [m for m in v1 if m["kind"] == "MachineDeployment"
           and _get(m, "status.v1beta2.upToDateReplicas") is not None
           and _get(m, "spec.strategy.rollingUpdate") and "unavailableReplicas" in m["status"]]
    machines = [m for m in v1 if m["kind"] == "Machine" and _get(m, "status.v1beta2.conditions")
                and "bootstrapReady" in m["status"] and "infrastructureReady" in m["status"]]
    return bool(clusters and kcps and mds and machines)


def _story_v1beta1_only() -> bool:
    for c in _of("Cluster"):
        if not c["apiVersion"].endswith("/v1beta1") or _get(c, "status.v1beta2") is not None:
            continue
        family = [o for o in OBJECTS if _ns(o) == _ns(c)
                  and (o["metadata"].get("labels") or {}).get(CLUSTER_NAME) == c["metadata"]["name"]]
        if any(_get(o, "status.v1beta2") is not None for o in family):
            continue
        if any(o["kind"] == "Machine" and _has(o, "NodeHealthy", "False")
               and (_cond(o, "NodeHealthy") or {}).get("severity") == "Warning" for o in family):
            return True
    return False


def _story_machinepool_contract() -> bool:
    pools = _of("AWSMachinePool")
    short = any(len(_get(p, "spec.providerIDList") or []) < (_get(p, "status.replicas") or 0) for p in pools)
    unreported = any(_get(p, "status.initialization.provisioned") is None and _get(p, "status.ready") is None
                     for p in pools)
    terminal = any(_get(p, "status.failureReason") and _get(p, "status.failureMessage") for p in pools)
    return short and unreported and terminal


def _mwrs_where(pred: Callable[[Obj], bool]) -> list[Obj]:
    return [m for m in _of("ManifestWorkReplicaSet") if pred(m)]


def _works_of(mwrs: Obj) -> list[Obj]:
    key = f"{_ns(mwrs)}.{mwrs['metadata']['name']}"
    return [w for w in _of("ManifestWork") if w["metadata"]["labels"].get(MWRS_LABEL) == key]


def _story_mwrs_outdated_work() -> bool:
    return bool(_mwrs_where(lambda m: _has(m, "PlacementRolledOut", "False", "Progressing") and any(
        w["spec"] != m["spec"]["manifestWorkTemplate"] for w in _works_of(m))))


def _story_mwrs_missing_placement() -> bool:
    placements = {(_ns(p), p["metadata"]["name"]) for p in _of("Placement")}
    def ok(m: Obj) -> bool:
        refs = m["spec"]["placementRefs"]
        return (_has(m, "PlacementVerified", "False", "PlacementDecisionNotFound")
                and any((_ns(m), r["name"]) not in placements for r in refs))
    return bool(_mwrs_where(ok))


def _story_mwrs_no_progressing_rule() -> bool:
    def ok(m: Obj) -> bool:
        configs = m["spec"]["manifestWorkTemplate"].get("manifestConfigs") or []
        works = _works_of(m)
        return (bool(configs) and not any(c.get("conditionRules") for c in configs) and bool(works)
                and all(_has(w, "Applied", "True") and _cond(w, "Progressing") is None for w in works))
    return bool(_mwrs_where(ok))


STORIES: dict[str, Callable[[], bool]] = {
    "capi healthy with MachinePool and MHC": _story_healthy,
    "capi ClusterClass availabilityGates (one negative) on a Cluster": _story_availability_gates,
    "capi rolling out v1.31.4 -> v1.32.1": _story_rolling_out,
    "capi scaling up 3 -> 5 with provisioning Machines": _story_scaling_up,
    "capi MHC remediation + etcd pod unhealthy": _story_remediation,
    "capi MHC remediation blocked": _story_remediation_blocked,
    "capi deleting with stale drain": _story_deleting,
    "capi whole manifest deleted, MachinePool held by its InfraMachinePool": _story_deleted_manifest,
    "capi control plane remediation refused after maxRetry": _story_control_plane_remediation_refused,
    "capi paused for days": _story_paused,
    "capi v1beta1 objects with status.v1beta2 (CAPI 1.9/1.10)": _story_v1beta1_with_v1beta2_status,
    "capi v1beta1 objects without status.v1beta2 (CAPI 1.5-1.8)": _story_v1beta1_only,
    "capi InfraMachinePool contract broken": _story_machinepool_contract,
    "ocm (a) healthy complete, 2 placements": lambda: bool(_mwrs_where(
        lambda m: len(m["spec"]["placementRefs"]) == 2
        and _has(m, "PlacementRolledOut", "True", "Complete"))),
    "ocm (b) mid-rollout with an outdated work": _story_mwrs_outdated_work,
    "ocm (c) degraded": lambda: bool(_mwrs_where(lambda m: _get(m, "status.summary.degraded") or 0)),
    "ocm (d) placement selects nothing": lambda: bool(_mwrs_where(
        lambda m: _has(m, "PlacementVerified", "False", "PlacementDecisionEmpty"))),
    "ocm (e) placement missing": _story_mwrs_missing_placement,
    "ocm (f) legacy summary key Applied": lambda: bool(_mwrs_where(
        lambda m: "Applied" in (_get(m, "status.summary") or {}))),
    "ocm (g) invalid owner label": lambda: bool(_mwrs_where(
        lambda m: _has(m, "ManifestworkApplied", "False", "InvalidManifestWorkName")
        and len(f"{_ns(m)}.{m['metadata']['name']}") > 63)),
    "ocm (h) no Progressing condition rule": _story_mwrs_no_progressing_rule,
    "ocm deleting MWRS held by a work on an unreachable cluster": lambda: bool(_mwrs_where(
        lambda m: "deletionTimestamp" in m["metadata"] and any(
            "deletionTimestamp" in w["metadata"] and w["metadata"].get("finalizers") for w in _works_of(m)))),
    "ocm unreachable ManagedCluster": lambda: any(
        _has(c, "ManagedClusterConditionAvailable", "Unknown", "ManagedClusterLeaseUpdateStopped")
        for c in _of("ManagedCluster")),
    "capi ClusterResourceSet applied, with its binding": lambda: any(
        _has(s, "ResourcesApplied", "True", "Applied") for s in _of("ClusterResourceSet"))
        and bool(_of("ClusterResourceSetBinding")),
    "capi ClusterResourceSet not applied (wrong Secret type)": lambda: any(
        _has(s, "ResourcesApplied", "False", "WrongSecretType") for s in _of("ClusterResourceSet")),
    "capi ExtensionConfig discovered": lambda: any(
        _has(e, "Discovered", "True", "Discovered") and bool(_get(e, "status.handlers"))
        for e in _of("ExtensionConfig")),
    "capi ExtensionConfig discovery failing": lambda: any(
        _has(e, "Discovered", "False", "NotDiscovered") for e in _of("ExtensionConfig")),
    "capi MachineDrainRule draining some Pods last": lambda: any(
        _get(r, "spec.drain.behavior") == "Drain" and (_get(r, "spec.drain.order") or 0) > 0
        for r in _of("MachineDrainRule")),
    "capi IPAddressClaim allocated": lambda: any(
        _has(c, "Ready", "True") and bool(_get(c, "status.addressRef.name"))
        for c in _of("IPAddressClaim")),
    "capi IPAddressClaim waiting on an exhausted pool": lambda: any(
        _has(c, "Ready", "False", "PoolExhausted", "status.v1beta2.conditions")
        for c in _of("IPAddressClaim")),
    "ocm add-on unavailable on an available cluster": lambda: any(
        _has(a, "Available", "False", "ProbeUnavailable") for a in _of("ManagedClusterAddOn")),
    "ocm add-on available but degraded": lambda: any(
        _has(a, "Available", "True") and _has(a, "Degraded", "True") for a in _of("ManagedClusterAddOn")),
    "ocm add-on of an unreachable cluster": lambda: any(
        _has(a, "Available", "Unknown", "ManagedClusterAddOnLeaseUpdateStopped")
        for a in _of("ManagedClusterAddOn")),
    "ocm inventory: claims and versions": lambda: (
        len({_get(c, "status.version.kubernetes") for c in _of("ManagedCluster")}) > 1
        and any(x["name"] == "platform.open-cluster-management.io" for c in _of("ManagedCluster")
                for x in _get(c, "status.clusterClaims") or [])),
}


@pytest.mark.parametrize("story", list(STORIES))
def test_story_is_present(story: str) -> None:
    assert STORIES[story](), f"no example tells the story: {story}"


def test_v1beta2_objects_keep_v1beta1_conditions_under_deprecated() -> None:
    kinds = {"Cluster", "Machine", "MachineSet", "MachineDeployment", "KubeadmControlPlane", "MachinePool",
             "MachineHealthCheck"}
    for o in OBJECTS:
        if o["kind"] in kinds and o["apiVersion"].endswith("/v1beta2"):
            assert _get(o, "status.conditions"), o["metadata"]["name"]
            assert _get(o, "status.deprecated.v1beta1.conditions"), o["metadata"]["name"]


def test_every_story_is_documented_in_the_readme() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    for path, _ in DOCS:
        assert str(path.relative_to(EXAMPLES)) in readme, path
