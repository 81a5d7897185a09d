# Deploying the operator (issue 26): the image, the Helm chart, the dashboard and alert rules.
# Included by the top-level Makefile (-include mk/*.mk).
#
# All of it runs in `make test`: it builds the image first (only when its sources changed; cold, about
# 5 min on 2 cores: the mmdebstrap base ~2.5 min, cached in ~/.cache/trainop/image, then the buildah
# build ~2.5 min) and installs the Debian tools if missing (deploy-tools). The tests: tests/unit/deploy
# (the chart's copies, the queries' series, the image's user), tests/integration/deploy (helm lint,
# template vs golden, kustomize diff, promtool, wheel and lowest-direct installs) and
# tests/integration/k8s/test_deploy_install.py (helm install, the image's operator running jobs,
# Prometheus scraping it): about 6 min together. Building needs root (or sudo), as CI has.

.PHONY: image chart-files chart-golden deploy-test deploy-tools

VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/trainop/__init__.py)
IMAGE_ARCHIVE := dist/trainop-$(VERSION).oci.tar

# The OCI archive dist/trainop-<version>.oci.tar (buildah on an mmdebstrap base; prints its size),
# rebuilt when what goes into it changes.
IMAGE_SOURCES := Dockerfile .dockerignore pyproject.toml README.md hack/image/build.sh \
	$(shell find src -type f -not -path '*/__pycache__/*' -not -path '*.egg-info/*')
$(IMAGE_ARCHIVE): $(IMAGE_SOURCES) | deploy-tools
	hack/image/build.sh --out $@

image: $(IMAGE_ARCHIVE)

# `make test` runs the image's tests (prerequisites of one target merge).
test: $(IMAGE_ARCHIVE) deploy-tools

# Debian's buildah, mmdebstrap, prometheus (promtool) and skopeo (README's push). Helm is built with the
# test control plane (hack/testenv/build.sh, `make testenv`).
DEPLOY_TOOLS := buildah mmdebstrap promtool skopeo
deploy-tools:
	@for t in $(DEPLOY_TOOLS); do command -v $$t >/dev/null || missing=1; done; [ -z "$$missing" ] || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq buildah mmdebstrap prometheus skopeo; }

# The chart reads the manifests' CRDs, RBAC rules and webhooks and the monitoring files from copies in
# charts/trainop/files (a chart cannot reach outside its directory); `make crds` refreshes them and
# tests/unit/deploy/test_chart_files.py fails when they drift.
chart-files:
	rm -rf charts/trainop/files/crds && mkdir -p charts/trainop/files/{crds,rbac,webhook,monitoring}
	cp manifests/crds/*.yaml charts/trainop/files/crds/ && rm charts/trainop/files/crds/kustomization.yaml
	cp manifests/base/cluster-role.yaml manifests/base/role.yaml charts/trainop/files/rbac/
	cp manifests/base/validating-webhook-configuration.yaml charts/trainop/files/webhook/
	cp monitoring/grafana/trainop-dashboard.json monitoring/prometheus/trainop-alerts.yaml charts/trainop/files/monitoring/

# Re-render the chart's golden outputs (review the diff: it is what `helm install` creates).
chart-golden: chart-files
	$(BIN)/python tests/integration/deploy/golden.py --write

# Only issue 26's tests, image build included.
deploy-test: image testenv $(STAMP)-dev
	hack/testenv/build.sh --wait
	$(BIN)/pytest -q tests/unit/deploy tests/integration/deploy tests/integration/k8s/test_deploy_install.py
