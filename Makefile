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
REC := recordings/default

.PHONY: deps build test demo recording clean bench

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --locked -p flexbench

test: deps
	$(CARGO) test --locked --workspace --exclude flexbench-benches

# The shipped recording (rendered by `make recording`): calibrate -> track -> process -> fem.
# Kinematics by the Kalman smoother (noise and jerk densities from the data), then the drivers
# refitted as Fourier series of the crank angle over the recording's turns, the bench's
# horizontal refined from the motion; then the elastic lever's modes along the motion and its
# forced response, compared with the markers' residual from the fit.
demo: build
	$(BIN) check --mechanism $(MECH)
	$(BIN) calibrate --views $(REC)/views --board 9x6 --square 0.03 --plane-view $(REC)/plane-view.png --clicks $(REC)/clicks.toml --out calibration/default.yaml
	$(BIN) track --video $(REC)/video.mp4 --calibration calibration/default.yaml --out $(DEMO)/tracks.parquet
	$(BIN) process --tracks $(DEMO)/tracks.parquet --mechanism $(MECH) --out $(DEMO)/processed --smoother --periodic --refine-horizontal
	$(BIN) fem --kinematics $(DEMO)/processed/bodies.parquet --forces $(DEMO)/processed/forces.parquet --mechanism $(MECH) --measured $(DEMO)/processed/fit_residuals.parquet --out $(DEMO)/fem
	@echo "demo: forces in $(DEMO)/processed/forces.png, the lever's modes in $(DEMO)/fem/modes-3-6.png; the truth is in $(REC)/truth/"

# Regenerate the shipped recording (deterministic from the seed in its camera file).
recording: build
	$(BIN) render --mechanism $(MECH) --camera $(REC)/camera.toml --out $(REC)

clean:
	rm -rf out

# Benchmarks (not part of the tests): criterion on the signal stage beside the same work in
# scipy, and the tracker's throughput against decoding alone.
bench: deps
	$(CARGO) bench --locked -p flexbench-benches
	bash benches/signal-scipy.sh
	bash benches/fem-scipy.sh
