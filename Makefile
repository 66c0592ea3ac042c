# Shortcuts for the README's two commands; the real build is CMake + ctest.
#   make demo   install what is missing, build, run the built-in demo
#   make test   install what is missing, build, run every test (plain + ASan/UBSan + fuzz smoke + lint)
#   make sim    the learned-rate simulation: build/sim/results.json and docs/learned-rate.md
#   make lint   cppcheck, clang-tidy (.clang-tidy), banned functions (scripts/checksrc.sh), clang-format
#               over lib/ src/ proxy/ gateway/, shellcheck over every shell script
#               (scripts/checkshell.sh); fails on any finding
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
LINT_BUILD ?= build-lint
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# ctest's jobs for the whole suite: twice the cores, as most integration
# tests wait rather than compute; tests/schedule.cmake keeps the ones that
# compute or measure time from running beside each other.
CTEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
FUZZ_SECONDS ?= 10
SIM_SEEDS  ?= 2 3 4 5

# Debian packages the build, the tests and the demo need.
DEB_PACKAGES = build-essential cmake pkg-config clang libclang-rt-14-dev \
  libcurl4-openssl-dev libjansson-dev libevent-dev libhiredis-dev libsqlite3-dev \
  libcmocka-dev curl jq redis-server nginx-light python3 python3-requests \
  cppcheck clang-tidy shellcheck libssl-dev openssl chromium nodejs npm man-db prometheus libyaml-dev \
  golang-go

.PHONY: all deps build asan fuzz fuzz-build demo lint sim test test-unit test-asan clean install

all: build

# Installs only what is missing, so a second run is quick and needs no network.
# A package counts as present when a command of its name is already there
# (npm ships inside some nodejs builds, which then conflict with Debian's npm).
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || command -v $$p >/dev/null || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing: $$missing"; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPOLITE_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)

fuzz-build: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPOLITE_FUZZ=ON -DPOLITE_TESTS=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS)

# A bounded run of every fuzz target (FUZZ_SECONDS each, JOBS at a time:
# scripts/fuzz_one.sh), seeded from tests/fuzz/corpus/NAME and the
# directories listed in tests/fuzz/NAME.seeds (e.g. the diagnose fixtures,
# used as they are rather than copied).
fuzz: fuzz-build
	@cd $(FUZZ_BUILD) && for n in fuzz_*; do if [ -f "$$n" ] && [ -x "$$n" ]; then echo "$$n"; fi; done >.targets
	@xargs -P $(JOBS) -n 1 scripts/fuzz_one.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) <$(FUZZ_BUILD)/.targets \
	  && echo "fuzz: all targets ran clean"

# Static analysis; both tools must report nothing. cppcheck's false positives
# are silenced inline (// cppcheck-suppress id, with the reason); clang-tidy's
# checks and their exclusions are in .clang-tidy. The lint build directory is
# only configured (Debug, so asserts inform the analyzer), never built: all
# clang-tidy needs is its compile_commands.json.
LINT_SOURCES = $(sort $(wildcard lib/*.c common/*.c src/*.c net/*.c proxy/*.c gateway/*.c))
lint: deps
	cmake -S . -B $(LINT_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPOLITE_TESTS=OFF \
	  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
	cppcheck --enable=warning,portability,performance --inline-suppr \
	  --error-exitcode=1 --std=c11 -Iinclude -Ilib -Icommon -Isrc -Inet -Iproxy -Igateway \
	  --suppress=missingIncludeSystem -q -j$(JOBS) lib common src net proxy gateway
	@echo "cppcheck: clean"
	@log=$(LINT_BUILD)/clang-tidy.log; rc=0; \
	printf '%s\n' $(LINT_SOURCES) | \
	  xargs -P$(JOBS) -n1 clang-tidy -p $(LINT_BUILD) --quiet >$$log 2>&1 || rc=$$?; \
	grep -v -E '^[0-9]+ warnings? generated\.$$' $$log || true; \
	if [ $$rc -ne 0 ]; then echo "clang-tidy: findings above (exit $$rc)"; exit 1; fi; \
	echo "clang-tidy: clean ($(words $(LINT_SOURCES)) files)"
	scripts/checksrc.sh lib common src net proxy gateway
	scripts/checklayers.sh
	scripts/checksize.sh
	scripts/checkshell.sh
	@files=$$(git ls-files '*.c' '*.h' 2>/dev/null || find lib common src net proxy gateway include tests examples bench -name '*.[ch]'); \
	clang-format --dry-run --Werror $$files || { echo "clang-format: run 'clang-format -i' on the files above"; exit 1; }; \
	echo "clang-format: clean ($$(echo $$files | wc -w) files)"

# The learned-rate simulation (tests/sim): the limiter zoo against polite's
# real scheduler and controller and the peer models, on a fake clock, in
# about a second; writes build/sim/results.json and renders the report.
# `ctest -R sim/zoo` holds the same runs to the targets.
sim: build
	bash tests/sim/run_all.sh $(BUILD)/polite_sim $(BUILD)/sim $(SIM_SEEDS)
	python3 tests/sim/render.py $(BUILD)/sim docs/learned-rate.md

demo: build
	@bash tests/demo.sh $(BUILD)/polite

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -L unit

test-asan: asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -L unit

# Everything: the whole suite on the normal build, the unit suite under
# ASan+UBSan, a short fuzz run of every parser, then the static analysis.
# Each stage is timed (scripts/stage.sh): the table at the end, also in
# $(BUILD)/make-test-stages.md, says where the time went.
STAGES = $(BUILD)/make-test-stages.md
test: deps
	@mkdir -p $(BUILD) && printf '| make test stage | wall s | CPU s |\n|---|---:|---:|\n' >$(STAGES)
	@scripts/stage.sh $(STAGES) build $(MAKE) --no-print-directory build
	@scripts/stage.sh $(STAGES) "build, ASan+UBSan" $(MAKE) --no-print-directory asan
	@scripts/stage.sh $(STAGES) "ctest -j$(CTEST_JOBS)" \
	  ctest --test-dir $(BUILD) --output-on-failure -j$(CTEST_JOBS)
	@ASAN_OPTIONS=detect_leaks=1 scripts/stage.sh $(STAGES) "ctest ASan+UBSan, unit and asan" \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -L 'unit|asan'
	@scripts/stage.sh $(STAGES) "build, fuzz" $(MAKE) --no-print-directory fuzz-build
	@scripts/stage.sh $(STAGES) "fuzz, $(FUZZ_SECONDS) s a target" \
	  $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)
	@scripts/stage.sh $(STAGES) lint $(MAKE) --no-print-directory lint
	@cat $(STAGES)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(LINT_BUILD)
