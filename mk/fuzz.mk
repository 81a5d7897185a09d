# Manifest fuzzing (issue 10, finding 5): 10,000 mutated examples of the six kinds through load,
# validate and the local backend's render, in process. Prints the inputs, uncaught exceptions, inputs
# over 10 s and rejections without a field path (each must be 0; exit 1 otherwise). `make test` runs
# a seeded 300 of them (tests/unit/api/test_fuzz.py). FUZZ_SEED replays another run.
# Included by the top-level Makefile (-include mk/*.mk).

.PHONY: fuzz

FUZZ_INPUTS ?= 10000
FUZZ_SEED ?= 20261125
fuzz: $(STAMP)-dev
	$(BIN)/python tests/unit/api/test_fuzz.py --inputs $(FUZZ_INPUTS) --seed $(FUZZ_SEED)
