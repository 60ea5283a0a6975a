"""Building blocks of the fleet's Cluster API objects: Machines, their owners' rollups, MachinePools
and ClusterClasses, in the v1beta2 layout ``kubectl get -o yaml`` shows.

Owns a Machine's shape for each of its states (running, not up to date, unhealthy Node, still
provisioning), the conditions and counters an owner (MachineSet, MachineDeployment,
KubeadmControlPlane) derives from its Machines' states, and the MachinePool (with its
DockerMachinePool) and ClusterClass objects. Which Clusters get which objects is ``fleet_capi.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tests.benchmark.fleet import Gen, Obj, cond, owner, v1beta1_cond

CAPI = "cluster.x-k8s.io/v1beta2"
KCP_API = "controlplane.cluster.x-k8s.io/v1beta2"
INFRA_API = "infrastructure.cluster.x-k8s.io/v1beta2"
VERSION, OLD_VERSION = "v1.33.1", "v1.32.4"
NEGATIVE = {"Deleting", "Paused", "RollingOut", "ScalingUp", "ScalingDown", "Remediating", "Updating"}


@dataclass
class MachineState:
    name: str
    uid: str
    ready: bool = True
    up_to_date: bool = True
    node: bool = True


def meta_of(
    gen: Gen,
    name: str,
    ns: str,
    cluster: str,
    labels: Obj | None = None,
    generation: int = 1,
    owners: list[Obj] | None = None,
    finalizer: str = "",
    uid: str = "",
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": ns,
        "uid": uid or gen.uid(),
        "generation": generation,
        "creationTimestamp": gen.ago(86_400, 90 * 86_400),
        "labels": {"cluster.x-k8s.io/cluster-name": cluster, **(labels or {})},
    }
    if owners:
        meta["ownerReferences"] = owners
    if finalizer:
        meta["finalizers"] = [finalizer]
    return meta


def flag_conditions(gen: Gen, paused: bool, deleting: bool, g: int) -> list[Obj]:
    ltt = gen.ago(3600, 86_400 * 30)
    return [
        cond(
            "Deleting",
            deleting,
            "Deleting" if deleting else "NotDeleting",
            "Deletion in progress" if deleting else "",
            ltt=ltt,
            generation=g,
        ),
        cond("Paused", paused, "Paused" if paused else "NotPaused", ltt=ltt, generation=g),
    ]


def aggregate(type_: str, states: list[MachineState], attr: str, g: int, ltt: str) -> Obj:
    bad = [s.name for s in states if not getattr(s, attr)]
    if not states:
        return cond(type_, True, "NoReplicas", ltt=ltt, generation=g)
    word = {"ready": "Ready", "up_to_date": "UpToDate"}[attr]
    if not bad:
        return cond(type_, True, word, ltt=ltt, generation=g)
    msg = f"* Machine {bad[0]}:\n  * {'NodeHealthy: Node is not healthy' if attr == 'ready' else 'Version'}"
    return cond(type_, False, f"Not{word}", msg, ltt=ltt, generation=g)


def replica_counts(states: list[MachineState], desired: int) -> Obj:
    ready = sum(s.ready for s in states)
    return {
        "replicas": len(states),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "upToDateReplicas": sum(s.up_to_date for s in states),
        "desiredReplicas": desired,
    }


def machine(
    gen: Gen,
    st: MachineState,
    ns: str,
    cluster: str,
    labels: Obj,
    owners: list[Obj],
    control_plane: bool,
    paused: bool,
    deleting: bool,
) -> Obj:
    g = 2 if control_plane else 1
    ltt = gen.ago(600, 86_400 * 20)
    version = VERSION if st.up_to_date else OLD_VERSION
    ip = f"10.{gen.rng.randrange(256)}.{gen.rng.randrange(256)}.{gen.rng.randrange(1, 255)}"
    node_ok = st.ready and st.node
    conditions = [
        cond("Available", st.ready, "Available" if st.ready else "NotReady", ltt=ltt, generation=g),
        cond(
            "Ready",
            st.ready,
            "Ready" if st.ready else "NotReady",
            "" if st.ready else "* NodeHealthy: Node is not healthy",
            ltt=ltt,
            generation=g,
        ),
        cond(
            "UpToDate",
            st.up_to_date,
            "UpToDate" if st.up_to_date else "NotUpToDate",
            "" if st.up_to_date else f"* Version {OLD_VERSION}, {VERSION} required",
            ltt=ltt,
            generation=g,
        ),
        cond("BootstrapConfigReady", True, "Ready", ltt=ltt, generation=g),
        cond(
            "InfrastructureReady",
            st.node,
            "Ready" if st.node else "NotReady",
            "" if st.node else "DockerMachine status.initialization.provisioned is false",
            ltt=ltt,
            generation=g,
        ),
        cond(
            "NodeReady",
            node_ok if st.node else None,
            "NodeReady" if node_ok else ("NodeNotReady" if st.node else "InspectionFailed"),
            ""
            if node_ok
            else (
                "* Node.Ready: kubelet stopped posting node status"
                if st.node
                else "Waiting for DockerMachine to report spec.providerID"
            ),
            ltt=ltt,
            generation=g,
        ),
        cond(
            "NodeHealthy",
            node_ok if st.node else None,
            "NodeHealthy" if node_ok else ("NodeNotHealthy" if st.node else "InspectionFailed"),
            "" if node_ok else "* Node.Ready: kubelet stopped posting node status",
            ltt=ltt,
            generation=g,
        ),
        cond("Updating", False, "NotUpdating", ltt=ltt, generation=g),
        *flag_conditions(gen, paused, deleting, g),
    ]
    if control_plane:
        for t in (
            "APIServerPodHealthy",
            "ControllerManagerPodHealthy",
            "SchedulerPodHealthy",
            "EtcdPodHealthy",
        ):
            conditions.append(cond(t, st.ready, "Running" if st.ready else "Failed", ltt=ltt, generation=g))
        conditions.append(
            cond(
                "EtcdMemberHealthy", st.ready, "Healthy" if st.ready else "NotHealthy", ltt=ltt, generation=g
            )
        )
    status: Obj = {
        "conditions": conditions,
        "deprecated": {
            "v1beta1": {
                "conditions": [
                    v1beta1_cond("Ready", st.ready, "NodeNotHealthy", ltt=ltt),
                    v1beta1_cond("BootstrapReady", True, ltt=ltt),
                    v1beta1_cond(
                        "InfrastructureReady", st.node, "WaitingForInfrastructure", ltt=ltt, severity="Info"
                    ),
                    v1beta1_cond("NodeHealthy", node_ok, "NodeConditionsFailed", ltt=ltt),
                ]
            }
        },
        "initialization": {"bootstrapDataSecretCreated": True, "infrastructureProvisioned": st.node},
        "lastUpdated": ltt,
        "observedGeneration": g,
        "phase": ("Deleting" if deleting else "Running") if st.node else "Provisioning",
    }
    spec: Obj = {
        "clusterName": cluster,
        "bootstrap": {
            "configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": st.name},
            "dataSecretName": st.name,
        },
        "infrastructureRef": {
            "apiGroup": "infrastructure.cluster.x-k8s.io",
            "kind": "DockerMachine",
            "name": st.name,
        },
        "version": version,
        "failureDomain": f"fd{gen.rng.randrange(1, 4)}",
        "deletion": {"nodeDrainTimeoutSeconds": 0, "nodeDeletionTimeoutSeconds": 10},
    }
    if st.node:
        spec["providerID"] = f"docker:////{st.name}"
        status["nodeRef"] = {"name": st.name}
        status["addresses"] = [
            {"type": "InternalIP", "address": ip},
            {"type": "Hostname", "address": st.name},
        ]
        status["nodeInfo"] = {
            "architecture": "amd64",
            "bootID": gen.uid(),
            "containerRuntimeVersion": "containerd://2.1.1",
            "kernelVersion": "6.8.0-60-generic",
            "kubeProxyVersion": version,
            "kubeletVersion": version,
            "machineID": gen.uid().replace("-", ""),
            "operatingSystem": "linux",
            "osImage": "Ubuntu 24.04.2 LTS",
            "systemUUID": gen.uid(),
        }
    if control_plane:
        status["certificatesExpiryDate"] = gen.ago(-300 * 86_400, -200 * 86_400)
    meta = meta_of(gen, st.name, ns, cluster, labels, g, owners, "machine.cluster.x-k8s.io", st.uid)
    meta["annotations"] = (
        {"controlplane.cluster.x-k8s.io/kubeadm-cluster-configuration": "{}"} if control_plane else {}
    )
    return {"apiVersion": CAPI, "kind": "Machine", "metadata": meta, "spec": spec, "status": status}


def rollup(
    kind: str,
    gen: Gen,
    states: list[MachineState],
    desired: int,
    g: int,
    paused: bool,
    deleting: bool,
    extra: list[Obj],
) -> list[Obj]:
    ltt = gen.ago(600, 86_400 * 20)
    outdated = sum(not s.up_to_date for s in states)
    up, down = len(states) < desired, len(states) > desired
    out = [
        aggregate("MachinesReady", states, "ready", g, ltt),
        aggregate("MachinesUpToDate", states, "up_to_date", g, ltt),
        cond(
            "ScalingUp",
            up,
            "ScalingUp" if up else "NotScalingUp",
            f"Scaling up from {len(states)} to {desired} replicas" if up else "",
            ltt=ltt,
            generation=g,
        ),
        cond("ScalingDown", down, "ScalingDown" if down else "NotScalingDown", ltt=ltt, generation=g),
        cond("Remediating", False, "NotRemediating", ltt=ltt, generation=g),
        *flag_conditions(gen, paused, deleting, g),
        *extra,
    ]
    if kind != "MachineSet":
        out.append(
            cond(
                "RollingOut",
                outdated > 0,
                "RollingOut" if outdated else "NotRollingOut",
                f"Rolling out {outdated} not up-to-date replicas" if outdated else "",
                ltt=ltt,
                generation=g,
            )
        )
    return out


def machine_pool(
    gen: Gen, ns: str, cluster: str, c_owner: list[Obj], paused: bool, deleting: bool
) -> Iterator[Obj]:
    name = f"{cluster}-mp-0"
    ltt = gen.ago(3600, 86_400 * 30)
    nodes = [f"{name}-{gen.suffix()}" for _ in range(3)]
    infra = f"{name}-{gen.suffix()}"
    mp_uid = gen.uid()
    mp_meta = meta_of(gen, name, ns, cluster, None, 1, c_owner, uid=mp_uid)
    yield {
        "apiVersion": INFRA_API,
        "kind": "DockerMachinePool",
        "metadata": meta_of(gen, infra, ns, cluster, None, 1, [owner(CAPI, "MachinePool", name, mp_uid)]),
        "spec": {"providerIDList": [f"docker:////{n}" for n in nodes], "template": {"image": "kindest/node"}},
        "status": {
            "conditions": [cond("Ready", True, "Ready", ltt=ltt)],
            "replicas": 3,
            "ready": True,
            "initialization": {"provisioned": True},
        },
    }
    yield {
        "apiVersion": CAPI,
        "kind": "MachinePool",
        "metadata": mp_meta,
        "spec": {
            "clusterName": cluster,
            "replicas": 3,
            "failureDomains": ["fd1", "fd2"],
            "providerIDList": [f"docker:////{n}" for n in nodes],
            "template": {
                "spec": {
                    "clusterName": cluster,
                    "version": VERSION,
                    "bootstrap": {
                        "configRef": {
                            "apiGroup": "bootstrap.cluster.x-k8s.io",
                            "kind": "KubeadmConfig",
                            "name": name,
                        }
                    },
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "DockerMachinePool",
                        "name": infra,
                    },
                }
            },
        },
        "status": {
            "conditions": flag_conditions(gen, paused, deleting, 1),
            "deprecated": {
                "v1beta1": {
                    "conditions": [
                        v1beta1_cond(t, True, ltt=ltt)
                        for t in ("Ready", "BootstrapReady", "InfrastructureReady", "ReplicasReady")
                    ],
                    "readyReplicas": 3,
                    "availableReplicas": 3,
                    "unavailableReplicas": 0,
                }
            },
            "initialization": {"bootstrapDataSecretCreated": True, "infrastructureProvisioned": True},
            "nodeRefs": [{"name": n} for n in nodes],
            "replicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "upToDateReplicas": 3,
            "observedGeneration": 1,
            "phase": "Running",
        },
    }


def cluster_class(gen: Gen, ns: str) -> Obj:
    ltt = gen.ago(86_400, 86_400 * 90)
    return {
        "apiVersion": CAPI,
        "kind": "ClusterClass",
        "metadata": {
            "name": "quick-start",
            "namespace": ns,
            "uid": gen.uid(),
            "generation": 1,
            "creationTimestamp": ltt,
        },
        "spec": {
            "controlPlane": {
                "templateRef": {
                    "apiVersion": KCP_API,
                    "kind": "KubeadmControlPlaneTemplate",
                    "name": "quick-start-control-plane",
                }
            },
            "workers": {"machineDeployments": [{"class": "default-worker"}]},
        },
        "status": {
            "conditions": [
                cond("VariablesReady", True, "VariablesReady", ltt=ltt, generation=1),
                cond("RefVersionsUpToDate", True, "RefVersionsUpToDate", ltt=ltt, generation=1),
                cond("Paused", False, "NotPaused", ltt=ltt, generation=1),
            ],
            "observedGeneration": 1,
        },
    }


def is_negative(type_: str) -> bool:
    """Conditions whose good state is False (used by the consistency test)."""
    return type_ in NEGATIVE
