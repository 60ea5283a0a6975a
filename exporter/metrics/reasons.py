"""Allow-lists of condition reasons: what may appear in a ``reason`` label.

Owns the bounded set of reasons per condition type (the upstream constants of Cluster API and
Open Cluster Management, plus those the engine uses for computed conditions); any other reason
is exported as ``Other``, so a provider writing free text into ``reason`` cannot grow the
series count. Owns no metric names.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable, Mapping
from typing import Final

import exporter.engine

OTHER: Final = "Other"

# Reasons any condition type may carry (missing input, controller-internal failures).
COMMON: Final = frozenset(
    {"NotYetReported", "InternalError", "InspectionFailed", "ConnectionDown", "NoReasonReported", ""}
)

_MIRRORED = ("Ready", "NotReady", "ReadyUnknown", "ObjectDeleted", "ObjectDoesNotExist")
_SCALING = ("WaitingForReplicasSet",)
_AGG = {
    "Ready": ("Ready", "NotReady", "ReadyUnknown", "NoReplicas"),
    "UpToDate": ("UpToDate", "NotUpToDate", "UpToDateUnknown", "NoReplicas"),
}


def _table(entries: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    return {type_: frozenset(reasons) | COMMON for type_, reasons in entries.items()}


ALLOWED: Final[Mapping[str, frozenset[str]]] = _table(
    {
        # ---- Cluster API v1beta2 (every kind; the union over kinds keeps the table small) ----
        "Available": (
            "Available", "NotAvailable", "AvailableUnknown", "WaitingForReplicasSet",
            "WaitingForAvailableReplicasSet", "WaitingForMinReadySeconds", "NotReady",
        ),
        "Ready": ("Ready", "NotReady", "ReadyUnknown"),
        "Paused": ("Paused", "NotPaused"),
        "Deleting": (
            "NotDeleting", "Deleting", "DeletionCompleted", "WaitingForPreDrainHook", "DrainingNode",
            "WaitingForVolumeDetach", "WaitingForPreTerminateHook", "WaitingForInfrastructureDeletion",
            "WaitingForBootstrapDeletion", "DeletingNode", "WaitingForWorkersDeletion",
            "WaitingForMachineDeletion", "WaitingForControlPlaneDeletion", "WaitingForBeforeDeleteHook",
        ),
        "BootstrapConfigReady": ("DataSecretProvided", *_MIRRORED),
        "InfrastructureReady": _MIRRORED,
        "NodeReady": ("NodeReady", "NodeNotReady", "NodeReadyUnknown", "NodeDeleted", "NodeDoesNotExist"),
        "NodeHealthy": (
            "NodeHealthy", "NodeNotHealthy", "NodeHealthyUnknown", "NodeDeleted", "NodeDoesNotExist",
        ),
        "Updating": ("InPlaceUpdating", "InPlaceUpdateFailed", "NotUpdating"),
        "UpToDate": ("UpToDate", "NotUpToDate", "Updating"),
        "HealthCheckSucceeded": (
            "HealthCheckSucceeded", "UnhealthyNode", "UnhealthyMachine", "NodeStartupTimeout", "NodeDeleted",
            "HasRemediateAnnotation",
        ),
        # KubeadmControlPlane and MachineSet write CannotBeRemediated (retries exhausted, etcd quorum, a
        # single replica), RemediationDeferred and MachineDeleting on the Machines they remediate.
        "OwnerRemediated": (
            "WaitingForRemediation", "RemediationInProgress", "Remediated", "CannotBeRemediated",
            "RemediationDeferred", "MachineDeleting",
        ),
        "ExternallyRemediated": ("WaitingForRemediation", "RemediationInProgress", "Remediated"),
        "ScalingUp": ("ScalingUp", "NotScalingUp", "ScalingUpUnknown", *_SCALING),
        "ScalingDown": ("ScalingDown", "NotScalingDown", "ScalingDownUnknown", *_SCALING),
        "RollingOut": ("RollingOut", "NotRollingOut", "RollingOutUnknown"),
        "Remediating": ("Remediating", "NotRemediating", "RemediatingUnknown"),
        "MachinesReady": _AGG["Ready"],
        "MachinesUpToDate": _AGG["UpToDate"],
        "ControlPlaneMachinesReady": _AGG["Ready"],
        "WorkerMachinesReady": _AGG["Ready"],
        "ControlPlaneMachinesUpToDate": _AGG["UpToDate"],
        "WorkerMachinesUpToDate": _AGG["UpToDate"],
        "Initialized": ("Initialized", "NotInitialized"),
        "ControlPlaneInitialized": ("Initialized", "NotInitialized", "ObjectDoesNotExist"),
        "ControlPlaneAvailable": (
            "Available", "NotAvailable", "AvailableUnknown", "ObjectDeleted", "ObjectDoesNotExist",
        ),
        "WorkersAvailable": ("Available", "NotAvailable", "AvailableUnknown", "NoWorkers"),
        "RemoteConnectionProbe": ("ProbeSucceeded", "ProbeFailed"),
        "CertificatesAvailable": ("Available", "NotAvailable"),
        "EtcdClusterHealthy": ("Healthy", "NotHealthy", "HealthUnknown"),
        "ControlPlaneComponentsHealthy": ("Healthy", "NotHealthy", "HealthUnknown"),
        "APIServerPodHealthy": ("Running", "Provisioning", "Failed", "DoesNotExist", "Deleting"),
        "ControllerManagerPodHealthy": ("Running", "Provisioning", "Failed", "DoesNotExist", "Deleting"),
        "SchedulerPodHealthy": ("Running", "Provisioning", "Failed", "DoesNotExist", "Deleting"),
        "EtcdPodHealthy": ("Running", "Provisioning", "Failed", "DoesNotExist", "Deleting"),
        "EtcdMemberHealthy": ("Healthy", "NotHealthy", "HealthUnknown"),
        "RemediationAllowed": ("RemediationAllowed", "TooManyUnhealthy"),
        "TopologyReconciled": (
            "ReconcileSucceeded", "ReconcileFailed", "ClusterCreating", "ControlPlaneUpgradePending",
            "MachineDeploymentsCreatePending", "MachineDeploymentsUpgradePending",
            "MachineDeploymentsUpgradeDeferred", "MachinePoolsCreatePending", "MachinePoolsUpgradePending",
            "MachinePoolsUpgradeDeferred", "LifecycleHookBlocking", "ClusterUpgrading",
            "ClusterClassNotReconciled", "Deleting", "Paused",
        ),
        "VariablesReady": ("VariablesReady", "VariablesNotReady"),
        # ClusterResourceSet (addons.cluster.x-k8s.io): the v1beta2 reasons, then the v1beta1 ones
        "ResourcesApplied": (
            "Applied", "NotApplied", "WrongSecretType", "RemoteClusterClientFailed", "ClusterMatchFailed",
            "ApplyFailed", "RetrievingResourceFailed",
        ),
        # ExtensionConfig (runtime.cluster.x-k8s.io): v1beta2, then v1beta1
        "Discovered": ("Discovered", "NotDiscovered", "DiscoveryFailed"),
        # ---- Open Cluster Management ----
        "PlacementVerified": (
            "AsExpected", "PlacementDecisionNotFound", "PlacementDecisionEmpty", "NotAsExpected",
        ),
        "PlacementRolledOut": ("Complete", "Completed", "Progressing", "RolloutDegraded"),
        "ManifestworkApplied": (
            "AsExpected", "Processing", "NotAsExpected", "PlacementDecisionEmpty", "InvalidManifestWorkName",
        ),
        "Progressing": (
            "RollingOutToClusters", "Paused", "AllClustersReady", "ConditionRulesAggregated", "Applying",
            "Completed", "Failed",
        ),
        "Applied": ("AppliedManifestWorkComplete", "AppliedManifestWorkFailed"),
        "Degraded": ("ConditionRulesAggregated",),
        "ManagedClusterConditionAvailable": (
            "ManagedClusterAvailable", "ManagedClusterLeaseUpdateStopped",
            "ManagedClusterKubeAPIServerUnavailable",
        ),
        "ManagedClusterJoined": ("ManagedClusterJoined",),
        "HubAcceptedManagedCluster": ("HubClusterAdminAccepted",),
        "ManagedClusterConditionClockSynced": ("ManagedClusterClockSynced", "ManagedClusterClockOutOfSync"),
        "PlacementSatisfied": (
            "AllDecisionsScheduled", "NotAllDecisionsScheduled", "NoManagedClusterSetBindings",
            "NoIntersection", "AllManagedClusterSetsEmpty", "NoManagedClusterMatched",
        ),
        "PlacementMisconfigured": ("Succeedconfigured", "Misconfigured"),
        # ManagedClusterAddOn (its Available and Progressing reasons are in _EXTRA)
        "ManifestApplied": ("AddonManifestApplied", "AddonManifestAppliedFailed", "ManifestWorkApplyFailed"),
        "RegistrationApplied": ("NilRegistration", "SetPermissionFailed", "SetPermissionApplied"),
    }
)

# Conditions whose reason sets are shared between kinds with different meanings get the union:
# the MWRS Ready condition of the OCM proposal and the IPAddressClaim's, the ManifestWork
# Available condition and the ManagedClusterAddOn Available and Progressing conditions (the
# Addon*Reason* and ProgressingReason* constants of open-cluster-management.io/api addon/v1alpha1).
_EXTRA: Final[Mapping[str, frozenset[str]]] = {
    "Ready": frozenset({
        "NotAllClustersAvailable", "AllClustersAvailable",
        # IPAddressClaim (sigs.k8s.io/cluster-api/api ipam/v1beta2)
        "AllocationFailed", "PoolNotReady", "PoolExhausted",
    }),
    "Available": frozenset({
        "ResourcesAvailable", "ResourcesNotAvailable", "ResourcesStatusUnknown",
        "WorkNotFound", "WorkApplyFailed", "WorkNotApplied", "WorkApplied", "NoProbeResult",
        "ProbeUnavailable", "ProbeAvailable", "ManagedClusterAddOnLeaseUpdateStopped",
        "ManagedClusterAddOnLeaseNotFound", "ManagedClusterAddOnLeaseUpdated",
    }),
    "Progressing": frozenset({
        "Progressing", "Completed", "Failed", "WaitingForCanary", "ConfigurationUnsupported",
    }),
    "Deleting": frozenset({"ResourceRemaining", "NoResource", "ResourceError"}),
}


_CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def _engine_reasons() -> frozenset[str]:
    """Every CamelCase string constant of the engine modules: the reasons rules can set.

    The engine is pure and its constants are fixed at import, so this set is bounded; a reason the
    engine copies from a provider's object (a mirrored Ready) is not among them and reads Other.
    """
    found: set[str] = set()
    for info in pkgutil.iter_modules(exporter.engine.__path__, "exporter.engine."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and _CAMEL.match(value):
                found.add(value)
    return frozenset(found)


ENGINE_REASONS: Final = _engine_reasons()


def bounded_reason(type_: str, reason: str, *, computed: bool = False) -> str:
    """The reason itself when allowed for this condition type (or set by an engine rule), else ``Other``."""
    if computed and reason in ENGINE_REASONS:
        return reason
    allowed = ALLOWED.get(type_)
    if allowed is not None and (reason in allowed or reason in _EXTRA.get(type_, ())):
        return reason
    if allowed is None and reason in COMMON:
        return reason
    return OTHER

