# goal: build, install, test, demonstrate.
#
#   make demo                  build goal, install the MPI peers, run the main job
#   make test                  every test (cargo tests + C acceptance suite, no tracked file
#                              over 1 MB); installs the Debian packages the tests use
#                              first (MPIs, iproute2)
#   make install PREFIX=DIR    DIR/include/goal.h, DIR/lib/libgoal.{so,a},
#                              DIR/lib/pkgconfig/goal.pc, DIR/bin/goalrun
PREFIX ?= $(CURDIR)/build/prefix
CARGO ?= cargo
RELEASE := target/release

.PHONY: all build install test bench-check repo-check cargo-test ctest demo bench-p2p bench-overlap deps clean

all: build

build:
	$(CARGO) build --release --workspace

install: build
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/bin
	install -m 644 include/goal.h $(PREFIX)/include/goal.h
	install -m 755 $(RELEASE)/libgoal.so $(PREFIX)/lib/libgoal.so
	install -m 644 $(RELEASE)/libgoal.a $(PREFIX)/lib/libgoal.a
	install -m 755 $(RELEASE)/goalrun $(PREFIX)/bin/goalrun
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|g' goal.pc.in > $(PREFIX)/lib/pkgconfig/goal.pc

deps:
	scripts/install-deps.sh

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
	$(MAKE) bench-check repo-check cargo-test ctest

demo: deps install
	python3 bench/p2p.py --prefix $(PREFIX) --out results/p2p

bench-p2p: install
	python3 bench/p2p.py --prefix $(PREFIX) --out results/p2p

bench-overlap: install
	python3 bench/overlap.py --prefix $(PREFIX) --out results/overlap

clean:
	$(CARGO) clean
	rm -rf build
