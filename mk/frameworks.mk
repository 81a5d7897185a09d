# Training frameworks for the examples and the e2e tests (issue 7).
# Included by the top-level Makefile (-include mk/*.mk); $(STAMP)-extra-<fw> installs the pyproject
# extra <fw> into .venv once (re-run when pyproject.toml changes).

FRAMEWORKS := torch tensorflow xgboost jax paddle mpi finetune

.PHONY: $(addprefix extra-,$(FRAMEWORKS)) frameworks openmpi e2e e2e-deps

# make extra-torch, make extra-tensorflow, ...: one framework into the venv.
$(addprefix extra-,$(FRAMEWORKS)): extra-%: $(STAMP)-extra-%

frameworks: $(addprefix extra-,$(FRAMEWORKS))

# Open MPI from Debian when mpirun is missing (the MPIJob example's launcher runs it; mpi4py links
# against its libmpi). Root in containers and CI; sudo elsewhere.
openmpi:
	@command -v mpirun >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing Open MPI (openmpi-bin libopenmpi-dev) with apt-get"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends openmpi-bin libopenmpi-dev; }

# mpi4py needs the system MPI present before it is installed (and, without a wheel, to build).
$(STAMP)-extra-mpi: | openmpi

e2e-deps: frameworks openmpi $(STAMP)-dev

# Real multi-process training of every framework through the local backend.
e2e: e2e-deps
	$(BIN)/pytest -q -m e2e tests/e2e

# `make test` runs tests/e2e too, so it needs every framework (prerequisites of one target merge).
test: e2e-deps
