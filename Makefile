# privlab: two commands (README). Installs are idempotent: a stamp file named after the hash of
# pyproject.toml and this Makefile records that the current dependencies are installed, so `make run` / `make test`
# skip pip when nothing changed.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8501
# Beyond loopback `make run` needs a login: PRIVLAB_PASSWORD, or Streamlit's OIDC ([auth] in
# .streamlit/secrets.toml); INSECURE=1 serves to the network without one (docs/serving.md).
INSECURE ?=
PYTEST_ARGS ?=
# Real data for `make run`: $PRIVLAB_DATA_DIR if set, else ../shared/data when it exists
# (the developers' checkout layout); embedded data sets need nothing.
DEFAULT_DATA_DIR := $(if $(wildcard ../shared/data/adult/adult.data),$(abspath ../shared/data),)
run: export PRIVLAB_DATA_DIR ?= $(DEFAULT_DATA_DIR)
run: export PRIVLAB_INSECURE := $(if $(filter 1,$(INSECURE)),1,$(PRIVLAB_INSECURE))

HASH       := $(shell cat pyproject.toml Makefile | sha256sum | cut -c1-16)
STAMP      := $(VENV)/.installed-base-$(HASH)
STAMP_DEV  := $(VENV)/.installed-dev-$(HASH)

.PHONY: run test install install-dev chromium clean-stamps

run: install
	@$(PY) -m dashboard.base.serve_check --host "$(HOST)"
	$(PY) -m streamlit run dashboard/server.py --server.address $(HOST) --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

test: install-dev chromium
	$(PY) -m pytest -q --timeout=600 $(PYTEST_ARGS)

install: $(STAMP)
install-dev: $(STAMP_DEV)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): | $(PY)
	@echo "installing privlab into $(VENV) (pyproject.toml changed or first run)"
	$(PY) -m pip install -q --disable-pip-version-check -e .
	@rm -f $(VENV)/.installed-base-*
	@touch $@

$(STAMP_DEV): | $(PY)
	@echo "installing privlab[dev,scale] into $(VENV) (pyproject.toml changed or first run)"
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,scale]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP) $@

# Debian's chromium for the browser test (never `playwright install`); sudo only when not root.
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		echo "installing Debian chromium (apt-get)"; \
		$$SUDO apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

clean-stamps:
	rm -f $(VENV)/.installed-*
