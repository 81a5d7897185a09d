# The web view (issue 27): Debian's Chromium and its driver for the browser tests (Selenium drives it
# by path; browser downloads are blocked here), the screenshots checked in under docs/images/ui, and
# the job-list benchmark. Root in containers and CI; sudo elsewhere.

.PHONY: chromium ui-screenshots bench-ui

chromium:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing Chromium (chromium chromium-driver) with apt-get"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver; }

# The browser tests run in both; prerequisites of one target merge.
test integration: chromium

UI_SHOTS := docs/images/ui

# Regenerates the PNGs README links: the tests that take them write there instead of their tmp dir.
ui-screenshots: chromium $(STAMP)-extra-torch
	TRAINOP_UI_SCREENSHOTS=$(CURDIR)/$(UI_SHOTS) $(BIN)/pytest -q tests/integration/ui/test_ui_local.py

bench-ui: $(STAMP)-dev
	$(BIN)/python tests/benchmarks/bench_ui.py
