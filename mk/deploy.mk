# Deploying the operator (issue 26): the image, the Helm chart, the dashboard and alert rules.
# Included by the top-level Makefile (-include mk/*.mk).
#
# Where the tests run: the chart's files, its golden render and the monitoring files' shape are unit
# tests (make test); helm lint/template/install, the kustomize-vs-chart diff, Prometheus scraping the
# operator, the wheel installs and the image run on the test control plane are tests/integration/deploy
# (make test too; each needs its tool and fails with the install command when it is missing). The image
# itself is built by `make image` (minutes), which `make deploy-test` runs first; the image tests use the
# archive it wrote and say to run `make image` when there is none.

.PHONY: image chart-files chart-golden deploy-test deploy-tools

HELM_VERSION := v3.22.0
HELM := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/trainop/testenv/helm-$(HELM_VERSION)/bin/helm
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/trainop/__init__.py)
IMAGE_ARCHIVE := dist/trainop-$(VERSION).oci.tar

# The OCI archive dist/trainop-<version>.oci.tar (buildah on an mmdebstrap base; prints its size).
image:
	hack/image/build.sh --out $(IMAGE_ARCHIVE)

# Debian's buildah, podman, mmdebstrap and prometheus (promtool); Helm from the Go module proxy.
deploy-tools:
	@command -v buildah >/dev/null && command -v mmdebstrap >/dev/null && command -v promtool >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq buildah podman mmdebstrap prometheus; }
	@[ -x $(HELM) ] || GOBIN=$(dir $(HELM)) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

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

# Everything of issue 26, image build included.
deploy-test: deploy-tools image testenv $(STAMP)-dev
	$(BIN)/pytest -q tests/unit/deploy tests/integration/deploy
