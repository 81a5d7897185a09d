# Kubernetes operator (issue 5): the benchmark on the test control plane.
# Included by the top-level Makefile (-include mk/*.mk).

.PHONY: bench-k8s operator-test

# 500 PyTorchJobs x (1 Master + 3 Workers) against a floor measured in the same run; prints figures.
bench-k8s: testenv $(STAMP)-dev
	$(BIN)/python tests/benchmarks/bench_k8s.py

# Only the operator's tests (unit + integration on the test control plane).
operator-test: testenv $(STAMP)-dev
	$(BIN)/pytest -q tests/unit/k8s_operator tests/integration/k8s
