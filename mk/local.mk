# Local backend (issue 3): its benchmark and a shortcut for its integration tests.
# Included by the top-level Makefile (-include mk/*.mk).

.PHONY: bench-local test-local

# 1 Master + 7 Workers from `trainop submit` to every replica started, against the floor of starting
# the same 8 processes directly; and the supervisor's peak RSS. Prints figures, asserts nothing.
bench-local: $(STAMP)-dev
	$(BIN)/python tests/benchmarks/bench_local.py

# The local backend's tests alone (real processes; about a minute).
test-local: $(STAMP)-dev
	$(BIN)/pytest -q tests/unit/backends tests/integration/local
