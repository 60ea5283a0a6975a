"""The provider objects the fleet's Cluster API objects reference: a DockerCluster per Cluster, a
DockerMachine and a KubeadmConfig per Machine, in the v1beta2 contract layout.

Built from the referencing object alone (names, labels, times, provisioned state) with uids
derived from its uid, so adding them consumes none of the generator's randomness: the rest of the
fleet is the same with or without them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator

from tests.benchmark.fleet import Obj, cond, owner, v1beta1_cond

CAPI = "cluster.x-k8s.io/v1beta2"
INFRA_API = "infrastructure.cluster.x-k8s.io/v1beta2"
BOOTSTRAP_API = "bootstrap.cluster.x-k8s.io/v1beta2"


def _uid(of: str, what: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{of}/{what}"))


def _meta(ref: Obj, name: str, what: str, finalizer: str) -> Obj:
    meta = ref["metadata"]
    return {
        "name": name,
        "namespace": meta["namespace"],
        "uid": _uid(meta["uid"], what),
        "generation": 1,
        "creationTimestamp": meta["creationTimestamp"],
        "labels": dict(meta["labels"]),
        "ownerReferences": [owner(CAPI, ref["kind"], meta["name"], meta["uid"])],
        "finalizers": [finalizer],
    }


def _flags(ltt: str) -> list[Obj]:
    return [cond("Paused", False, "NotPaused", ltt=ltt), cond("Deleting", False, "NotDeleting", ltt=ltt)]


def docker_cluster(cluster: Obj) -> Obj:
    ltt = cluster["metadata"]["creationTimestamp"]
    return {
        "apiVersion": INFRA_API,
        "kind": "DockerCluster",
        "metadata": _meta(cluster, cluster["spec"]["infrastructureRef"]["name"], "infra",
                          "dockercluster.infrastructure.cluster.x-k8s.io"),
        "spec": {"controlPlaneEndpoint": cluster["spec"]["controlPlaneEndpoint"]},
        "status": {
            "conditions": [cond("Ready", True, "Ready", ltt=ltt),
                           cond("LoadBalancerAvailable", True, "Available", ltt=ltt), *_flags(ltt)],
            "deprecated": {"v1beta1": {"conditions": [v1beta1_cond("Ready", True, ltt=ltt)]}},
            "failureDomains": [{"name": f"fd{i}", "controlPlane": True} for i in (1, 2, 3)],
            "initialization": {"provisioned": True},
            "observedGeneration": 1,
        },
    }


def docker_machine(machine: Obj) -> Obj:
    ltt = machine["metadata"]["creationTimestamp"]
    provisioned = bool(machine["status"]["initialization"]["infrastructureProvisioned"])
    spec: Obj = {"customImage": f"kindest/node:{machine['spec']['version']}", "bootstrapped": provisioned}
    if provisioned:
        spec["providerID"] = machine["spec"]["providerID"]
    reason = "Ready" if provisioned else "NotReady"
    return {
        "apiVersion": INFRA_API,
        "kind": "DockerMachine",
        "metadata": _meta(machine, machine["spec"]["infrastructureRef"]["name"], "infra",
                          "dockermachine.infrastructure.cluster.x-k8s.io"),
        "spec": spec,
        "status": {
            "conditions": [
                cond("Ready", provisioned, reason, "" if provisioned else "* BootstrapExecSucceeded: Running "
                     "bootstrap data", ltt=ltt),
                cond("ContainerProvisioned", True, "Provisioned", ltt=ltt),
                cond("BootstrapExecSucceeded", provisioned, "Succeeded" if provisioned else "Running",
                     "" if provisioned else "Running bootstrap data", ltt=ltt),
                *_flags(ltt),
            ],
            "deprecated": {"v1beta1": {"conditions": [
                v1beta1_cond("Ready", provisioned, "Bootstrapping", ltt=ltt, severity="Info")]}},
            "initialization": {"provisioned": provisioned},
            "observedGeneration": 1,
        },
    }


def kubeadm_config(machine: Obj) -> Obj:
    ltt = machine["metadata"]["creationTimestamp"]
    name = machine["spec"]["bootstrap"]["configRef"]["name"]
    return {
        "apiVersion": BOOTSTRAP_API,
        "kind": "KubeadmConfig",
        "metadata": _meta(machine, name, "bootstrap", "kubeadmconfig.bootstrap.cluster.x-k8s.io"),
        "spec": {"joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": [
            {"name": "eviction-hard", "value": "nodefs.available<0%,imagefs.available<0%"}]}}},
        "status": {
            "conditions": [
                cond("Ready", True, "Ready", ltt=ltt),
                cond("DataSecretAvailable", True, "Available", ltt=ltt),
                cond("CertificatesAvailable", True, "Available", ltt=ltt),
                *_flags(ltt),
            ],
            "dataSecretName": name,
            "deprecated": {"v1beta1": {"conditions": [v1beta1_cond("Ready", True, ltt=ltt)]}},
            "initialization": {"dataSecretCreated": True},
            "observedGeneration": 1,
        },
    }


def with_providers(objects: Iterable[Obj]) -> Iterator[Obj]:
    """``objects``, each Cluster followed by its DockerCluster, each Machine by its DockerMachine
    and KubeadmConfig."""
    for obj in objects:
        yield obj
        if obj["kind"] == "Cluster":
            yield docker_cluster(obj)
        elif obj["kind"] == "Machine":
            yield docker_machine(obj)
            yield kubeadm_config(obj)
