# flexbench: the two commands (README.md).
#   make demo   the shipped recording from its video to the report (out/demo/report/report.html)
#   make test   the whole test suite
# Both install the system packages they need (scripts/install-deps.sh) and build.
# The build directory lives outside the clone so that rebuilds are quick; override with
# CARGO_TARGET_DIR=... (a fresh, empty directory works too).

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/flexbench/target
CARGO ?= cargo
BIN := $(CARGO_TARGET_DIR)/debug/flexbench
DEMO := out/demo
MECH := mechanisms/wind-pump.toml
REC := recordings/default

.PHONY: deps build test lint demo batch recording clean bench criterion fuzz golden golden-check

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --locked -p flexbench

# The tests, after the code policy: rustfmt's formatting (rustfmt.toml) and clippy with every
# warning an error, on every target of the workspace (tests and benchmarks included), no function
# over 80 lines without a comment saying why and no source file over 800 lines
# (scripts/long-functions.py --check), ARCHITECTURE.md's crate graph as cargo metadata has it
# (scripts/check-architecture.py); then the tests (the FEM's studies with them: its feature
# `studies`); then the
# Python side (scripts/python-tests.sh: the Python package installed by `pip install .` and
# checked against the command line; the MATLAB and Excel files read by scipy and openpyxl).
# The Python package's native module (crates/python) is tested from Python, not by cargo test.
test: deps lint
	$(CARGO) test --locked --workspace --exclude flexbench-benches --exclude flexbench-python --features flexbench-fem/studies
	bash scripts/python-tests.sh

lint: deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	python3 scripts/long-functions.py --check
	python3 scripts/check-architecture.py

# The shipped recording (rendered by `make recording`), from its video to the report, every
# stage's settings in pipelines/default.toml: calibrate -> track -> smooth -> process (Kalman
# smoother, drivers refitted as Fourier series of the crank angle, the bench's horizontal refined
# from the motion) -> overlay (the video with the tracked markers, the flagged samples and the
# fitted mechanism drawn) -> fem (the elastic lever's modes along the motion, forced response) ->
# compare (against the bench simulated at the recording's crank speed) -> report (HTML).
# A stage whose inputs and settings are unchanged is kept: a second `make demo` does no work.
demo: build
	$(BIN) check --mechanism $(MECH)
	$(BIN) run pipelines/default.toml
	@echo "demo: the report is $(DEMO)/report/report.html (figures inline; manifest $(DEMO)/manifest.json); the truth is in $(REC)/truth/"

# A batch: three recordings rendered at two frame rates and two crank speeds, and a fourth whose
# video is broken, run two at a time: three reports, one error, a summary table.
batch: build
	bash scripts/batch-demo.sh $(BIN) out/batch

# Regenerate the shipped recording (deterministic from the seed in its camera file).
recording: build
	$(BIN) render --mechanism $(MECH) --camera $(REC)/camera.toml --out $(REC)

# Every golden file (scipy's, pyarrow's and exact references, the bad-input corpus, the real
# pendulum's by-hand reference) remade by its script (the list: scripts/golden.py);
# `golden-check` remakes them in a scratch copy and compares (make test checks all but the two
# slow ones: the flexible crank's, 40 s, and the rotating beam's, three minutes).
golden:
	bash scripts/golden.sh

golden-check:
	bash scripts/golden.sh --check

clean:
	rm -rf out

# Benchmarks (not part of the tests). `make bench`: flexbench against its peers (scipy, numpy,
# Python + OpenCV) on the same inputs, as ratios, into docs/benchmarks.md with the machine's
# description. `make criterion`: criterion's statistics on the signal and fem kernels.
bench:
	@bash scripts/install-deps.sh bench
	bash benches/peers.sh

criterion: deps
	$(CARGO) bench --locked -p flexbench-benches

# Fuzz every reader of user input for 10 minutes each (nightly + cargo-fuzz; not part of test).
fuzz:
	bash scripts/fuzz.sh 600 2
