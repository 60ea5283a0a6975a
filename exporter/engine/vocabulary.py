"""The condition vocabulary: every condition type, reason and phase string, declared once.

Owns the names the rules set and read, the phases they compute, and, per condition type, the
reasons that may appear in a ``reason`` label (``ALLOWED``: the upstream constants of Cluster API
and Open Cluster Management, with those the engine sets): any other reason is exported as
``Other`` (``exporter.metrics.reasons``), so a provider writing free text into ``reason`` cannot grow
the series count. Rules, the parser, the metrics and the CLI import these names; a string here is
written nowhere else in the package (tests/test_layers.py). Owns no rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

# ---- condition types (v1beta2, the v1beta1 ones the engine reads, OCM) ----

API_SERVER_POD_HEALTHY: Final = "APIServerPodHealthy"
APPLIED: Final = "Applied"
AVAILABLE: Final = "Available"
BOOTSTRAP_CONFIG_READY: Final = "BootstrapConfigReady"
BOOTSTRAP_READY: Final = "BootstrapReady"
CERTIFICATES_AVAILABLE: Final = "CertificatesAvailable"
CONTROL_PLANE_AVAILABLE: Final = "ControlPlaneAvailable"
CONTROL_PLANE_COMPONENTS_HEALTHY: Final = "ControlPlaneComponentsHealthy"
CONTROL_PLANE_INITIALIZED: Final = "ControlPlaneInitialized"
CONTROL_PLANE_MACHINES_READY: Final = "ControlPlaneMachinesReady"
CONTROL_PLANE_MACHINES_UP_TO_DATE: Final = "ControlPlaneMachinesUpToDate"
CONTROLLER_MANAGER_POD_HEALTHY: Final = "ControllerManagerPodHealthy"
DEGRADED: Final = "Degraded"
DELETING: Final = "Deleting"
DISCOVERED: Final = "Discovered"
DRAINING_SUCCEEDED: Final = "DrainingSucceeded"
ETCD_CLUSTER_HEALTHY: Final = "EtcdClusterHealthy"
ETCD_MEMBER_HEALTHY: Final = "EtcdMemberHealthy"
ETCD_POD_HEALTHY: Final = "EtcdPodHealthy"
HEALTH_CHECK_SUCCEEDED: Final = "HealthCheckSucceeded"
INFRASTRUCTURE_READY: Final = "InfrastructureReady"
INITIALIZED: Final = "Initialized"
MACHINES_READY: Final = "MachinesReady"
MACHINES_UP_TO_DATE: Final = "MachinesUpToDate"
MANAGED_CLUSTER_CONDITION_AVAILABLE: Final = "ManagedClusterConditionAvailable"
MANAGED_CLUSTER_JOINED: Final = "ManagedClusterJoined"
MANIFEST_WORK_APPLIED: Final = "ManifestWorkApplied"
NODE_HEALTHY: Final = "NodeHealthy"
NODE_READY: Final = "NodeReady"
OWNER_REMEDIATED: Final = "OwnerRemediated"
PAUSED: Final = "Paused"
PLACEMENT_ROLLED_OUT: Final = "PlacementRolledOut"
PLACEMENT_VERIFIED: Final = "PlacementVerified"
PRE_DRAIN_DELETE_HOOK_SUCCEEDED: Final = "PreDrainDeleteHookSucceeded"
PRE_TERMINATE_DELETE_HOOK_SUCCEEDED: Final = "PreTerminateDeleteHookSucceeded"
PROGRESSING: Final = "Progressing"
READY: Final = "Ready"
REMEDIATING: Final = "Remediating"
REMEDIATION_ALLOWED: Final = "RemediationAllowed"
REMEDIATION_BLOCKED: Final = "RemediationBlocked"
REMOTE_CONNECTION_PROBE: Final = "RemoteConnectionProbe"
REPLICAS_READY: Final = "ReplicasReady"
ROLLING_OUT: Final = "RollingOut"
SCALING_DOWN: Final = "ScalingDown"
SCALING_UP: Final = "ScalingUp"
SCHEDULER_POD_HEALTHY: Final = "SchedulerPodHealthy"
TOPOLOGY_RECONCILED: Final = "TopologyReconciled"
UP_TO_DATE: Final = "UpToDate"
UPDATING: Final = "Updating"
VARIABLES_READY: Final = "VariablesReady"
VOLUME_DETACH_SUCCEEDED: Final = "VolumeDetachSucceeded"
WORKER_MACHINES_READY: Final = "WorkerMachinesReady"
WORKER_MACHINES_UP_TO_DATE: Final = "WorkerMachinesUpToDate"
WORKERS_AVAILABLE: Final = "WorkersAvailable"

# ---- reasons ----
ALL_CLUSTERS_AVAILABLE: Final = "AllClustersAvailable"
ALL_CLUSTERS_READY: Final = "AllClustersReady"
AS_EXPECTED: Final = "AsExpected"
AVAILABLE_UNKNOWN: Final = "AvailableUnknown"
CLUSTER_CLASS_NOT_RECONCILED: Final = "ClusterClassNotReconciled"
COMPLETED: Final = "Completed"
CONDITION_RULES_AGGREGATED: Final = "ConditionRulesAggregated"
CONNECTION_DOWN: Final = "ConnectionDown"
DATA_SECRET_PROVIDED: Final = "DataSecretProvided"
DELETION_COMPLETED: Final = "DeletionCompleted"
DOES_NOT_EXIST: Final = "DoesNotExist"
DRAINING_NODE: Final = "DrainingNode"
FAILED: Final = "Failed"
HEALTH_UNKNOWN: Final = "HealthUnknown"
HEALTHY: Final = "Healthy"
IN_PLACE_UPDATING: Final = "InPlaceUpdating"
INPUTS_UNREADABLE: Final = "InputsUnreadable"
INSPECTION_FAILED: Final = "InspectionFailed"
INTERNAL_ERROR: Final = "InternalError"
INVALID_MANIFEST_WORK_NAME: Final = "InvalidManifestWorkName"
NO_CLUSTERS_SELECTED: Final = "NoClustersSelected"
NO_REASON_REPORTED: Final = "NoReasonReported"
NO_REPLICAS: Final = "NoReplicas"
NO_WORKERS: Final = "NoWorkers"
NODE_DELETED: Final = "NodeDeleted"
NODE_DOES_NOT_EXIST: Final = "NodeDoesNotExist"
NOT_ALL_CLUSTERS_AVAILABLE: Final = "NotAllClustersAvailable"
NOT_AS_EXPECTED: Final = "NotAsExpected"
NOT_AVAILABLE: Final = "NotAvailable"
NOT_DELETING: Final = "NotDeleting"
NOT_HEALTHY: Final = "NotHealthy"
NOT_INITIALIZED: Final = "NotInitialized"
NOT_PAUSED: Final = "NotPaused"
NOT_READY: Final = "NotReady"
NOT_REMEDIATING: Final = "NotRemediating"
NOT_ROLLING_OUT: Final = "NotRollingOut"
NOT_SCALING_DOWN: Final = "NotScalingDown"
NOT_SCALING_UP: Final = "NotScalingUp"
NOT_UP_TO_DATE: Final = "NotUpToDate"
NOT_UPDATING: Final = "NotUpdating"
NOT_YET_REPORTED: Final = "NotYetReported"
OBJECT_DELETED: Final = "ObjectDeleted"
OBJECT_DOES_NOT_EXIST: Final = "ObjectDoesNotExist"
PLACEMENT_DECISION_EMPTY: Final = "PlacementDecisionEmpty"
PLACEMENT_DECISION_NOT_FOUND: Final = "PlacementDecisionNotFound"
PLACEMENT_NOT_FOUND: Final = "PlacementNotFound"
PLACEMENT_NOT_VERIFIED: Final = "PlacementNotVerified"
PLACEMENT_SUMMARY_MISSING: Final = "PlacementSummaryMissing"
PROGRESSING_RULE_MISSING: Final = "ProgressingRuleMissing"
PROVISIONING: Final = "Provisioning"
READY_UNKNOWN: Final = "ReadyUnknown"
RECONCILE_FAILED: Final = "ReconcileFailed"
RECONCILE_SUCCEEDED: Final = "ReconcileSucceeded"
REMEDIATED: Final = "Remediated"
REMEDIATION_IN_PROGRESS: Final = "RemediationInProgress"
ROLLING_OUT_TO_CLUSTERS: Final = "RollingOutToClusters"
ROLLING_OUT_UNKNOWN: Final = "RollingOutUnknown"
ROLLOUT_DEGRADED: Final = "RolloutDegraded"
RUNNING: Final = "Running"
SCALING_DOWN_UNKNOWN: Final = "ScalingDownUnknown"
SCALING_UP_UNKNOWN: Final = "ScalingUpUnknown"
SELECTED_CLUSTERS_UNKNOWN: Final = "SelectedClustersUnknown"
TERMINAL_FAILURE: Final = "TerminalFailure"
TOO_MANY_UNHEALTHY: Final = "TooManyUnhealthy"
UP_TO_DATE_UNKNOWN: Final = "UpToDateUnknown"
WAITING_FOR_AVAILABLE_REPLICAS_SET: Final = "WaitingForAvailableReplicasSet"
WAITING_FOR_BEFORE_DELETE_HOOK: Final = "WaitingForBeforeDeleteHook"
WAITING_FOR_CONTROL_PLANE_DELETION: Final = "WaitingForControlPlaneDeletion"
WAITING_FOR_INFRASTRUCTURE_DELETION: Final = "WaitingForInfrastructureDeletion"
WAITING_FOR_MACHINE_DELETION: Final = "WaitingForMachineDeletion"
WAITING_FOR_MIN_READY_SECONDS: Final = "WaitingForMinReadySeconds"
WAITING_FOR_PRE_DRAIN_HOOK: Final = "WaitingForPreDrainHook"
WAITING_FOR_PRE_TERMINATE_HOOK: Final = "WaitingForPreTerminateHook"
WAITING_FOR_REMEDIATION: Final = "WaitingForRemediation"
WAITING_FOR_REPLICAS_SET: Final = "WaitingForReplicasSet"
WAITING_FOR_VOLUME_DETACH: Final = "WaitingForVolumeDetach"
WAITING_FOR_WORKERS_DELETION: Final = "WaitingForWorkersDeletion"

# ---- phases (status.phase, and the rollout status of one cluster's ManifestWork) ----
DELETED: Final = "Deleted"
PENDING: Final = "Pending"
PROVISIONED: Final = "Provisioned"
SCALING: Final = "Scaling"
SUCCEEDED: Final = "Succeeded"
TO_APPLY: Final = "ToApply"
UNAVAILABLE: Final = "Unavailable"

# The v1beta1 deletion progress conditions of a Machine (False while waiting), in the order the
# Machine controller goes through them, each with the v1beta2 Deleting reason of that stage.
MACHINE_DELETION_STAGES: Final = (
    (PRE_DRAIN_DELETE_HOOK_SUCCEEDED, WAITING_FOR_PRE_DRAIN_HOOK),
    (DRAINING_SUCCEEDED, DRAINING_NODE),
    (VOLUME_DETACH_SUCCEEDED, WAITING_FOR_VOLUME_DETACH),
    (PRE_TERMINATE_DELETE_HOOK_SUCCEEDED, WAITING_FOR_PRE_TERMINATE_HOOK),
)
# The deprecated v1beta1 conditions of a Machine that also has v1beta2 ones: the rules read only
# the deletion stages, and nothing renders v1beta1 conditions. The projection keeps just these (a
# Machine carries ~4 others: ~80,000 objects, ~8 MB, at fleet size).
MACHINE_V1BETA1_READ: Final = frozenset(source_type for source_type, _ in MACHINE_DELETION_STAGES)

# The counter of a KubeadmControlPlane's Result that says whether the Machine it last remediated
# still exists (status.lastRemediation.machine, looked up among the group's Machines).
LAST_REMEDIATION_MACHINE_PRESENT: Final = "lastRemediation.machinePresent"

# Reasons any condition type may carry (missing input, controller-internal failures).
COMMON: Final = frozenset({
    CONNECTION_DOWN, INSPECTION_FAILED, INTERNAL_ERROR, NO_REASON_REPORTED, NOT_YET_REPORTED, "",
})


def _table(entries: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    return {type_: frozenset(reasons) | COMMON for type_, reasons in entries.items()}


# Condition types shared between kinds with different meanings get the union of their reasons:
# the MWRS Ready of the OCM proposal and the IPAddressClaim's, the ManifestWork Available and the
# ManagedClusterAddOn Available and Progressing (the Addon*Reason* and ProgressingReason* constants
# of open-cluster-management.io/api addon/v1alpha1).
ALLOWED: Final[Mapping[str, frozenset[str]]] = _table(
    {
        AVAILABLE: (
            AVAILABLE, AVAILABLE_UNKNOWN, "ManagedClusterAddOnLeaseNotFound",
            "ManagedClusterAddOnLeaseUpdateStopped", "ManagedClusterAddOnLeaseUpdated", "NoProbeResult",
            NOT_AVAILABLE, NOT_READY, "ProbeAvailable", "ProbeUnavailable", "ResourcesAvailable",
            "ResourcesNotAvailable", "ResourcesStatusUnknown", WAITING_FOR_AVAILABLE_REPLICAS_SET,
            WAITING_FOR_MIN_READY_SECONDS, WAITING_FOR_REPLICAS_SET, "WorkApplied", "WorkApplyFailed",
            "WorkNotApplied", "WorkNotFound"
        ),
        READY: (
            ALL_CLUSTERS_AVAILABLE, "AllocationFailed", NOT_ALL_CLUSTERS_AVAILABLE, NOT_READY,
            "PoolExhausted", "PoolNotReady", READY, READY_UNKNOWN
        ),
        PAUSED: (NOT_PAUSED, PAUSED),
        DELETING: (
            DELETING, "DeletingNode", DELETION_COMPLETED, DRAINING_NODE, "NoResource", NOT_DELETING,
            "ResourceError", "ResourceRemaining", WAITING_FOR_BEFORE_DELETE_HOOK,
            "WaitingForBootstrapDeletion", WAITING_FOR_CONTROL_PLANE_DELETION,
            WAITING_FOR_INFRASTRUCTURE_DELETION, WAITING_FOR_MACHINE_DELETION, WAITING_FOR_PRE_DRAIN_HOOK,
            WAITING_FOR_PRE_TERMINATE_HOOK, WAITING_FOR_VOLUME_DETACH, WAITING_FOR_WORKERS_DELETION
        ),
        BOOTSTRAP_CONFIG_READY: (
            DATA_SECRET_PROVIDED, NOT_READY, OBJECT_DELETED, OBJECT_DOES_NOT_EXIST, READY, READY_UNKNOWN
        ),
        INFRASTRUCTURE_READY: (NOT_READY, OBJECT_DELETED, OBJECT_DOES_NOT_EXIST, READY, READY_UNKNOWN),
        NODE_READY: (NODE_DELETED, NODE_DOES_NOT_EXIST, "NodeNotReady", NODE_READY, "NodeReadyUnknown"),
        NODE_HEALTHY: (
            NODE_DELETED, NODE_DOES_NOT_EXIST, NODE_HEALTHY, "NodeHealthyUnknown", "NodeNotHealthy"
        ),
        UPDATING: ("InPlaceUpdateFailed", IN_PLACE_UPDATING, NOT_UPDATING),
        UP_TO_DATE: (NOT_UP_TO_DATE, UP_TO_DATE, UPDATING),
        HEALTH_CHECK_SUCCEEDED: (
            "HasRemediateAnnotation", HEALTH_CHECK_SUCCEEDED, NODE_DELETED, "NodeStartupTimeout",
            "UnhealthyMachine", "UnhealthyNode"
        ),
        OWNER_REMEDIATED: (
            "CannotBeRemediated", "MachineDeleting", REMEDIATED, "RemediationDeferred",
            REMEDIATION_IN_PROGRESS, WAITING_FOR_REMEDIATION
        ),
        "ExternallyRemediated": (REMEDIATED, REMEDIATION_IN_PROGRESS, WAITING_FOR_REMEDIATION),
        SCALING_UP: (NOT_SCALING_UP, SCALING_UP, SCALING_UP_UNKNOWN, WAITING_FOR_REPLICAS_SET),
        SCALING_DOWN: (NOT_SCALING_DOWN, SCALING_DOWN, SCALING_DOWN_UNKNOWN, WAITING_FOR_REPLICAS_SET),
        ROLLING_OUT: (NOT_ROLLING_OUT, ROLLING_OUT, ROLLING_OUT_UNKNOWN),
        REMEDIATING: (NOT_REMEDIATING, REMEDIATING, "RemediatingUnknown"),
        MACHINES_READY: (NO_REPLICAS, NOT_READY, READY, READY_UNKNOWN),
        MACHINES_UP_TO_DATE: (NO_REPLICAS, NOT_UP_TO_DATE, UP_TO_DATE, UP_TO_DATE_UNKNOWN),
        CONTROL_PLANE_MACHINES_READY: (NO_REPLICAS, NOT_READY, READY, READY_UNKNOWN),
        WORKER_MACHINES_READY: (NO_REPLICAS, NOT_READY, READY, READY_UNKNOWN),
        CONTROL_PLANE_MACHINES_UP_TO_DATE: (NO_REPLICAS, NOT_UP_TO_DATE, UP_TO_DATE, UP_TO_DATE_UNKNOWN),
        WORKER_MACHINES_UP_TO_DATE: (NO_REPLICAS, NOT_UP_TO_DATE, UP_TO_DATE, UP_TO_DATE_UNKNOWN),
        INITIALIZED: (INITIALIZED, NOT_INITIALIZED),
        CONTROL_PLANE_INITIALIZED: (INITIALIZED, NOT_INITIALIZED, OBJECT_DOES_NOT_EXIST),
        CONTROL_PLANE_AVAILABLE: (
            AVAILABLE, AVAILABLE_UNKNOWN, NOT_AVAILABLE, OBJECT_DELETED, OBJECT_DOES_NOT_EXIST
        ),
        WORKERS_AVAILABLE: (AVAILABLE, AVAILABLE_UNKNOWN, NO_WORKERS, NOT_AVAILABLE),
        REMOTE_CONNECTION_PROBE: ("ProbeFailed", "ProbeSucceeded"),
        CERTIFICATES_AVAILABLE: (AVAILABLE, NOT_AVAILABLE),
        ETCD_CLUSTER_HEALTHY: (HEALTH_UNKNOWN, HEALTHY, NOT_HEALTHY),
        CONTROL_PLANE_COMPONENTS_HEALTHY: (HEALTH_UNKNOWN, HEALTHY, NOT_HEALTHY),
        API_SERVER_POD_HEALTHY: (DELETING, DOES_NOT_EXIST, FAILED, PROVISIONING, RUNNING),
        CONTROLLER_MANAGER_POD_HEALTHY: (DELETING, DOES_NOT_EXIST, FAILED, PROVISIONING, RUNNING),
        SCHEDULER_POD_HEALTHY: (DELETING, DOES_NOT_EXIST, FAILED, PROVISIONING, RUNNING),
        ETCD_POD_HEALTHY: (DELETING, DOES_NOT_EXIST, FAILED, PROVISIONING, RUNNING),
        ETCD_MEMBER_HEALTHY: (HEALTH_UNKNOWN, HEALTHY, NOT_HEALTHY),
        REMEDIATION_ALLOWED: (REMEDIATION_ALLOWED, TOO_MANY_UNHEALTHY),
        TOPOLOGY_RECONCILED: (
            CLUSTER_CLASS_NOT_RECONCILED, "ClusterCreating", "ClusterUpgrading",
            "ControlPlaneUpgradePending", DELETING, "LifecycleHookBlocking",
            "MachineDeploymentsCreatePending", "MachineDeploymentsUpgradeDeferred",
            "MachineDeploymentsUpgradePending", "MachinePoolsCreatePending", "MachinePoolsUpgradeDeferred",
            "MachinePoolsUpgradePending", PAUSED, RECONCILE_FAILED, RECONCILE_SUCCEEDED
        ),
        VARIABLES_READY: ("VariablesNotReady", VARIABLES_READY),
        "ResourcesApplied": (
            APPLIED, "ApplyFailed", "ClusterMatchFailed", "NotApplied", "RemoteClusterClientFailed",
            "RetrievingResourceFailed", "WrongSecretType"
        ),
        DISCOVERED: (DISCOVERED, "DiscoveryFailed", "NotDiscovered"),
        PLACEMENT_VERIFIED: (
            AS_EXPECTED, NOT_AS_EXPECTED, PLACEMENT_DECISION_EMPTY, PLACEMENT_DECISION_NOT_FOUND
        ),
        PLACEMENT_ROLLED_OUT: ("Complete", COMPLETED, PROGRESSING, ROLLOUT_DEGRADED),
        "ManifestworkApplied": (
            AS_EXPECTED, INVALID_MANIFEST_WORK_NAME, NOT_AS_EXPECTED, PLACEMENT_DECISION_EMPTY, "Processing"
        ),
        PROGRESSING: (
            ALL_CLUSTERS_READY, "Applying", COMPLETED, CONDITION_RULES_AGGREGATED,
            "ConfigurationUnsupported", FAILED, PAUSED, PROGRESSING, ROLLING_OUT_TO_CLUSTERS,
            "WaitingForCanary"
        ),
        APPLIED: ("AppliedManifestWorkComplete", "AppliedManifestWorkFailed"),
        DEGRADED: (CONDITION_RULES_AGGREGATED,),
        MANAGED_CLUSTER_CONDITION_AVAILABLE: (
            "ManagedClusterAvailable", "ManagedClusterKubeAPIServerUnavailable",
            "ManagedClusterLeaseUpdateStopped"
        ),
        MANAGED_CLUSTER_JOINED: (MANAGED_CLUSTER_JOINED,),
        "HubAcceptedManagedCluster": ("HubClusterAdminAccepted",),
        "ManagedClusterConditionClockSynced": ("ManagedClusterClockOutOfSync", "ManagedClusterClockSynced"),
        "PlacementSatisfied": (
            "AllDecisionsScheduled", "AllManagedClusterSetsEmpty", "NoIntersection",
            "NoManagedClusterMatched", "NoManagedClusterSetBindings", "NotAllDecisionsScheduled"
        ),
        "PlacementMisconfigured": ("Misconfigured", "Succeedconfigured"),
        "ManifestApplied": ("AddonManifestApplied", "AddonManifestAppliedFailed", "ManifestWorkApplyFailed"),
        "RegistrationApplied": ("NilRegistration", "SetPermissionApplied", "SetPermissionFailed"),
    }
)

# Reasons (and the names of the conditions and phases) the engine's rules set: a computed condition
# passes them whatever its type; a reason copied from a provider's object does not.
COMPUTED: Final = frozenset({
    API_SERVER_POD_HEALTHY, ALL_CLUSTERS_AVAILABLE, ALL_CLUSTERS_READY, APPLIED, AVAILABLE,
    BOOTSTRAP_CONFIG_READY, CERTIFICATES_AVAILABLE, CONNECTION_DOWN, CONTROL_PLANE_AVAILABLE,
    CONTROL_PLANE_COMPONENTS_HEALTHY, CONTROL_PLANE_INITIALIZED, CONTROL_PLANE_MACHINES_READY,
    CONTROL_PLANE_MACHINES_UP_TO_DATE, CONTROLLER_MANAGER_POD_HEALTHY, DATA_SECRET_PROVIDED, DEGRADED,
    DELETING, DELETION_COMPLETED, DRAINING_NODE, ETCD_CLUSTER_HEALTHY, ETCD_MEMBER_HEALTHY,
    ETCD_POD_HEALTHY, FAILED, HEALTH_CHECK_SUCCEEDED, HEALTH_UNKNOWN, HEALTHY, IN_PLACE_UPDATING,
    INFRASTRUCTURE_READY, INITIALIZED, INPUTS_UNREADABLE, INSPECTION_FAILED, INVALID_MANIFEST_WORK_NAME,
    MACHINES_READY, MACHINES_UP_TO_DATE, MANAGED_CLUSTER_CONDITION_AVAILABLE, NO_CLUSTERS_SELECTED,
    NO_REPLICAS, NO_WORKERS, NODE_HEALTHY, NODE_READY, NOT_ALL_CLUSTERS_AVAILABLE, NOT_AVAILABLE,
    NOT_DELETING, NOT_HEALTHY, NOT_INITIALIZED, NOT_PAUSED, NOT_READY, NOT_REMEDIATING, NOT_ROLLING_OUT,
    NOT_SCALING_DOWN, NOT_SCALING_UP, NOT_UP_TO_DATE, NOT_UPDATING, NOT_YET_REPORTED, OBJECT_DELETED,
    OBJECT_DOES_NOT_EXIST, OWNER_REMEDIATED, PAUSED, PENDING, PLACEMENT_DECISION_EMPTY,
    PLACEMENT_DECISION_NOT_FOUND, PLACEMENT_NOT_FOUND, PLACEMENT_NOT_VERIFIED, PLACEMENT_ROLLED_OUT,
    PLACEMENT_SUMMARY_MISSING, PLACEMENT_VERIFIED, PROGRESSING, PROGRESSING_RULE_MISSING, PROVISIONED,
    PROVISIONING, READY, RECONCILE_SUCCEEDED, REMEDIATING, REMEDIATION_ALLOWED, REMEDIATION_BLOCKED,
    REMOTE_CONNECTION_PROBE, REPLICAS_READY, ROLLING_OUT, ROLLING_OUT_TO_CLUSTERS, ROLLOUT_DEGRADED,
    RUNNING, SCALING, SCALING_DOWN, SCALING_UP, SCHEDULER_POD_HEALTHY, SELECTED_CLUSTERS_UNKNOWN,
    SUCCEEDED, TERMINAL_FAILURE, TO_APPLY, TOO_MANY_UNHEALTHY, TOPOLOGY_RECONCILED, UNAVAILABLE,
    UP_TO_DATE, UPDATING, WAITING_FOR_AVAILABLE_REPLICAS_SET,
    WAITING_FOR_CONTROL_PLANE_DELETION, WAITING_FOR_INFRASTRUCTURE_DELETION,
    WAITING_FOR_MACHINE_DELETION, WAITING_FOR_MIN_READY_SECONDS, WAITING_FOR_REPLICAS_SET,
    WAITING_FOR_WORKERS_DELETION, WORKER_MACHINES_READY, WORKER_MACHINES_UP_TO_DATE, WORKERS_AVAILABLE,
})
