# Everyday commands. `make run` and `make test` work on a fresh Debian machine (as root for the
# system packages the tests use: promtool/Prometheus and Go with sprig to render the Helm chart).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
APT_PACKAGES := prometheus golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev

.PHONY: run test lint pytest deps system-deps docs sync-chart-files bench clean

run: $(BIN)/fleet-status-exporter
	$(BIN)/fleet-status-exporter serve --from-files examples/

test: deps system-deps lint pytest

lint: deps
	$(BIN)/ruff check .
	$(BIN)/mypy

pytest: deps
	$(BIN)/python -m pytest

deps: $(VENV)/.deps-installed

$(BIN)/fleet-status-exporter: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e .

$(VENV)/.deps-installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,lint]'
	touch $@

system-deps:
	@missing=""; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v go >/dev/null || missing="$$missing golang-go"; \
	test -d /usr/share/gocode/src/github.com/Masterminds/sprig || missing="$$missing sprig"; \
	test -d /usr/share/gocode/src/gopkg.in/yaml.v3 || missing="$$missing yaml.v3"; \
	if [ -n "$$missing" ]; then \
		echo "installing system packages ($$missing )"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(APT_PACKAGES); \
	fi

docs: deps
	$(BIN)/python -m exporter.metrics.docs > docs/metrics.md

# Scale benchmark at the full target fleet (minutes; prints a table, see docs/performance.md).
bench: deps
	$(BIN)/python -m tests.benchmark --scale 100 --quick

# The chart embeds alerts/ and dashboards/ unchanged; a test fails when its copies drift.
sync-chart-files:
	charts/fleet-status-exporter/sync-files.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
