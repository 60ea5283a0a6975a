"""Cluster API objects of the benchmark fleet, Cluster by Cluster.

Owns the per-Cluster scenario mix (healthy, rolling out, an unhealthy Node, scaling up, paused,
deleting) and the objects of each Cluster: KubeadmControlPlane with its Machines,
MachineDeployments with one MachineSet each and their Machines, every fifth Cluster's MachinePool,
the Cluster itself, and one ClusterClass per namespace. Counters and conditions of the owners are
derived from the Machines' states (``fleet_machines.py``), so the objects agree with each other the
way a reconciled hub's do. Sizes and shared helpers live in ``fleet.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

from tests.benchmark.fleet import FleetSize, Gen, Obj, cond, owner, v1beta1_cond
from tests.benchmark.fleet_machines import (
    CAPI,
    KCP_API,
    VERSION,
    MachineState,
    aggregate,
    cluster_class,
    machine,
    machine_pool,
    meta_of,
    replica_counts,
    rollup,
)

SCENARIOS = {
    "healthy": 0.86,
    "rollout": 0.05,
    "unhealthy": 0.04,
    "scaling": 0.03,
    "paused": 0.01,
    "deleting": 0.01,
}


def _cluster_objects(size: FleetSize, gen: Gen, index: int, md_base: int) -> Iterator[Obj]:
    ns = f"fleet-{index // size.clusters_per_namespace:02d}"
    name = f"wl-{index:04d}"
    scenario = gen.pick(SCENARIOS)
    paused, deleting = scenario == "paused", scenario == "deleting"
    c_uid = gen.uid()
    c_owner = [owner(CAPI, "Cluster", name, c_uid)]
    # Control plane
    kcp_name = f"{name}-control-plane"
    kcp_uid = gen.uid()
    cp_states = [MachineState(f"{kcp_name}-{gen.suffix()}", gen.uid()) for _ in range(size.cp_replicas)]
    if scenario == "rollout":
        cp_states[0].up_to_date = False
    cp_labels = {"cluster.x-k8s.io/control-plane": "", "cluster.x-k8s.io/control-plane-name": kcp_name}
    kcp_owner = [owner(KCP_API, "KubeadmControlPlane", kcp_name, kcp_uid)]
    for st in cp_states:
        yield machine(gen, st, ns, name, cp_labels, kcp_owner, True, paused, deleting)
    ltt = gen.ago(3600, 86_400 * 60)
    cp_ok = all(s.ready for s in cp_states)
    kcp_conditions = rollup(
        "KubeadmControlPlane",
        gen,
        cp_states,
        size.cp_replicas,
        1,
        paused,
        deleting,
        [
            cond(
                "Available",
                cp_ok and not deleting,
                "Available" if cp_ok else "NotAvailable",
                ltt=ltt,
                generation=1,
            ),
            cond("CertificatesAvailable", True, "Available", ltt=ltt, generation=1),
            cond("Initialized", True, "Initialized", ltt=ltt, generation=1),
            cond("EtcdClusterHealthy", True, "Healthy", ltt=ltt, generation=1),
            cond("ControlPlaneComponentsHealthy", True, "Healthy", ltt=ltt, generation=1),
        ],
    )
    counts = replica_counts(cp_states, size.cp_replicas)
    counts.pop("desiredReplicas")
    yield {
        "apiVersion": KCP_API,
        "kind": "KubeadmControlPlane",
        "metadata": meta_of(
            gen, kcp_name, ns, name, None, 1, c_owner, "kubeadm.controlplane.cluster.x-k8s.io", kcp_uid
        ),
        "spec": {
            "replicas": size.cp_replicas,
            "version": VERSION,
            "machineTemplate": {
                "spec": {
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "DockerMachineTemplate",
                        "name": f"{kcp_name}-{gen.suffix()}",
                    }
                }
            },
            "kubeadmConfigSpec": {"clusterConfiguration": {"apiServer": {"certSANs": ["localhost"]}}},
            "rollout": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        },
        "status": {
            "conditions": kcp_conditions,
            **counts,
            "deprecated": {
                "v1beta1": {
                    "conditions": [v1beta1_cond("Ready", cp_ok, "MachinesNotReady", ltt=ltt)],
                    "readyReplicas": counts["readyReplicas"],
                    "updatedReplicas": counts["upToDateReplicas"],
                    "unavailableReplicas": 0,
                }
            },
            "initialization": {"controlPlaneInitialized": True},
            "observedGeneration": 1,
            "selector": f"cluster.x-k8s.io/cluster-name={name},cluster.x-k8s.io/control-plane",
            "version": VERSION,
        },
    }
    # Workers
    worker_states: list[MachineState] = []
    md_available = []
    for j in range(size.md_per_cluster):
        md_name = f"{name}-md-{j}"
        md_uid, ms_uid = gen.uid(), gen.uid()
        ms_name = f"{md_name}-{gen.suffix()}"
        replicas = size.workers_of(md_base + j)
        states = [MachineState(f"{ms_name}-{gen.suffix()}", gen.uid()) for _ in range(replicas)]
        desired = replicas
        if scenario == "rollout" and j == 0:
            for st in states[: len(states) // 2]:
                st.up_to_date = False
        if scenario == "unhealthy" and j == 0 and states:
            states[0].ready = False
        if scenario == "scaling" and j == size.md_per_cluster - 1:
            desired = replicas + 2
            states += [
                MachineState(f"{ms_name}-{gen.suffix()}", gen.uid(), False, True, False) for _ in range(2)
            ]
        worker_states += states
        labels = {
            "cluster.x-k8s.io/deployment-name": md_name,
            "cluster.x-k8s.io/set-name": ms_name,
            "machine-template-hash": str(gen.rng.randrange(10**9)),
        }
        ms_owner = [owner(CAPI, "MachineSet", ms_name, ms_uid)]
        for st in states:
            yield machine(gen, st, ns, name, labels, ms_owner, False, paused, deleting)
        counts = replica_counts(states, desired)
        counts.pop("desiredReplicas")
        available = counts["availableReplicas"] >= desired
        md_available.append(available)
        template = {
            "clusterName": name,
            "version": VERSION,
            "failureDomain": "fd1",
            "bootstrap": {
                "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io",
                    "kind": "KubeadmConfigTemplate",
                    "name": f"{md_name}-{gen.suffix()}",
                }
            },
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DockerMachineTemplate",
                "name": f"{md_name}-{gen.suffix()}",
            },
        }
        selector = {
            "matchLabels": {
                "cluster.x-k8s.io/cluster-name": name,
                "cluster.x-k8s.io/deployment-name": md_name,
            }
        }
        ms_conditions = rollup("MachineSet", gen, states, desired, 1, paused, deleting, [])
        yield {
            "apiVersion": CAPI,
            "kind": "MachineSet",
            "metadata": meta_of(
                gen,
                ms_name,
                ns,
                name,
                {"cluster.x-k8s.io/deployment-name": md_name},
                1,
                [owner(CAPI, "MachineDeployment", md_name, md_uid)],
                uid=ms_uid,
            ),
            "spec": {
                "clusterName": name,
                "replicas": desired,
                "selector": selector,
                "template": {"metadata": {"labels": labels}, "spec": template},
            },
            "status": {
                "conditions": ms_conditions,
                **counts,
                "observedGeneration": 1,
                "selector": f"cluster.x-k8s.io/cluster-name={name}",
            },
        }
        md_extra = [
            cond(
                "Available",
                available,
                "Available" if available else "NotAvailable",
                ""
                if available
                else f"{counts['availableReplicas']} available replicas, at least "
                f"{desired} required (spec.strategy.rollout.maxUnavailable is 0, spec.replicas is "
                f"{desired})",
                ltt=ltt,
                generation=1,
            )
        ]
        phase = "Running" if len(states) == desired else "ScalingUp"
        yield {
            "apiVersion": CAPI,
            "kind": "MachineDeployment",
            "metadata": meta_of(
                gen,
                md_name,
                ns,
                name,
                {"topology.cluster.x-k8s.io/deployment-name": f"md-{j}"},
                1,
                c_owner,
                uid=md_uid,
            ),
            "spec": {
                "clusterName": name,
                "replicas": desired,
                "selector": selector,
                "rollout": {
                    "strategy": {
                        "type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
                    }
                },
                "template": {"metadata": {"labels": selector["matchLabels"]}, "spec": template},
            },
            "status": {
                "conditions": rollup(
                    "MachineDeployment", gen, states, desired, 1, paused, deleting, md_extra
                ),
                **counts,
                "observedGeneration": 1,
                "phase": phase,
                "deprecated": {
                    "v1beta1": {
                        "conditions": [
                            v1beta1_cond("Ready", available, "WaitingForAvailableMachines", ltt=ltt)
                        ]
                    }
                },
            },
        }
    # MachinePool on every ``pool_every``-th Cluster
    if index % size.pool_every == 0:
        yield from machine_pool(gen, ns, name, c_owner, paused, deleting)
    # The Cluster itself
    workers_ok = all(md_available)
    available = cp_ok and workers_ok and not deleting
    ltt = gen.ago(3600, 86_400 * 60)
    cl_conditions = [
        cond(
            "Available",
            available,
            "Available" if available else "NotAvailable",
            "" if available else "* WorkersAvailable: not enough available replicas",
            ltt=ltt,
            generation=1,
        ),
        cond("InfrastructureReady", True, "Ready", ltt=ltt, generation=1),
        cond("ControlPlaneAvailable", cp_ok, "Available" if cp_ok else "NotAvailable", ltt=ltt, generation=1),
        cond("ControlPlaneInitialized", True, "Initialized", ltt=ltt, generation=1),
        cond(
            "WorkersAvailable",
            workers_ok,
            "Available" if workers_ok else "NotAvailable",
            ltt=ltt,
            generation=1,
        ),
        cond("RemoteConnectionProbe", True, "ProbeSucceeded", ltt=ltt, generation=1),
        cond("TopologyReconciled", True, "ReconcileSucceeded", ltt=ltt, generation=1),
        aggregate("ControlPlaneMachinesReady", cp_states, "ready", 1, ltt),
        aggregate("WorkerMachinesReady", worker_states, "ready", 1, ltt),
        aggregate("ControlPlaneMachinesUpToDate", cp_states, "up_to_date", 1, ltt),
        aggregate("WorkerMachinesUpToDate", worker_states, "up_to_date", 1, ltt),
        *[
            c
            for c in rollup("Cluster", gen, [], 0, 1, paused, deleting, [])
            if c["type"] in {"RollingOut", "ScalingUp", "ScalingDown", "Remediating", "Deleting", "Paused"}
        ],
    ]
    meta = meta_of(
        gen,
        name,
        ns,
        name,
        {"topology.cluster.x-k8s.io/owned": ""},
        1,
        None,
        "cluster.cluster.x-k8s.io",
        c_uid,
    )
    if deleting:
        meta["deletionTimestamp"] = gen.ago(60, 1800)
    workers_desired = sum(size.workers_of(md_base + j) for j in range(size.md_per_cluster))
    yield {
        "apiVersion": CAPI,
        "kind": "Cluster",
        "metadata": meta,
        "spec": {
            "paused": paused,
            "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}, "serviceDomain": "cluster.local"},
            "controlPlaneEndpoint": {"host": f"{name}.{ns}.example.net", "port": 6443},
            "controlPlaneRef": {
                "apiGroup": "controlplane.cluster.x-k8s.io",
                "kind": "KubeadmControlPlane",
                "name": kcp_name,
            },
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DockerCluster",
                "name": f"{name}-{gen.suffix()}",
            },
            "topology": {
                "classRef": {"name": "quick-start"},
                "version": VERSION,
                "controlPlane": {"replicas": size.cp_replicas},
                "workers": {
                    "machineDeployments": [
                        {"class": "default-worker", "name": f"md-{j}"} for j in range(size.md_per_cluster)
                    ]
                },
            },
        },
        "status": {
            "conditions": cl_conditions,
            "deprecated": {
                "v1beta1": {"conditions": [v1beta1_cond("Ready", available, "NotReady", ltt=ltt)]}
            },
            "controlPlane": replica_counts(cp_states, size.cp_replicas),
            "workers": replica_counts(worker_states, workers_desired),
            "initialization": {"infrastructureProvisioned": True, "controlPlaneInitialized": True},
            "observedGeneration": 1,
            "phase": "Deleting" if deleting else "Provisioned",
        },
    }


def capi_objects(size: FleetSize, gen: Gen) -> Iterator[Obj]:
    for ns_index in range((size.clusters + size.clusters_per_namespace - 1) // size.clusters_per_namespace):
        yield cluster_class(gen, f"fleet-{ns_index:02d}")
    for i in range(size.clusters):
        yield from _cluster_objects(size, gen, i, i * size.md_per_cluster)
