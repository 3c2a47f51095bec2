# Drover: everything a fresh machine needs is installed from here (uv from PyPI, then uv sync).
SHELL := /bin/bash
PYTHON ?= python3
TOOLS := .tools
UV := $(TOOLS)/bin/uv
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/.venv
RUN := $(UV) run --frozen

.PHONY: install up test chaos lint images bench clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv

# Bytecode compiled at install, the dependencies' and Drover's own: a Python run with
# PYTHONDONTWRITEBYTECODE (as CI's is) never caches it, and each service process would compile
# every module it imports again - 2.5-4 s of a service's start instead of 1.3-1.9.
.venv/.synced: $(UV) pyproject.toml uv.lock libs/*/pyproject.toml services/*/pyproject.toml
	$(UV) sync --frozen --all-packages --compile-bytecode
	$(UV) run --frozen python -m compileall -q libs services tests bench > /dev/null
	@touch $@

uv.lock: $(UV) pyproject.toml libs/*/pyproject.toml services/*/pyproject.toml
	$(UV) lock
	@touch $@

install: .venv/.synced

up: install
	$(RUN) drover up

test: install
	$(RUN) pytest -n 3 --dist worksteal

# The HA topology (three NATS servers, a PostgreSQL primary with its standby) killed part by part
# under load: tests/test_chaos.py.
chaos: install
	$(RUN) pytest -m chaos -s tests/test_chaos.py

# The container images the tests and CI run, built here (deploy/images; cached by content).
images: install
	$(RUN) python -m deploy.images

lint: install
	$(RUN) ruff check libs services tests bench
	$(RUN) ruff format --check libs services tests bench
	$(RUN) mypy libs/*/src services/*/src

bench: install
	@mkdir -p bench/out
	$(RUN) python -m bench.scheduler --out bench/out/scheduler.json
	$(RUN) python -m bench.packing --out bench/out/packing.json
	$(RUN) python -m bench.codec --out bench/out/codec.json
	$(RUN) python -m bench.append --out bench/out/append.json
	$(RUN) python -m bench.pipeline --out bench/out/pipeline.json
	$(RUN) python -m bench.pipeline --garbage --force-gc --out bench/out/pipeline_gc.json
	$(RUN) python -m bench.pipelineha --out bench/out/pipeline_ha.json
	$(RUN) python -m bench.events --floor --out bench/out/events.json
	$(RUN) python -m bench.memory --out bench/out/memory.json
	$(RUN) python -m bench.heartbeats --out bench/out/heartbeats.json
	$(RUN) python -m bench.fleet --out bench/out/fleet.json
	$(RUN) python -m bench.watchers --out bench/out/watchers.json
	$(RUN) python -m bench.requests --out bench/out/requests.json
	$(RUN) python -m bench.restarts --out bench/out/restarts.json
	$(RUN) python -m bench.gc --out bench/out/gc.json
	$(RUN) python -m bench.recovery --out bench/out/recovery.json
	$(RUN) python -m bench.docker --out bench/out/docker.json
	$(RUN) python -m bench.templates --out bench/out/templates.json
	$(RUN) python -m bench.ui --out bench/out/ui.json
	$(RUN) python -m bench.uifanout --out bench/out/uifanout.json
	$(RUN) python -m bench.table

clean:
	rm -rf .venv $(TOOLS)
