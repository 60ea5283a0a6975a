# Everyday commands. `make run` and `make test` work on a fresh Debian machine (as root for the
# system packages: a C compiler for the compiled build, and for the tests promtool/Prometheus and
# Alertmanager/amtool).
# The tests also need Go 1.26 or newer, which builds the pinned kube-apiserver, etcd and Helm
# they run (`make tools`, into a cache outside the repository; see tests/realcluster/build.py).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
APT_PACKAGES := prometheus prometheus-alertmanager
GO_MINIMUM := 1.26
PURE := FLEET_STATUS_EXPORTER_PURE_PYTHON=1
# The modules setup.py compiles with mypyc: a change to one of them means building again.
COMPILED_SOURCES := $(wildcard exporter/engine/*.py exporter/metrics/*.py)

.PHONY: run test lint pytest build deps system-deps build-deps tools capi-tools ksm-tool test-capi docs sync-chart-files bench clean

run: build
	$(BIN)/fleet-status-exporter serve --from-files examples/

test: deps system-deps lint pytest

lint: deps
	$(BIN)/ruff check .
	$(BIN)/mypy

# The suite runs against the compiled build (what ships), then against the Python sources.
pytest: deps build tools
	$(BIN)/python -m pytest
	$(PURE) $(BIN)/python -m pytest

# The package installed in place, its engine and metrics compiled next to their sources (~1 min).
# After `deps`, which installs the package as sources with the tools: a sources install after this
# one would leave the extensions without the mapping to their shared module at the root.
build: $(VENV)/.built

$(VENV)/.built: pyproject.toml setup.py $(COMPILED_SOURCES) $(VENV)/.deps-installed | build-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e .
	touch $@

# The dependencies and the test and lint tools; the package itself as sources (`build` compiles).
deps: $(VENV)/.deps-installed

$(VENV)/.deps-installed: pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(PURE) $(BIN)/pip install --quiet -e '.[test,lint]'
	touch $@

# mypyc needs a C compiler and the interpreter's headers; as root they are installed from Debian.
build-deps:
	@if [ "$$FLEET_STATUS_EXPORTER_PURE_PYTHON" = 1 ]; then exit 0; fi; \
	missing=""; \
	command -v gcc >/dev/null || missing="$$missing gcc"; \
	$(PYTHON) -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
		|| missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "missing to compile the engine:$$missing (install them, or run the Python sources: $(PURE) make ...)" >&2; \
			exit 1; \
		fi; \
		echo "installing system packages ($$missing )"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

system-deps:
	@missing=""; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v amtool >/dev/null || missing="$$missing prometheus-alertmanager"; \
	if [ -n "$$missing" ]; then \
		echo "installing system packages ($$missing )"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(APT_PACKAGES); \
	fi

# kube-apiserver, etcd and Helm from their pinned Go modules (tests/realcluster/tools, helm), built
# once per machine into ~/.cache/fleet-status-exporter (about 5 minutes cold), and the pinned
# upstream CRDs into Go's module cache.
tools: deps
	@go_version=$$(go env GOVERSION 2>/dev/null | sed 's/^go//'); \
	if [ -z "$$go_version" ] || [ "$$(printf '%s\n' "$(GO_MINIMUM)" "$$go_version" | sort -V | head -n1)" != "$(GO_MINIMUM)" ]; then \
		echo "the tests need Go $(GO_MINIMUM) or newer to build kube-apiserver, etcd and Helm (found: $${go_version:-none})" >&2; \
		exit 1; \
	fi
	$(BIN)/python -m tests.realcluster.build

# The Cluster API core, KubeadmControlPlane, kubeadm bootstrap and Docker (in-memory backend)
# managers of v1.14 and v1.10 from their pinned Go modules (tests/realcluster/capi, capi110), into
# the same cache (about 4 minutes per release cold).
capi-tools: tools
	$(BIN)/python -m tests.realcluster.build --capi

# kube-state-metrics from its pinned Go module (tests/realcluster/ksm), into the same cache (about
# 2 minutes cold), and Cluster API's configuration for it into Go's module cache: the benchmark's
# --ksm runs it beside the exporter. Not part of `make test`.
ksm-tool: deps
	$(BIN)/python -m tests.realcluster.build --ksm

# The engine against the live Cluster API controllers of both eras (tests/test_capi_controllers.py,
# marker capi; 7-9 minutes per era): not part of `make test`, CI runs it after it. -rP prints
# the report of what was compared.
test-capi: deps build capi-tools
	$(BIN)/python -m pytest --capi -rP tests/test_capi_controllers.py

docs: deps
	$(BIN)/python -m exporter.metrics.docs > docs/metrics.md

# Scale benchmark at the full target fleet (minutes; prints a table, see docs/performance.md).
bench: deps build
	$(BIN)/python -m tests.benchmark --scale 100 --quick

# The chart embeds alerts/ and dashboards/ unchanged; a test fails when its copies drift.
sync-chart-files:
	charts/fleet-status-exporter/sync-files.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
	find exporter -name '*.so' -delete
	rm -f ./*__mypyc*.so
