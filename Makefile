# nvmeof: a userspace NVMe over Fabrics RDMA initiator. See README.md.
#   make            library, fio engine, tests (build/out)
#   make SAN=1      the same with ASan and UBSan (build/san)
#   make test       everything CI runs: unit tests (plain and sanitized), then
#                   the real-target suites in the test bed (plain and sanitized)
CC ?= cc
ifeq ($(origin CC),default)
CC = cc
endif
OPT ?= -O2
# Portable code only: the test-bed guest CPU lacks the host's AVX-512.
CFLAGS_BASE = -std=c11 $(OPT) -g -fPIC -Wall -Wextra -Werror -Wshadow \
	-Wpointer-arith -Wformat=2 -Wstrict-prototypes -Wno-format-nonliteral -Wno-format-truncation
CPPFLAGS_BASE = -D_GNU_SOURCE -Icore/include -Icore
LIBS = -lrdmacm -libverbs -lpthread
ifneq ($(wildcard /usr/include/valgrind/memcheck.h),)
CPPFLAGS_BASE += -DNVMEOF_VALGRIND
endif

ifeq ($(SAN),1)
O = build/san
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
O = build/out
SANFLAGS =
endif
CFLAGS_ALL = $(CFLAGS_BASE) $(SANFLAGS) $(CFLAGS)
CPPFLAGS_ALL = $(CPPFLAGS_BASE) $(CPPFLAGS)

CORE_SRC = core/protocol.c core/status.c core/rdma.c core/mem.c core/queue.c core/ctrl.c core/fakewire.c
CORE_OBJ = $(CORE_SRC:%.c=$(O)/%.o)
HDRS = $(wildcard core/*.h core/include/*.h tests/unit/*.h)

UNIT_TESTS = $(O)/tests/unit_protocol $(O)/tests/unit_tid $(O)/tests/unit_queue
TARGET_TESTS = $(O)/tests/target_core
BENCH = $(O)/bench/percmd

# fio engines must be built against the same fio version's headers as the
# fio that loads them: by default the distribution's source of the installed
# fio (engine/fetch-fio-src); or FIO_SRC=/path/to/configured/fio-source.
FIO_SRC ?= build/fio-src
ENGINE = $(O)/libnvmeof_fio.so

.PHONY: all lib engine unit test test-unit test-target testbed demo bench clean
all: lib engine $(UNIT_TESTS) $(TARGET_TESTS) $(BENCH)
lib: $(O)/libnvmeof.so $(O)/libnvmeof.a
engine: $(ENGINE)

$(O)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

# Public symbols are the nvmeof_* API; everything else stays hidden.
$(O)/core/%.o: CFLAGS_ALL += -DNVMEOF_BUILD
$(O)/libnvmeof.so: $(CORE_OBJ)
	$(CC) -shared $(SANFLAGS) -o $@ $^ $(LIBS) -Wl,--version-script=core/libnvmeof.map
$(O)/libnvmeof.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(O)/tests/unit_protocol: $(O)/tests/unit/test_protocol.o $(O)/core/protocol.o $(O)/core/status.o
	$(CC) $(SANFLAGS) -o $@ $^
$(O)/tests/target_core: $(O)/tests/target/core_test.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/bench/percmd: $(O)/bench/percmd.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/unit_queue: $(O)/tests/unit/test_queue.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/unit_tid: $(O)/tests/unit/test_tid.o $(O)/engine/tid.o
	$(CC) $(SANFLAGS) -o $@ $^
$(O)/tests/unit/test_tid.o: CPPFLAGS_ALL += -Iengine

$(FIO_SRC)/.configured:
	engine/fetch-fio-src $(FIO_SRC)
# fio's headers are not ours: include them as system headers, gnu11 as fio is.
$(O)/engine/fio_nvmeof.o: engine/fio_nvmeof.c engine/tid.h $(HDRS) $(FIO_SRC)/.configured
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -isystem $(FIO_SRC) -include $(FIO_SRC)/config-host.h \
		$(filter-out -std=c11,$(CFLAGS_ALL)) -std=gnu11 -c $< -o $@
$(ENGINE): $(O)/engine/fio_nvmeof.o $(O)/engine/tid.o $(CORE_OBJ)
	$(CC) -shared $(SANFLAGS) -o $@ $^ $(LIBS)

test-unit:
	$(MAKE) all
	$(MAKE) all SAN=1
	for t in $(notdir $(UNIT_TESTS)); do build/out/tests/$$t && build/san/tests/$$t || exit 1; done

testbed:
	tests/testbed/setup

test-target: testbed
	$(MAKE) all
	$(MAKE) all SAN=1
	tests/testbed/run bash tests/target/run-all.sh

test: test-unit test-target

# The README's main command: build, boot the test bed, run jobs/demo.sh.
demo: testbed
	$(MAKE) all
	tests/testbed/run bash jobs/demo.sh

# BENCHMARKS.md: ours against the kernel's nvme-rdma in one boot, then the
# per-command cost of the core. A benchmark, not a test: no thresholds.
bench: testbed
	$(MAKE) all
	tests/testbed/run bash bench/bench.sh

clean:
	rm -rf build/out build/san
