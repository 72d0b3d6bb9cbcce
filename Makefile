# flexbench: the two commands (README.md).
#   make demo   simulate the default bench and process its tracks (outputs in out/demo/)
#   make test   the whole test suite
# Both install the system packages they need (scripts/install-deps.sh) and build.
# The build directory lives outside the clone so that rebuilds are quick; override with
# CARGO_TARGET_DIR=... (a fresh, empty directory works too).

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/flexbench/target
CARGO ?= cargo
BIN := $(CARGO_TARGET_DIR)/debug/flexbench
DEMO := out/demo
MECH := pipelines/wind-pump.toml

.PHONY: deps build test demo clean

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --locked -p flexbench

test: deps
	$(CARGO) test --locked --workspace

demo: build
	$(BIN) check --mechanism $(MECH)
	$(BIN) simulate --mechanism $(MECH) --duration 2 --rate 1000 --settle 3 --out $(DEMO)/simulated
	$(BIN) process --tracks $(DEMO)/simulated/tracks.parquet --mechanism $(MECH) --out $(DEMO)/processed
	@echo "demo: figures in $(DEMO)/processed/forces.png (measured) and $(DEMO)/simulated/forces.png (truth)"

clean:
	rm -rf out
