# trainop — every target installs what it needs into .venv (created here, in the repository).
# Caches (pip wheels, Go build cache, built control-plane binaries) live outside the repository.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help preflight venv dev demo test lint typecheck unit fuzz k8s-lightkube integration e2e crds bench bench-core bench-local bench-k8s testenv testenv-up size clean

help:
	@echo "make demo        run the PyTorch DDP demo on the local backend"
	@echo "make test        lint, typecheck and every test (builds the test control plane if missing)"
	@echo "make crds        regenerate manifests/crds from the models (and the chart's copies)"
	@echo "make image       build the operator image (OCI archive in dist/) with buildah, no Docker"
	@echo "make testenv     build kube-apiserver, etcd, kwok ... into the cache"
	@echo "make bench-core | bench-local | bench-k8s   print benchmark figures (make bench: all three)"
	@echo "make unit | integration | e2e   one layer of the tests"
	@echo "make size        src/ against 132cbfd, new features counted apart (issue 22)"

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# base + dev tools; re-run when pyproject changes
$(STAMP)-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

# one stamp per framework extra: make extra-torch, extra-xgboost, ...
$(STAMP)-extra-%: pyproject.toml | $(STAMP)-dev
	$(BIN)/pip install -q -e '.[$*]'
	@touch $@

venv dev: $(STAMP)-dev

lint: $(STAMP)-dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(STAMP)-dev
	$(BIN)/mypy

crds: $(STAMP)-dev
	$(BIN)/python -m trainop.api.crds manifests/crds
	$(BIN)/python -m trainop.operator.manifests manifests/base
	cp src/trainop/runtimes/*.yaml manifests/runtimes/
	$(MAKE) --no-print-directory chart-files

unit: $(STAMP)-dev
	$(BIN)/pytest -q -m "not fuzz" tests/unit

# make fuzz: the manifest fuzzer at 10,000 inputs (mk/fuzz.mk)

demo: $(STAMP)-extra-torch
	$(BIN)/trainop run examples/pytorch/ddp-digits/pytorchjob.yaml

bench-core: $(STAMP)-dev
	$(BIN)/python tests/benchmarks/bench_reconcile.py

# every benchmark: the pure core, the local backend, the operator on the test control plane
bench: bench-core bench-local bench-k8s

# the local backend with real processes and the operator against the real control plane
integration: testenv $(STAMP)-dev
	$(BIN)/pytest -q tests/integration

# The binaries build in the background (first prerequisite) while lint, typecheck and the tests that
# need none of them run (tests/conftest.py marks the others k8s); the k8s tests that need only the
# control plane run once it is built, while Kueue and Helm still build (those tests are mostly
# waiting); `build.sh --wait` then prints each binary's build time and the Kueue and Helm tests run.
-include mk/*.mk

test: preflight testenv-background lint typecheck
	$(BIN)/pytest -q -m "not k8s" tests
	@hack/testenv/build.sh --wait-control-plane
	$(BIN)/pytest -q -m "k8s and not testenv_addons" tests
	$(MAKE) k8s-lightkube
	@hack/testenv/build.sh --wait
	$(BIN)/pytest -q -m testenv_addons tests

# The Kubernetes tier's core once more through lightkube's HTTP stack (TRAINOP_KUBE_DIRECT=0), the
# path users whose kubeconfig runs an exec plugin get for every request: the operator's watches and
# writes, the webhook, the CLI's and the SDK's client (issue 22; about 4 min on 2 shared cores)
K8S_LIGHTKUBE_TESTS := tests/integration/k8s/test_lifecycle.py tests/integration/k8s/test_informer.py \
	tests/integration/k8s/test_webhook.py tests/integration/k8s/test_cli_backend.py
k8s-lightkube: $(STAMP)-dev
	@hack/testenv/build.sh --wait-control-plane
	TRAINOP_KUBE_DIRECT=0 $(BIN)/pytest -q -m k8s $(K8S_LIGHTKUBE_TESTS)

# First of `make test`: is there room on the disks it is about to fill (hack/preflight.sh)?
preflight:
	@hack/preflight.sh

# src/'s size against the base of issue 22, each wave-3 feature's lines counted apart
size:
	@$(PY) hack/src_size.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
