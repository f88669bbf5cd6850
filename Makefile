# goal: build, install, test, demonstrate.
#
#   make demo                  build goal, install the MPI peers, run the main job
#   make test                  every test (cargo tests + a 45 s cargo-fuzz run of the text
#                              parser (scripts/fuzz-smoke.sh) + C acceptance suite + the MPI layer's
#                              and `goal bench mpi --quick` + the instruction guards of the
#                              small-message path and of the MPI layer's pass-through (make
#                              instr-check) + the Python package's and the torch
#                              backend's pytest, no
#                              tracked file over 1 MB); installs the Debian packages and
#                              Python modules the tests use first (MPIs, iproute2; maturin,
#                              numpy, ml_dtypes, pytest; torch)
#   make python PREFIX=DIR     the Python package (import goal): installs maturin, numpy,
#                              ml_dtypes and pytest if missing, builds the wheel into
#                              DIR/share/goal/python/ and pip-installs it (docs/python.md)
#   make torch PREFIX=DIR      torch (CPU) and goal_torch, the torch.distributed backend
#                              "goal" (python/goal_torch, docs/python.md); make torch-test
#                              runs its pytest (skipped, saying so, if torch cannot install)
#   make install PREFIX=DIR    DIR/include/goal.h, DIR/lib/libgoal.{so,a},
#                              DIR/lib/pkgconfig/goal.pc, DIR/bin/goalrun, DIR/bin/goal,
#                              DIR/share/goal/bench/ (the drivers `goal bench` and
#                              `goal tune` run, and the C sources they compile),
#                              DIR/share/goal/scripts/install-oneccl.sh (oneCCL for
#                              the installed `goal bench`, into DIR/share/goal/build/oneccl),
#                              DIR/lib/libgoal-mpi-openmpi.so and libgoal-mpi-mpich.so
#                              (the MPI layer, docs/mpi.md; each built where its MPI is)
PREFIX ?= $(CURDIR)/build/prefix
CARGO ?= cargo
# Where cargo puts what it builds: CARGO_TARGET_DIR if set (cargo reads it too).
RELEASE := $(or $(CARGO_TARGET_DIR),target)/release

.PHONY: all build mpi-lib mpitest install python python-test torch torch-test test bench-check bench-mpi-check instr-check repo-check cargo-test fuzz-smoke ctest demo bench-p2p bench-overlap deps clean

all: build

build:
	$(CARGO) build --release --workspace

# libgoal-mpi (docs/mpi.md): the same C sources against each MPI's mpi.h.
MPI_SRC := $(wildcard mpi/*.c)
MPI_CFLAGS := -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter -Iinclude
MPI_BUILD := build/mpi
MPI_FLAVOURS := openmpi mpich

mpi-lib: build
	@mkdir -p $(MPI_BUILD)
	@for f in $(MPI_FLAVOURS); do \
	    if command -v mpicc.$$f > /dev/null; then \
	        echo "mpicc.$$f ... -o $(MPI_BUILD)/libgoal-mpi-$$f.so"; \
	        mpicc.$$f $(MPI_CFLAGS) $(MPI_SRC) -o $(MPI_BUILD)/libgoal-mpi-$$f.so \
	            -L$(RELEASE) -lgoal -Wl,-rpath,$(abspath $(PREFIX))/lib || exit 1; \
	    else echo "mpi-lib: no mpicc.$$f: libgoal-mpi-$$f.so not built"; fi; \
	done

install: build mpi-lib
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/bin $(PREFIX)/share/goal/bench
	install -m 644 include/goal.h $(PREFIX)/include/goal.h
	install -m 755 $(RELEASE)/libgoal.so $(PREFIX)/lib/libgoal.so
	install -m 644 $(RELEASE)/libgoal.a $(PREFIX)/lib/libgoal.a
	install -m 755 $(RELEASE)/goalrun $(PREFIX)/bin/goalrun
	install -m 755 $(RELEASE)/goal $(PREFIX)/bin/goal
	install -m 644 bench/*.py bench/*.c bench/*.cpp bench/*.h bench/README.md $(PREFIX)/share/goal/bench/
	install -d $(PREFIX)/share/goal/scripts
	install -m 755 scripts/install-oneccl.sh $(PREFIX)/share/goal/scripts/
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|g' goal.pc.in > $(PREFIX)/lib/pkgconfig/goal.pc
	for f in $(MPI_BUILD)/libgoal-mpi-*.so; do [ ! -e "$$f" ] || install -m 755 "$$f" $(PREFIX)/lib/; done

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

# The tests include `goal bench torch --quick` (test_bench_torch.py), against PREFIX.
torch-test: torch
	GOAL_PREFIX=$(abspath $(PREFIX)) $${PYTHON:-python3} -m pytest -q python/goal_torch/tests

cargo-test:
	$(CARGO) test --release --workspace

# A short cargo-fuzz run of the GOAL text checker and compiler (docs/goal-text.md#fuzzing);
# installs nightly and cargo-fuzz if missing. FUZZ_SECONDS sets the time (default 45).
fuzz-smoke:
	scripts/fuzz-smoke.sh

ctest: install
	ctests/run.sh $(PREFIX)

# The MPI layer's tests: plain MPI programs under mpirun and mpiexec with
# libgoal-mpi preloaded (mpitests/run.sh says how).
mpitest: install
	mpitests/run.sh $(PREFIX)

# `goal bench mpi --quick` (a minute or two; across emulated hosts too when root): the layer's
# served calls all ran on goal, and the result's JSON has every table's numbers.
bench-mpi-check: install
	python3 bench/mpi.py --prefix $(PREFIX) --quick --out build/bench-mpi-check/mpi
	python3 bench/mpi_report.py --check build/bench-mpi-check/mpi.json

# The small-message path's instructions (bench/instr.sh: a 2-rank send and
# receive, the shape of a barrier's, rank 0 counted by callgrind) stay at most
# INSTR_MAX per Run+Wait: 1,427-1,428 at the limit's last change (2026-11-29;
# 1,610 before). The limit leaves some 9 % for what differs between CI
# machines (the CPU model changes, and glibc picks its memcpy by CPU), and
# still catches a return to the old path. Lower it when the path gets shorter;
# raise it only with the reason in the commit.
INSTR_MAX ?= 1560
# And what libgoal-mpi adds to a blocking collective it leaves to MPI
# (bench/instr_mpi.sh: Open MPI's 64-byte MPI_Bcast at its root, the layer's
# own instructions per call) stays at most INSTR_MPI_MAX: 82 at its
# introduction (2026-12-01; 105, and 29 more in MPI_Type_size, before).
INSTR_MPI_MAX ?= 100
# And rank 0's part of AUTO's barrier among 4 ranks, every message there
# before its receive starts (bench/instr.sh's barrier mode: the path of an
# unexpected message, kept and then matched, which the 2-rank count above
# never takes), stays at most INSTR_BARRIER4_MAX: 3,627-3,650 at its
# introduction (2026-12-01), the same 9 % above.
INSTR_BARRIER4_MAX ?= 4000
instr-check: install
	bench/instr.sh $(PREFIX) --max $(INSTR_MAX)
	bench/instr.sh $(PREFIX) barrier 10000 --ranks 4 --max $(INSTR_BARRIER4_MAX)
	bench/instr_mpi.sh $(PREFIX) --max $(INSTR_MPI_MAX)

# Every benchmark driver at least starts: its --help parses and prints.
bench-check:
	@for f in bench/*.py; do python3 $$f --help > /dev/null || { echo "bench-check: $$f --help failed"; exit 1; }; done; echo "bench-check: every bench/*.py answers --help"

# No tracked file over 1 MB: raw benchmark output goes to results/ (docs/measurements/README.md).
repo-check:
	@scripts/check-repo.sh

test: deps
	$(MAKE) bench-check repo-check cargo-test fuzz-smoke ctest mpitest bench-mpi-check instr-check python-test torch-test

demo: deps install
	$(PREFIX)/bin/goal bench p2p --prefix $(PREFIX) --out results/p2p

bench-p2p: install
	$(PREFIX)/bin/goal bench p2p --prefix $(PREFIX) --out results/p2p

bench-overlap: install
	$(PREFIX)/bin/goal bench overlap --prefix $(PREFIX) --out results/overlap

clean:
	$(CARGO) clean
	rm -rf build
