# diag-gateway: everything installs into .venv from PyPI (ROS 2 included); nothing else needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.install-stamp
# ROS 2 Jazzy in its own prefix (a venv laid out like /opt/ros/jazzy): the suite's Jazzy robot.
JAZZY       := .jazzy
JAZZY_STAMP := $(JAZZY)/.install-stamp
JAZZY_REQS  := tests/jazzy/jazzy-requirements.txt
JAZZY_LOG   ?= /tmp/jazzy.log
# A Cyclone DDS robot: the `cyclonedds` binding in its own prefix (no ROS), the suite's
# stand-in for a robot on rmw_cyclonedds_cpp (tests/cyclone/).
CYCLONE       := .cyclone
CYCLONE_STAMP := $(CYCLONE)/.install-stamp
CYCLONE_REQS  := tests/cyclone/cyclone-requirements.txt
# Network rule: every ROS process this project starts stays on loopback.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
# make test requires the compiled Cython twins (a failed build is an error, not a fallback).
export DIAG_GATEWAY_REQUIRE_EXT ?= 1

.PHONY: install jazzy cyclone demo test unit lint bench clean fleet-demo browser

install: $(STAMP)

$(STAMP): pyproject.toml tests/plugin_pkg/pyproject.toml $(wildcard setup.py) $(wildcard gateway/_fast/*.py gateway/_fast/*.pxd recorder/*_py.py recorder/*.pxd)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m pip install -q -e tests/plugin_pkg  # plugins the tests load
	@touch $@
	@echo "installed into $(VENV)"

jazzy: $(JAZZY_STAMP)

$(JAZZY_STAMP): $(JAZZY_REQS)
	@test -x $(JAZZY)/bin/python || $(PYTHON) -m venv $(JAZZY)
	@echo "installing ROS 2 Jazzy into $(JAZZY) (log: $(JAZZY_LOG))"
	@$(JAZZY)/bin/python -m pip install -r $(JAZZY_REQS) >$(JAZZY_LOG) 2>&1 || \
		{ tail -20 $(JAZZY_LOG); echo "Jazzy install failed: see $(JAZZY_LOG)"; exit 1; }
	@touch $@

cyclone: $(CYCLONE_STAMP)

$(CYCLONE_STAMP): $(CYCLONE_REQS)
	@test -x $(CYCLONE)/bin/python || $(PYTHON) -m venv $(CYCLONE)
	$(CYCLONE)/bin/python -m pip install -q -r $(CYCLONE_REQS)
	@touch $@

demo: install
	$(BIN)/diag-gateway demo $(ARGS)

# A primary and three robots (own ROS domains, gateways announcing by mDNS on 127.0.0.1).
# FLEET_WAIT: seconds the primary may take to answer; FLEET_JOIN_WAIT: seconds each robot may
# take to join it; FLEET_SERVICE: the mDNS service type (empty: one of this run only).
FLEET_WAIT      ?= 180
FLEET_JOIN_WAIT ?= 60
FLEET_SERVICE   ?=
fleet-demo: install
	$(BIN)/python deploy/fleet_demo.py --wait $(FLEET_WAIT) --join-wait $(FLEET_JOIN_WAIT) \
		$(if $(FLEET_SERVICE),--service $(FLEET_SERVICE)) $(ARGS)

# Headless Chromium and its driver for the dashboard tests (tests/e2e), from Debian's archive.
# As root (CI) they are installed when missing; otherwise the tests skip and say why.
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	else echo "make browser: chromium/chromedriver missing and not root; the dashboard tests will skip" \
		"(apt-get install chromium chromium-driver)"; fi

# The hot-answer tests run a second time with the wire path off (setting server.hot_wire,
# docs/performance.md): hot answers must hold on an aiohttp hotwire does not know; their
# gateways then run on asyncio's own loop (server.event_loop), the first run's on uvloop.
HOT_ANSWER_TESTS := tests/http/test_hot_answers_pure.py tests/integration/test_hot_answers.py

# The suite runs on TEST_WORKERS processes (pytest-xdist): it mostly waits on DDS discovery and
# gateway processes, so workers overlap the waits (tests/conftest.py keeps a module, the fleet
# labs and mDNS, and the Jazzy robot each on one worker; tests/domains.py splits the domains).
TEST_WORKERS ?= 3

test: install jazzy cyclone lint browser
	$(BIN)/python -m pytest -q -rs -n $(TEST_WORKERS) $(PYTEST_ARGS)
	DIAG_TEST_HOT_WIRE=off DIAG_TEST_EVENT_LOOP=asyncio $(BIN)/python -m pytest -q -rs $(HOT_ANSWER_TESTS)

# The fast tests: every folder of tests/ but those that start real processes (README, Layout).
REAL_PROCESS_TESTS := tests/integration tests/fleet tests/e2e tests/jazzy tests/cyclone
UNIT_TESTS := $(filter-out $(REAL_PROCESS_TESTS),$(patsubst %/,%,$(sort $(dir $(wildcard tests/*/test_*.py)))))

unit: install
	$(BIN)/python -m pytest -q $(UNIT_TESTS) $(PYTEST_ARGS)

# mypy checks whole packages, with its settings in pyproject.toml ([tool.mypy]).
lint: install
	$(BIN)/ruff check gateway recorder robot_reporter tests bench $(wildcard setup.py)
	$(BIN)/mypy

# Benchmarks load the gateway with wrk (Debian package), installed here when missing.
bench: install
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk) || \
		{ echo "wrk is required: apt-get install wrk"; exit 1; }
	@for b in bench/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf build *.egg-info $(VENV) $(JAZZY) gateway/_fast/*.so gateway/_fast/*.c recorder/*.so recorder/*.c
