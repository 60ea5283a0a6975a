"""fleet-status-exporter: Cluster API and OCM ManifestWorkReplicaSet status as Prometheus metrics."""

__version__ = "0.1.0"
