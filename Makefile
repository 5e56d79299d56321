# TraceLoom build.
#
#   make            build/traceloom.so (the loadable extension) and build/traceloom (the CLI)
#   make test       every test suite: the layering check, check units (plain and ASan+UBSan),
#                   SQL tests, Python tests
#   make demo       analyse the bundled example profile and print a summary
#   make bench      benchmarks against bare SQLite baselines (see bench/README.md)
#   make fuzz       libFuzzer harnesses (tests/fuzz) and their seed corpora, in build/fuzz
#   make fuzz-smoke each harness for a few seconds on its corpus (docs/RELIABILITY.md)
#   make wheel      a manylinux wheel of the Python package in build/wheel (tools/build_wheel.sh)
#   make parity     every relation compared with the reference TraceLoom 0.1.4 (docs/PARITY.md)
#
# The build runs one job per CPU by default (`make -j1` for a serial build); the test
# suites of `make test` still run one after the other.
#
# Sources are found by wildcard: a new ext/**/*.c, tests/unit/test_*.c or tests/sql/*.sql
# file needs no change here.

ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

CC       ?= cc
CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter
OPT      ?= -O2 -g
DEPS_LIBS := -lyaml -lz -lm -lpthread
BUILD    := build

EXT_SRCS  := $(sort $(shell find ext -name '*.c' -not -path 'ext/cli/*'))
EXT_HDRS  := $(shell find ext -name '*.h')
EMBED_SRCS := $(sort $(wildcard sql/schema/*.sql sql/views/*.sql sql/compare/*.sql sql/options/*.sql rules/*.yaml configs/*.yaml))
EMBED_C   := $(BUILD)/gen/embedded_files.c
INCLUDES  := -Iext

# Three builds of the same sources:
#   ext/   position-independent, extension API only (sqlite3ext.h): build/traceloom.so
#   core/  SQLITE_CORE: direct SQLite calls, linked into the CLI and the unit tests
#   asan/  SQLITE_CORE with AddressSanitizer and UndefinedBehaviorSanitizer, for unit tests
EXT_OBJS  := $(patsubst %.c,$(BUILD)/ext/%.o,$(EXT_SRCS)) $(BUILD)/ext/gen/embedded_files.o
CORE_OBJS := $(patsubst %.c,$(BUILD)/core/%.o,$(EXT_SRCS)) $(BUILD)/core/gen/embedded_files.o
ASAN_OBJS := $(patsubst %.c,$(BUILD)/asan/%.o,$(EXT_SRCS)) $(BUILD)/asan/gen/embedded_files.o
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
ASAN_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests-asan/%,$(UNIT_SRCS))
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

.PHONY: all deps test test-layering test-unit test-asan test-sql test-python demo bench clean fixtures fuzz fuzz-smoke observer-contract valgrind wheel parity

all: deps $(BUILD)/traceloom.so $(BUILD)/traceloom

deps:
	@tools/ensure-deps.sh

$(EMBED_C): $(EMBED_SRCS) tools/embed.sh | deps
	@mkdir -p $(dir $@)
	tools/embed.sh $@ $(EMBED_SRCS)

$(BUILD)/ext/%.o: %.c $(EXT_HDRS) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) -fPIC -fvisibility=hidden $(INCLUDES) -c $< -o $@

$(BUILD)/ext/gen/embedded_files.o: $(EMBED_C)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) -fPIC -fvisibility=hidden $(INCLUDES) -c $< -o $@

$(BUILD)/core/%.o: %.c $(EXT_HDRS) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) -DSQLITE_CORE $(INCLUDES) -c $< -o $@

$(BUILD)/core/gen/embedded_files.o: $(EMBED_C)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) -DSQLITE_CORE $(INCLUDES) -c $< -o $@

$(BUILD)/asan/%.o: %.c $(EXT_HDRS) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g $(SAN) -DSQLITE_CORE $(INCLUDES) -c $< -o $@

$(BUILD)/asan/gen/embedded_files.o: $(EMBED_C)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g $(SAN) -DSQLITE_CORE $(INCLUDES) -c $< -o $@

$(BUILD)/traceloom.so: $(EXT_OBJS)
	$(CC) -shared -o $@ $(EXT_OBJS) $(DEPS_LIBS)
	@if nm -D --undefined-only $@ | grep -q ' sqlite3_'; then \
	  echo "error: traceloom.so references libsqlite3 symbols directly (use sqlite3ext.h)"; \
	  nm -D --undefined-only $@ | grep ' sqlite3_'; rm -f $@; exit 1; fi

$(BUILD)/libtraceloom_core.a: $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtraceloom_asan.a: $(ASAN_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/traceloom: ext/cli/main.c $(BUILD)/libtraceloom_core.a $(EXT_HDRS) | deps
	$(CC) $(CSTD) $(WARN) $(OPT) -DSQLITE_CORE $(INCLUDES) -o $@ ext/cli/main.c \
	  $(BUILD)/libtraceloom_core.a -lsqlite3 $(DEPS_LIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/tl_check.h $(EXT_HDRS) $(BUILD)/libtraceloom_core.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g -DSQLITE_CORE $(INCLUDES) -Itests/unit -o $@ $< \
	  $(BUILD)/libtraceloom_core.a -lsqlite3 $(DEPS_LIBS) $(CHECK_LIBS)

$(BUILD)/tests-asan/%: tests/unit/%.c tests/unit/tl_check.h $(EXT_HDRS) $(BUILD)/libtraceloom_asan.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g $(SAN) -DSQLITE_CORE $(INCLUDES) -Itests/unit -o $@ $< \
	  $(BUILD)/libtraceloom_asan.a -lsqlite3 $(DEPS_LIBS) $(CHECK_LIBS)

fixtures: all
	@tests/fixtures/materialize.sh $(BUILD)/fixtures

test-unit: all fixtures $(UNIT_BINS)
	@tests/run_unit.sh $(UNIT_BINS)

test-asan: all fixtures $(ASAN_BINS)
	@CK_FORK=no ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run_unit.sh $(ASAN_BINS)

test-sql: all fixtures
	@tests/run_sql.sh tests/sql/*.sql

test-python: all fixtures
	@tests/run_python.sh

# The include graph of ext/ against docs/ARCHITECTURE.md (Layers); no build needed.
test-layering:
	@python3 tools/check_layering.py

# The suites run one after the other (each builds what it needs in parallel first): two of
# them at once would compete for the same cores and interleave their reports.
TEST_SUITES := test-layering test-unit test-asan test-sql test-python fuzz-smoke
test:
	@for suite in $(TEST_SUITES); do $(MAKE) --no-print-directory $$suite || exit 1; done
	@echo "all test suites passed"

# libFuzzer harnesses: the sources again, built by clang with the fuzzer's coverage
# instrumentation and ASan+UBSan (-Werror stays on the harnesses; other clang versions may
# warn where gcc does not, which must not break the fuzz build of someone else's file).
FUZZ_CC     ?= clang
FUZZ_SAN    := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_OBJS   := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(EXT_SRCS)) $(BUILD)/fuzz/obj/gen/embedded_files.o
FUZZ_SRCS   := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

$(BUILD)/fuzz/obj/%.o: %.c $(EXT_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(filter-out -Werror,$(WARN)) -O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN) -DSQLITE_CORE $(INCLUDES) -c $< -o $@

$(BUILD)/fuzz/obj/gen/embedded_files.o: $(EMBED_C)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) -O1 -g $(FUZZ_SAN) -DSQLITE_CORE $(INCLUDES) -c $< -o $@

$(BUILD)/fuzz/libtraceloom_fuzz.a: $(FUZZ_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h tests/fuzz/fuzz_profile.h $(BUILD)/fuzz/libtraceloom_fuzz.a
	$(FUZZ_CC) $(CSTD) $(WARN) -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) -DSQLITE_CORE $(INCLUDES) \
	  -DTL_FUZZ_FIXTURES_DEFAULT='"$(abspath $(BUILD))/fixtures"' -o $@ $< \
	  $(BUILD)/fuzz/libtraceloom_fuzz.a -lsqlite3 $(DEPS_LIBS)

fuzz: fixtures
	@tools/ensure-deps.sh fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@python3 tests/fuzz/make_corpus.py $(BUILD)/fixtures $(BUILD)/fuzz/corpus

fuzz-smoke: fuzz
	@tests/fuzz/smoke.sh $(BUILD)/fuzz

# The vLLM source contract of the observer (downloads the vllm wheel once, no install).
observer-contract:
	@python3 observer/tools/check_vllm_contract.py --download-dir /tmp/vllm-wheel

# valgrind over the unit-test programs and two CLI runs (minutes; not part of make test).
valgrind: all fixtures $(UNIT_BINS)
	@BUILD=$(BUILD) tests/valgrind.sh

demo: all
	@examples/demo.sh

# A manylinux wheel of the Python package (extension, CLI, rules and configs; libyaml and
# SQLite bundled by auditwheel), so that `pip install` needs no compiler: tools/build_wheel.sh.
wheel: all
	@BUILD=$(BUILD) tools/build_wheel.sh

bench: all
	@bench/run.sh

# Every relation of the reference TraceLoom 0.1.4 compared with ours on every fixture and
# generated profile (tools/parity.py installs the reference into build/refvenv; where it
# cannot, it says why and skips). The table is written to build/parity/report.md.
parity: all fixtures
	@python3 tools/parity.py --build $(BUILD)

clean:
	rm -rf $(BUILD)

# test_faults links with allocation wrappers (its own rules).
include tests/unit/faults.mk
