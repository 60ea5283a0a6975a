"""Helm chart test support: Python helpers that render and lint the chart with the real Helm (``harness``)."""
