# Test control plane (hack/testenv): build the binaries into the cache, start/stop a long-lived one.
# Included by the top-level Makefile (-include mk/*.mk).

.PHONY: testenv testenv-up testenv-down testenv-background

# Builds only what is missing (a no-op once cached); prints timestamped progress. A cold build
# takes minutes: run `make testenv-background` (or hack/testenv/build.sh --background) to detach.
testenv:
	@hack/testenv/build.sh

testenv-background:
	@hack/testenv/build.sh --background

testenv-up: testenv $(STAMP)-dev
	@hack/testenv/up

testenv-down:
	@hack/testenv/down

# `make test` starts the build of what is missing in the background (Makefile: `test:
# testenv-background`) and waits for it (`build.sh --wait`) only before the k8s tests.
