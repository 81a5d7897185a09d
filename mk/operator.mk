# Kubernetes operator (issue 5): the benchmark on the test control plane.
# Included by the top-level Makefile (-include mk/*.mk).

.PHONY: bench-k8s operator-test

# trainop vs the Go Kubeflow Training Operator v1.9.4 (built once from the Go module proxy into the
# test control plane's cache), A B A B on fresh control planes, at equal QPS and at defaults:
# 500 x (1 Master + 3 Workers) and 1 x 500 Workers. Smaller: make bench-k8s BENCH_K8S_JOBS=50
# BENCH_K8S_BIG_WORKERS=0 BENCH_K8S_ROUNDS=1 (see the script's --help for every knob).
bench-k8s: testenv $(STAMP)-dev
	$(BIN)/python tests/benchmarks/bench_k8s.py

# Only the operator's tests (unit + integration on the test control plane).
operator-test: testenv $(STAMP)-dev
	$(BIN)/pytest -q tests/unit/k8s_operator tests/integration/k8s
