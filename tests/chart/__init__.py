"""Helm chart test support: a Go renderer (``render/``) and Python helpers around it (``harness``)."""
