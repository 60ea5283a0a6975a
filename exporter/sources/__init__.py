"""Sources: where objects come from (``kube``: the Kubernetes API; ``files``: manifests on disk).

Both push projections into the same sink (``exporter.store.Store``); this package owns no rules.
"""
