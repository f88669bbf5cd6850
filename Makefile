# goal: build, install, test, demonstrate.
#
#   make demo                  build goal, install the MPI peers, run the main job
#   make test                  every test (cargo tests + C acceptance suite + the Python
#                              package's and the torch backend's pytest, no tracked file
#                              over 1 MB); installs the Debian packages and Python modules
#                              the tests use first (MPIs, iproute2; maturin, numpy,
#                              ml_dtypes, pytest; torch)
#   make python PREFIX=DIR     the Python package (import goal): installs maturin, numpy,
#                              ml_dtypes and pytest if missing, builds the wheel into
#                              DIR/share/goal/python/ and pip-installs it (docs/python.md)
#   make torch PREFIX=DIR      torch (CPU) and goal_torch, the torch.distributed backend
#                              "goal" (python/goal_torch, docs/python.md); make torch-test
#                              runs its pytest (skipped, saying so, if torch cannot install)
#   make install PREFIX=DIR    DIR/include/goal.h, DIR/lib/libgoal.{so,a},
#                              DIR/lib/pkgconfig/goal.pc, DIR/bin/goalrun, DIR/bin/goal,
#                              DIR/share/goal/bench/ (the drivers `goal bench` and
#                              `goal tune` run, and the C sources they compile)
PREFIX ?= $(CURDIR)/build/prefix
CARGO ?= cargo
# Where cargo puts what it builds: CARGO_TARGET_DIR if set (cargo reads it too).
RELEASE := $(or $(CARGO_TARGET_DIR),target)/release

.PHONY: all build install python python-test torch torch-test test bench-check repo-check cargo-test ctest demo bench-p2p bench-overlap deps clean

all: build

build:
	$(CARGO) build --release --workspace

install: build
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/bin $(PREFIX)/share/goal/bench
	install -m 644 include/goal.h $(PREFIX)/include/goal.h
	install -m 755 $(RELEASE)/libgoal.so $(PREFIX)/lib/libgoal.so
	install -m 644 $(RELEASE)/libgoal.a $(PREFIX)/lib/libgoal.a
	install -m 755 $(RELEASE)/goalrun $(PREFIX)/bin/goalrun
	install -m 755 $(RELEASE)/goal $(PREFIX)/bin/goal
	install -m 644 bench/*.py bench/*.c bench/*.cpp bench/*.h bench/README.md $(PREFIX)/share/goal/bench/
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|g' goal.pc.in > $(PREFIX)/lib/pkgconfig/goal.pc

deps:
	scripts/install-deps.sh

python:
	scripts/install-python.sh --build $(PREFIX)

# The Python package's tests start real jobs with the goalrun of PREFIX.
python-test: install python
	GOAL_PREFIX=$(abspath $(PREFIX)) $${PYTHON:-python3} -m pytest -q crates/goal-py/tests

# torch.distributed backend: torch from PyPI (scripts/install-torch.sh), then
# goal_torch built against it and PREFIX's libgoal.so.
torch: install
	scripts/install-torch.sh --or-skip --build $(PREFIX)

torch-test: torch
	$${PYTHON:-python3} -m pytest -q python/goal_torch/tests

cargo-test:
	$(CARGO) test --release --workspace

ctest: install
	ctests/run.sh $(PREFIX)

# Every benchmark driver at least starts: its --help parses and prints.
bench-check:
	@for f in bench/*.py; do python3 $$f --help > /dev/null || { echo "bench-check: $$f --help failed"; exit 1; }; done; echo "bench-check: every bench/*.py answers --help"

# No tracked file over 1 MB: raw benchmark output goes to results/ (docs/measurements/README.md).
repo-check:
	@scripts/check-repo.sh

test: deps
	$(MAKE) bench-check repo-check cargo-test ctest python-test torch-test

demo: deps install
	$(PREFIX)/bin/goal bench p2p --prefix $(PREFIX) --out results/p2p

bench-p2p: install
	$(PREFIX)/bin/goal bench p2p --prefix $(PREFIX) --out results/p2p

bench-overlap: install
	$(PREFIX)/bin/goal bench overlap --prefix $(PREFIX) --out results/overlap

clean:
	$(CARGO) clean
	rm -rf build
