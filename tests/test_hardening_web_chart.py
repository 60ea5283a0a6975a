"""The chart under mutual TLS: webConfig.probePort gives the probes a plain-HTTP, probes-only port."""

from __future__ import annotations

from tests.chart.harness import container, render

MTLS = {
    "tls_server_config": {"cert_file": "/tls/tls.crt", "key_file": "/tls/tls.key",
                          "client_ca_file": "/tls/ca.crt", "client_auth_type": "RequireAndVerifyClientCert"},
}


def test_probes_use_the_probe_port_when_it_is_set() -> None:
    c = container(render({"webConfig": {"config": MTLS, "probePort": 9843}}))
    assert "--web.probe-address=:9843" in c["args"]
    assert {"name": "probes", "containerPort": 9843, "protocol": "TCP"} in c["ports"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        assert (get["path"], get["port"], get["scheme"]) == (path, "probes", "HTTP")


def test_without_a_probe_port_the_probes_use_the_metrics_port() -> None:
    c = container(render({"webConfig": {"config": MTLS}}))
    assert not any(a.startswith("--web.probe-address") for a in c["args"])
    assert [p["name"] for p in c["ports"]] == ["http"]
    assert c["livenessProbe"]["httpGet"]["port"] == "http"
