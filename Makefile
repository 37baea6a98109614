# primus-runner: set-up, demo, tests, lint and benchmarks.
#   make demo    train the built-in CPU workload (--module primus_runner), 2 local processes
#   make test    the live Slurm suite beside lint, pytest and the waiting bats files, then the rest of bats (sets up first)
#   make bench   launch-overhead timings (medians; figures, never assertions)
#   make docs    the documentation site (Sphinx + MyST) in build/docs, offline, warnings as errors
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV      := .venv
PY        := $(VENV)/bin/python
PIP       := $(VENV)/bin/pip
BATS      := node_modules/bats/bin/bats
SHELLCHECK := $(VENV)/bin/shellcheck
# On this machine pip finds a local CPU wheel of torch 2.13.0. Elsewhere pass
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu to get the CPU build.
TORCH_VERSION   ?= 2.13.0
TORCH_INDEX_URL ?=
# Debian packages the tests use: Slurm daemons and client, munge, numactl, and
# podman + runc + catatonit for the real-runtime container suite (tests/container/),
# iproute2 (tc) for the doctor probe's slowed node in the live Slurm suite, and chromium
# (headless) to render `primus-cli report`'s HTML in tests/python/test_run_report.py.
APT_PACKAGES := slurmctld slurmd slurm-client munge numactl podman runc catatonit iproute2 chromium

.PHONY: help setup setup-python setup-node setup-system setup-userenv demo test lint bats pytest slurm-test bench docs clean

help:
	@sed -n '2,4p' Makefile | sed 's/^# \{0,1\}//'

setup: setup-python setup-node
	@$(PY) -m compileall -q python >/dev/null  # cached bytecode: the launch path starts faster

setup-python: $(VENV)/.installed
# One progress line per step (the torch step takes the longest).
$(VENV)/.installed: pyproject.toml
	@echo "setup [1/4] $(VENV): Python virtual environment"
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "setup [2/4] primus-runner and its dev tools (pip install -e '.[dev]')"
	@$(PIP) install --quiet --disable-pip-version-check -e '.[dev]'
	@echo "setup [3/4] PyTorch $(TORCH_VERSION) (CPU) and numpy: the longest step"
	@$(PIP) install --quiet --disable-pip-version-check numpy \
	  'torch==$(TORCH_VERSION)' $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	@echo "setup [4/4] byte-compiling python/ (a faster first launch)"
	@$(PY) -m compileall -q python >/dev/null
	@touch $@
	@echo "setup done: $(VENV)"

setup-node: node_modules/.installed
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $@

# System packages for the test suites (root; apt). Idempotent and quick when present.
setup-system:
	@missing=(); for p in $(APT_PACKAGES); do dpkg -s "$$p" >/dev/null 2>&1 || missing+=("$$p"); done; \
	if (( $${#missing[@]} )); then \
	  if [[ $$(id -u) != 0 ]]; then echo "make: missing Debian packages: $${missing[*]} (run as root or install them)" >&2; exit 1; fi; \
	  echo "installing $${missing[*]}"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$${missing[@]}" >/dev/null; \
	fi

# The user environments the launch suites run workloads in (a venv with torch,
# jax and lightning, and one without torch): distinct from .venv on purpose.
setup-userenv:
	TORCH_VERSION=$(TORCH_VERSION) TORCH_INDEX_URL=$(TORCH_INDEX_URL) tests/userenv/setup.sh

# The demo needs only the Python set-up: Node/npm (bats) is for the tests.
demo: setup-python
	examples/demo.sh

# The suites in tests/run_all.sh: the live Slurm suite beside lint, pytest and the bats files
# that mostly wait (BESIDE_SLURM there), then the other bats files alone.
test: setup setup-system setup-userenv
	tests/run_all.sh

lint: setup-python
	SHELLCHECK=$(SHELLCHECK) RUFF=$(VENV)/bin/ruff MYPY=$(VENV)/bin/mypy tests/lint.sh

pytest: setup-python
	$(PY) -m pytest -q tests/python

bats: setup setup-userenv
	$(BATS) --timing --print-output-on-failure tests/bats

slurm-test: setup setup-system
	tests/slurm/run.sh

bench: setup
	bench/run.sh

# The docs site: README's map as numbered parts (docs/index.md), the variable reference
# searchable; no network (no intersphinx, the alabaster theme ships with Sphinx).
docs: setup-python
	$(PY) -m sphinx -b html -W --keep-going -q docs build/docs
	@echo "docs: build/docs/index.html"

clean:
	rm -rf $(VENV) .userenv node_modules .pytest_cache .hypothesis
