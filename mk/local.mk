# Local backend (issue 3): its benchmark and a shortcut for its integration tests.
# Included by the top-level Makefile (-include mk/*.mk).

.PHONY: bench-local test-local chaos-local

# 1 Master + 7 Workers from `trainop submit` to every replica started, against the floor of starting
# the same 8 processes directly; and the supervisor's peak RSS. Prints figures, asserts nothing.
bench-local: $(STAMP)-dev
	$(BIN)/python tests/benchmarks/bench_local.py

# The local backend's tests alone (real processes; about a minute).
test-local: $(STAMP)-dev
	$(BIN)/pytest -q tests/unit/backends tests/integration/local

# The supervisor chaos test at the issue's size (issue 10): 50 SIGKILLs of job supervisors at random
# moments (a replica just forked, the job just claimed, a random delay), then the recovery rule and
# delete; prints the kills, orphan processes and stuck jobs. TRAINOP_CHAOS_SEED replays a run.
CHAOS_KILLS ?= 50
chaos-local: $(STAMP)-dev
	TRAINOP_CHAOS_KILLS=$(CHAOS_KILLS) $(BIN)/pytest -q -s tests/integration/local/test_local_supervisor_faults.py \
		-k random_moments
