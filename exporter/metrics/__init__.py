"""Metrics layer: the family catalog (data), per-object rendering to exposition text, self-metrics.

Reads engine Results and projections; computes no condition. See docs/metrics.md (generated from
``exporter.metrics.catalog``) for every family served.
"""
