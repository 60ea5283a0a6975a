"""Open Cluster Management objects of the benchmark fleet: ManagedClusters, and per MWRS its
Placement, PlacementDecision and one ManifestWork per selected cluster.

Owns the OCM scenario mix (rolled out, mid-rollout after a template change, degraded) and keeps
the objects consistent: a ManifestWork carries the MWRS template as its spec (an older image for
the not-yet-updated ones), the owner and placement labels, and the MWRS summary counts its works.
Shapes follow what the OCM controllers write (see the fixture section of the OCM reference).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from tests.benchmark.fleet import FleetSize, Gen, Obj, cond

WORK_API = "work.open-cluster-management.io/v1"
MWRS_API = "work.open-cluster-management.io/v1alpha1"
CLUSTER_API = "cluster.open-cluster-management.io/v1"
PLACEMENT_API = "cluster.open-cluster-management.io/v1beta1"
OWNER_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
PLACEMENT_LABEL = "work.open-cluster-management.io/placementname"
SCENARIOS = {"complete": 0.90, "rolling": 0.06, "degraded": 0.04}
CLUSTERS_PER_MWRS = (2, 4, 8, 8, 8, 10, 12, 12)  # 8 on average: 4,000 ManifestWorks at 100 %


def _managed_cluster(gen: Gen, name: str) -> Obj:
    ltt = gen.ago(86_400, 86_400 * 120)
    lost = gen.rng.random() < 0.02  # its registration agent stopped renewing the lease
    return {
        "apiVersion": CLUSTER_API,
        "kind": "ManagedCluster",
        "metadata": {
            "name": name,
            "uid": gen.uid(),
            "generation": 2,
            "creationTimestamp": ltt,
            "labels": {
                "cluster.open-cluster-management.io/clusterset": "default",
                "name": name,
                "region": gen.rng.choice(["eu-west", "us-east", "ap-south"]),
            },
            "finalizers": ["cluster.open-cluster-management.io/api-resource-cleanup"],
        },
        "spec": {
            "hubAcceptsClient": True,
            "leaseDurationSeconds": 60,
            "managedClusterClientConfigs": [{"url": f"https://{name}.example.net:6443", "caBundle": "LS0t"}],
        },
        "status": {
            "conditions": [
                cond(
                    "HubAcceptedManagedCluster",
                    True,
                    "HubClusterAdminAccepted",
                    "Accepted by hub cluster admin",
                    ltt=ltt,
                ),
                cond("ManagedClusterJoined", True, "ManagedClusterJoined", "Managed cluster joined", ltt=ltt),
                cond(
                    "ManagedClusterConditionAvailable",
                    None if lost else True,
                    "ManagedClusterLeaseUpdateStopped" if lost else "ManagedClusterAvailable",
                    "Registration agent stopped updating its lease."
                    if lost
                    else "Managed cluster is available",
                    ltt=ltt,
                ),
                cond(
                    "ManagedClusterConditionClockSynced",
                    True,
                    "ManagedClusterClockSynced",
                    "The clock of the managed cluster is synced with the hub.",
                    ltt=ltt,
                ),
            ],
            "version": {"kubernetes": "v1.33.1"},
            "capacity": {"cpu": "32", "memory": "131900000Ki"},
            "allocatable": {"cpu": "31", "memory": "128000000Ki"},
            "clusterClaims": [{"name": "id.k8s.io", "value": gen.uid()}],
        },
    }


def _template(app: str, image_tag: str) -> Obj:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app, "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": app, "image": f"quay.io/example/{app}:{image_tag}"}]},
            },
        },
    }
    rules = [
        {
            "type": "CEL",
            "condition": "Progressing",
            "celExpressions": ["!(object.metadata.generation == object.status.observedGeneration)"],
            "messageExpression": "result ? 'Applying' : 'Completed'",
        }
    ]
    return {
        "workload": {"manifests": [deployment]},
        "deleteOption": {"propagationPolicy": "Foreground"},
        "manifestConfigs": [
            {
                "resourceIdentifier": {
                    "group": "apps",
                    "resource": "deployments",
                    "name": app,
                    "namespace": "default",
                },
                "conditionRules": rules,
                "feedbackRules": [
                    {"type": "JSONPaths", "jsonPaths": [{"name": "replicas", "path": ".status.replicas"}]}
                ],
            }
        ],
    }


def _work(
    gen: Gen,
    mwrs: str,
    ns: str,
    cluster: str,
    placement: str,
    spec: Obj,
    applied: bool,
    progressing: bool,
    degraded: bool,
) -> Obj:
    ltt = gen.ago(600, 86_400 * 20)
    g = 2
    app = spec["workload"]["manifests"][0]["metadata"]["name"]
    manifest_conds = [
        cond("Applied", applied, "AppliedManifestComplete", "Apply manifest complete", ltt=ltt),
        cond(
            "Available",
            not degraded,
            "ResourceAvailable" if not degraded else "ResourceNotAvailable",
            "Resource is available",
            ltt=ltt,
        ),
        cond(
            "Progressing",
            progressing,
            "ConditionRuleEvaluated",
            "Applying" if progressing else "Completed",
            ltt=ltt,
        ),
    ]
    return {
        "apiVersion": WORK_API,
        "kind": "ManifestWork",
        "metadata": {
            "name": f"{mwrs}-{gen.suffix()}",
            "namespace": cluster,
            "uid": gen.uid(),
            "generation": g,
            "creationTimestamp": gen.ago(86_400, 86_400 * 60),
            "labels": {OWNER_LABEL: f"{ns}.{mwrs}", PLACEMENT_LABEL: placement},
            "finalizers": ["cluster.open-cluster-management.io/manifest-work-cleanup"],
        },
        "spec": copy.deepcopy(spec),
        "status": {
            "conditions": [
                cond(
                    "Applied",
                    applied,
                    "AppliedManifestWorkComplete",
                    "Apply manifest work complete",
                    ltt=ltt,
                    generation=g,
                ),
                cond(
                    "Available",
                    not degraded,
                    "ResourcesAvailable" if not degraded else "ResourcesNotAvailable",
                    "All resources are available" if not degraded else "1 of 1 resources are not available",
                    ltt=ltt,
                    generation=g,
                ),
                cond(
                    "Progressing",
                    progressing,
                    "ConditionRulesAggregated",
                    "Applying" if progressing else "Completed",
                    ltt=ltt,
                    generation=g,
                ),
            ],
            "resourceStatus": {
                "manifests": [
                    {
                        "resourceMeta": {
                            "ordinal": 0,
                            "group": "apps",
                            "version": "v1",
                            "kind": "Deployment",
                            "resource": "deployments",
                            "name": app,
                            "namespace": "default",
                        },
                        "conditions": manifest_conds,
                        "statusFeedback": {
                            "values": [{"name": "replicas", "fieldValue": {"type": "Integer", "integer": 2}}]
                        },
                    }
                ]
            },
        },
    }


def _mwrs_objects(gen: Gen, index: int, size: FleetSize, clusters: list[str]) -> Iterator[Obj]:
    ns = f"apps-{index // size.mwrs_per_namespace:02d}"
    name = f"app-{index:04d}"
    placement = f"{name}-placement"
    scenario = gen.pick(SCENARIOS)
    k = min(CLUSTERS_PER_MWRS[index % len(CLUSTERS_PER_MWRS)], len(clusters))
    start = (index * 7) % len(clusters)
    selected = [clusters[(start + i) % len(clusters)] for i in range(k)]
    spec = _template(name, "v2.4.0")
    old_spec = _template(name, "v2.3.1")
    ltt = gen.ago(600, 86_400 * 30)
    p_uid = gen.uid()
    yield {
        "apiVersion": PLACEMENT_API,
        "kind": "Placement",
        "metadata": {
            "name": placement,
            "namespace": ns,
            "uid": p_uid,
            "generation": 1,
            "creationTimestamp": ltt,
        },
        "spec": {
            "clusterSets": ["default"],
            "numberOfClusters": k,
            "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "100%"}},
        },
        "status": {
            "numberOfSelectedClusters": k,
            "decisionGroups": [
                {
                    "decisionGroupIndex": 0,
                    "decisionGroupName": "",
                    "decisions": [f"{placement}-decision-1"],
                    "clusterCount": k,
                }
            ],
            "conditions": [
                cond(
                    "PlacementMisconfigured",
                    False,
                    "Succeedconfigured",
                    "Placement configurations check pass",
                    ltt=ltt,
                ),
                cond(
                    "PlacementSatisfied",
                    True,
                    "AllDecisionsScheduled",
                    "All cluster decisions scheduled",
                    ltt=ltt,
                ),
            ],
        },
    }
    yield {
        "apiVersion": PLACEMENT_API,
        "kind": "PlacementDecision",
        "metadata": {
            "name": f"{placement}-decision-1",
            "namespace": ns,
            "uid": gen.uid(),
            "generation": 1,
            "creationTimestamp": ltt,
            "labels": {
                "cluster.open-cluster-management.io/placement": placement,
                "cluster.open-cluster-management.io/decision-group-index": "0",
                "cluster.open-cluster-management.io/decision-group-name": "",
            },
            "ownerReferences": [
                {
                    "apiVersion": PLACEMENT_API,
                    "kind": "Placement",
                    "name": placement,
                    "uid": p_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in selected]},
    }
    available = progressing = degraded = 0
    for i, cluster in enumerate(selected):
        outdated = scenario == "rolling" and i >= k // 2
        is_progressing = scenario == "rolling" and i == k // 2 - 1
        is_degraded = scenario == "degraded" and i == 0
        available += not is_degraded
        progressing += is_progressing
        degraded += is_degraded
        yield _work(
            gen,
            name,
            ns,
            cluster,
            placement,
            old_spec if outdated else spec,
            True,
            is_progressing or is_degraded,
            is_degraded,
        )
    done = scenario == "complete"
    summary = {"total": k, "applied": k, "available": available}
    if progressing:
        summary["progressing"] = progressing
    if degraded:
        summary["degraded"] = degraded
    yield {
        "apiVersion": MWRS_API,
        "kind": "ManifestWorkReplicaSet",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": gen.uid(),
            "generation": 3,
            "creationTimestamp": ltt,
            "finalizers": ["work.open-cluster-management.io/manifest-work-cleanup"],
        },
        "spec": {
            "cascadeDeletionPolicy": "Background",
            "placementRefs": [
                {
                    "name": placement,
                    "rolloutStrategy": {
                        "type": "Progressive",
                        "progressive": {
                            "minSuccessTime": "1m",
                            "progressDeadline": "10m",
                            "maxFailures": "5%",
                            "maxConcurrency": 2,
                        },
                    },
                }
            ],
            "manifestWorkTemplate": spec,
        },
        "status": {
            "conditions": [
                cond("PlacementVerified", True, "AsExpected", ltt=ltt),
                cond("PlacementRolledOut", done, "Complete" if done else "Progressing", ltt=ltt),
                cond(
                    "ManifestworkApplied",
                    scenario != "degraded",
                    "AsExpected" if scenario != "degraded" else "NotAsExpected",
                    ltt=ltt,
                ),
            ],
            "placementSummary": [
                {
                    "name": placement,
                    "availableDecisionGroups": f"1 ({k if done else k // 2} / {k} clusters applied)",
                    "summary": {
                        "total": k,
                        "applied": k,
                        "available": available,
                        "progressing": progressing,
                        "degraded": degraded,
                        "desiredTotal": 0,
                        "updated": 0,
                    },
                }
            ],
            "summary": summary,
        },
    }


def ocm_objects(size: FleetSize, gen: Gen) -> Iterator[Obj]:
    clusters = [f"mc-{i:04d}" for i in range(size.managed_clusters)]
    for name in clusters:
        yield _managed_cluster(gen, name)
    for index in range(size.mwrs):
        yield from _mwrs_objects(gen, index, size, clusters)
