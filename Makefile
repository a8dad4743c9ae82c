# The two commands of README.md, and the few around them. CMake does the building; this file
# installs what is missing first (scripts/deps.sh, apt-get as root) so that a fresh Debian 12
# machine needs nothing else.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build demo test lint install clean

all: build

build:
	@scripts/deps.sh build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_FAILPOINTS=OFF $(CMAKE_FLAGS) >$(BUILD).configure.log 2>&1 \
	  || { cat $(BUILD).configure.log; exit 1; }
	@cmake --build $(BUILD) -j$(JOBS)

# The main job.
demo: build
	@scripts/demo.sh $(BUILD)

# Every test: the normal build, then ASan+UBSan, TSan over the threaded parts, and the fuzzers.
test:
	@scripts/deps.sh test
	@scripts/test.sh

# Format (.clang-format) and cppcheck over src/, tools/, include/ and tests/; also the first
# stage of `make test`. `scripts/lint.sh --fix` formats the tree.
lint:
	@scripts/deps.sh test
	@scripts/lint.sh

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-* build*.configure.log
