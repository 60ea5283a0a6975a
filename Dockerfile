# Container image of fleet-status-exporter.
#
#   docker build -t fleet-status-exporter:dev .
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg BRANCH="$(git rev-parse --abbrev-ref HEAD)" \
#     --build-arg BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" -t fleet-status-exporter:0.1.0 .
#
# REVISION, BRANCH and BUILD_DATE reach the exporter as environment variables: `--version`, the
# landing page and fleet_status_exporter_build_info show them ("unknown" when not given). VERSION
# labels the image; it is the package version of pyproject.toml, which the exporter reports.
#
# Dependencies: the build stage resolves the runtime dependencies declared in pyproject.toml (the
# single place where they are constrained, e.g. kubernetes-asyncio to 36.1.x) into wheels once,
# then installs the virtualenv offline from exactly those wheels. The image therefore holds the
# runtime dependencies only (no test or lint extras, no pip, no compiler), and the versions that
# were resolved are recorded in /opt/fleet-status-exporter/requirements.lock inside the image.
#
# Runtime: numeric non-root user 65532 (the Helm chart's runAsUser), nothing written at run time
# (bytecode is compiled at install time; PYTHONDONTWRITEBYTECODE), so a read-only root filesystem
# works. No HEALTHCHECK: Kubernetes probes /healthz and /readyz instead.

FROM python:3.11.13-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# mypyc compiles the engine and the metrics to C extensions (setup.py): the compiler is needed
# in this stage only, and none of it reaches the image, so its versions are the release's.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY exporter/ exporter/

# Wheels for the project (compiled) and every runtime dependency, resolved from pyproject.toml.
RUN pip wheel --wheel-dir /wheels .

# The venv has no pip of its own; the build stage's pip installs into it, offline, from /wheels.
RUN python -m venv --without-pip /opt/fleet-status-exporter \
    && pip --python /opt/fleet-status-exporter/bin/python install --no-index --find-links /wheels \
        /wheels/fleet_status_exporter-*.whl \
    && pip --python /opt/fleet-status-exporter/bin/python freeze --exclude fleet-status-exporter \
        > /opt/fleet-status-exporter/requirements.lock

FROM python:3.11.13-slim-bookworm

ARG VERSION=0.1.0
ARG REVISION=unknown
ARG BRANCH=unknown
ARG BUILD_DATE=unknown

LABEL org.opencontainers.image.title="fleet-status-exporter" \
      org.opencontainers.image.description="Prometheus exporter for Cluster API fleets and Open Cluster Management ManifestWorkReplicaSets" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${BUILD_DATE}" \
      org.opencontainers.image.source="https://github.com/fleet-status-exporter/fleet-status-exporter" \
      org.opencontainers.image.url="https://github.com/fleet-status-exporter/fleet-status-exporter" \
      org.opencontainers.image.documentation="https://github.com/fleet-status-exporter/fleet-status-exporter/blob/main/README.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="fleet-status-exporter"

# A passwd entry gives the UID a name and a home for libraries that look one up.
RUN groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot

# Same path as in the build stage: the venv's scripts and python symlink refer to it.
COPY --from=build /opt/fleet-status-exporter /opt/fleet-status-exporter

ENV PATH="/opt/fleet-status-exporter/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FLEET_STATUS_EXPORTER_REVISION="${REVISION}" \
    FLEET_STATUS_EXPORTER_BRANCH="${BRANCH}" \
    FLEET_STATUS_EXPORTER_BUILD_DATE="${BUILD_DATE}"

USER 65532:65532
EXPOSE 9842
ENTRYPOINT ["/opt/fleet-status-exporter/bin/fleet-status-exporter"]
CMD ["serve"]
