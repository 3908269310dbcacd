# SPDX-License-Identifier: Apache-2.0
# The README's two commands, and a few more.  Everything is built by CMake in
# $(BUILD); CMAKE_FLAGS passes options through (see CMakeLists.txt).
#
#   make demo      install missing packages, build, run the main job
#   make test      install missing packages, build, run every test (ctest);
#                  also torch in a cached venv (install-deps.sh torch) for
#                  ringway_torch's tests (skipped, saying so, if it cannot be)
#   make torch     build python/ringway_torch into the venv (pip install)
#   make bench     the performance comparisons of bench/ (prints figures)
#   make install   PREFIX=/usr/local (libraries, tools, header, pkg-config)
#   make format    rewrite every C file as .clang-format says (CI checks it)
#   make fuzz      every libFuzzer target for FUZZ_SECONDS each, in $(FUZZ_BUILD)
#                  (clang, RINGWAY_FUZZ=ON); fails on any finding
#   make test-nccl-versions  fetch NCCL's wheel (nvidia-nccl-cu13 $(NCCL_WHEEL_VERSION))
#                  into $(NCCL_WHEEL_CACHE) and check every plugin version it and
#                  the installed NCCL ask for against the plugin's exports

BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)
CTEST_FLAGS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
NCCL_WHEEL_CACHE ?= $(HOME)/.cache/ringway/nccl-wheels
NCCL_WHEEL_VERSION ?= 2.32.3

.PHONY: all deps deps-torch build demo test test-nccl-versions torch bench fuzz format install clean

all: build

deps:
	@scripts/install-deps.sh

deps-torch:
	@scripts/install-deps.sh torch || \
	  echo "ringway: torch could not be installed: the torch tests will be skipped"

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: deps-torch build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

test-nccl-versions: build
	@scripts/fetch-nccl-wheel.sh $(NCCL_WHEEL_CACHE) $(NCCL_WHEEL_VERSION)
	cmake -S . -B $(BUILD) -DRINGWAY_NCCL_WHEEL_CACHE=$(NCCL_WHEEL_CACHE) \
	  -DRINGWAY_NCCL_WHEEL_VERSION=$(NCCL_WHEEL_VERSION)
	cd $(BUILD) && ctest --output-on-failure -L nccl_versions

torch: deps-torch build
	LIBRINGWAY_DIR=$(CURDIR)/$(BUILD)/coll $${TORCH_VENV:-$${XDG_CACHE_HOME:-$$HOME/.cache}/ringway/venv}/bin/pip \
	  install --no-build-isolation ./python

bench: build
	@scripts/install-deps.sh bench
	@bench/run-all.sh $(BUILD)

fuzz:
	@scripts/install-deps.sh fuzz
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_C_COMPILER=clang -DRINGWAY_FUZZ=ON \
	  -DRINGWAY_WITH_CUDA=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	@scripts/install-deps.sh lint
	@scripts/check-format.sh --fix

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
