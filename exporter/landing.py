"""The landing page at ``/``, in the manner of the Prometheus exporter-toolkit's.

Owns its HTML: the exporter's name, version and revision, links to the metrics, ``/healthz``
and ``/readyz``, and a summary of the configuration given by the composition root (what a person
checks first: where the objects come from, which namespaces, which shard). Every value is
HTML-escaped. Links are relative (``./metrics``), so the page also works behind a proxy that
serves the exporter under a path prefix. Owns no configuration: it is given the summary's lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from exporter.buildinfo import NAME, BuildInfo, current

_STYLE = """body { font-family: -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; }
header { background: #e6522c; color: #fff; padding: 0.5em 1em; }
main { padding: 0 1em; }
dt { font-weight: bold; float: left; clear: left; width: 10em; }
dd { margin: 0 0 0.3em 10.5em; }
code { font-size: 0.95em; }"""


def page(telemetry_path: str, summary: Sequence[tuple[str, str]] = (),
         build: BuildInfo | None = None) -> bytes:
    """The page's bytes (UTF-8)."""
    info = build if build is not None else current()
    links = (
        (telemetry_path, "Metrics", "the Prometheus exposition"),
        ("/healthz", "Health", "200 while the process serves"),
        ("/readyz", "Readiness", "200 once every readable resource is listed and evaluated"),
    )
    items = "\n".join(
        f'      <li><a href="{escape("." + path)}">{escape(text)}</a> '
        f"(<code>{escape(path)}</code>): {escape(about)}</li>"
        for path, text, about in links
    )
    facts = [("Version", info.version), ("Revision", info.revision), ("Branch", info.branch),
             ("Build date", info.build_date), ("Python", f"{info.python_version} ({info.implementation})"),
             *summary]
    rows = "\n".join(f"      <dt>{escape(term)}</dt><dd>{escape(value)}</dd>" for term, value in facts)
    html = f"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>{escape(NAME)}</title>
    <style>
{_STYLE}
    </style>
  </head>
  <body>
    <header><h1>{escape(NAME)}</h1></header>
    <main>
      <h2>Cluster API and Open Cluster Management status as Prometheus metrics</h2>
      <div>Version: {escape(info.version)} (revision {escape(info.revision)})</div>
      <ul>
{items}
      </ul>
      <dl>
{rows}
      </dl>
    </main>
  </body>
</html>
"""
    return html.encode("utf-8", "backslashreplace")
