# Quick start: `make demo` (set up, then simulate a bundled real trace) and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-long lint system sandbox-users bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# An editable install compiles no bytecode (pip does for a package it installs): compile it,
# so that each command does not compile every module it imports at every start (this matters
# where PYTHONDONTWRITEBYTECODE is set; edited modules are compiled again when imported).
$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m compileall -q src >/dev/null
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q src >/dev/null
	touch $(VENV)/.core $@

demo: $(VENV)/.core
	$(BIN)/dlsched demo --out runs/demo --force

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

# System programs the real-component tests drive: Chromium for the dashboard, Slurm and munge
# for the Slurm back end, slurmdbd and MariaDB for Slurm's accounting (fair share), the
# PostgreSQL server for the store (Debian keeps initdb and pg_ctl under
# /usr/lib/postgresql/<version>/bin). Installed when running as root (CI), else named.
SYSTEM_PROGRAMS := chromium slurmctld slurmd munged slurmdbd mariadbd mariadb-install-db \
	initdb pg_ctl
SYSTEM_PACKAGES := chromium slurm-wlm munge slurmdbd mariadb-server postgresql

system:
	@missing=""; for p in $(SYSTEM_PROGRAMS); do \
		command -v $$p >/dev/null 2>&1 || [ -x /usr/sbin/$$p ] || \
			ls /usr/lib/postgresql/*/bin/$$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null; \
		else \
			echo "tests need:$$missing; run: sudo apt-get install -y $(SYSTEM_PACKAGES)" >&2; \
			exit 1; \
		fi; \
	fi
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory sandbox-users; fi

# The users the live service's local back end runs jobs as (dlsched serve --sandbox; see
# docs/service.md, Isolation): system users without a home or a login shell, each in its own
# group. Idempotent; needs root.
SANDBOX_USERS := dlsched-sb0 dlsched-sb1 dlsched-sb2 dlsched-sb3 dlsched-sb4 dlsched-sb5 \
	dlsched-sb6 dlsched-sb7

sandbox-users:
	@for u in $(SANDBOX_USERS); do \
		id -u $$u >/dev/null 2>&1 || useradd --system --no-create-home --user-group \
			--home-dir /nonexistent --shell /usr/sbin/nologin $$u || exit 1; \
	done

# The suite without its long tests (marked ``long``: half a minute or more each), which CI runs
# after it with test-long.
test: lint system
	$(BIN)/pytest -n 2 -q -m "not long"

test-long: $(VENV)/.dev system
	$(BIN)/pytest -n 2 -q -m long

bench: $(VENV)/.core
	$(BIN)/python bench/sim_throughput.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
