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
LIBS = -lrdmacm -libverbs -lpthread -ldl
ifneq ($(wildcard /usr/include/valgrind/memcheck.h),)
CPPFLAGS_BASE += -DNVMEOF_VALGRIND
endif

ifeq ($(SAN),1)
O = build/san
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(TSAN),1)
O = build/tsan
SANFLAGS = -fsanitize=thread
else
O = build/out
SANFLAGS =
endif
CFLAGS_ALL = $(CFLAGS_BASE) $(SANFLAGS) $(CFLAGS)
CPPFLAGS_ALL = $(CPPFLAGS_BASE) $(CPPFLAGS)

CORE_SRC = core/protocol.c core/status.c core/names.c core/nstable.c core/admin.c core/discovery.c core/aer.c core/rdma.c core/mem.c core/cuda.c core/queue.c core/ctrl.c \
	core/fakewire.c
CORE_OBJ = $(CORE_SRC:%.c=$(O)/%.o)
HDRS = $(wildcard core/*.h core/include/*.h tests/unit/*.h tools/*.h)

UNIT_TESTS = $(O)/tests/unit_protocol $(O)/tests/unit_tid $(O)/tests/unit_queue $(O)/tests/unit_topo
TARGET_TESTS = $(O)/tests/target_core $(O)/tests/target_disc $(O)/tests/target_gpu $(O)/tests/libcuda-double.so $(O)/tests/gpu_check
BENCH = $(O)/bench/percmd

# fio engines must be built against the same fio version's headers as the
# fio that loads them: by default the distribution's source of the installed
# fio (engine/fetch-fio-src); or FIO_SRC=/path/to/configured/fio-source.
FIO_SRC ?= build/fio-src
ENGINE = $(O)/libnvmeof_fio.so

TOOL = $(O)/nvmeof

.PHONY: all lib engine tool unit test test-unit test-fuzz test-target testbed demo bench fuzz fuzz-build clean
all: lib engine tool $(UNIT_TESTS) $(TARGET_TESTS) $(BENCH)
lib: $(O)/libnvmeof.so $(O)/libnvmeof.a
engine: $(ENGINE)
tool: $(TOOL)

$(O)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

# Public symbols are the nvmeof_* API; everything else stays hidden.
$(O)/core/%.o: CFLAGS_ALL += -DNVMEOF_BUILD
$(O)/libnvmeof.so: $(CORE_OBJ)
	$(CC) -shared $(SANFLAGS) -o $@ $^ $(LIBS) -Wl,--version-script=core/libnvmeof.map
$(O)/libnvmeof.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(O)/tests/unit_protocol: $(O)/tests/unit/test_protocol.o $(O)/core/protocol.o $(O)/core/status.o $(O)/core/names.o
	$(CC) $(SANFLAGS) -o $@ $^
$(O)/tests/target_core: $(O)/tests/target/core_test.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
# The command-line tool (tools/): nvme-cli's subcommands over our library.
$(TOOL): $(O)/tools/nvmeof.o $(O)/tools/cmds.o $(O)/tools/io.o $(O)/tools/out.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/target_disc: $(O)/tests/target/disc_test.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/bench/percmd: $(O)/bench/percmd.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/unit_queue: $(O)/tests/unit/test_queue.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/unit_tid: $(O)/tests/unit/test_tid.o $(O)/engine/tid.o
	$(CC) $(SANFLAGS) -o $@ $^
$(O)/tests/unit/test_tid.o $(O)/tests/unit/test_topo.o: CPPFLAGS_ALL += -Iengine
$(O)/tests/unit_topo: $(O)/tests/unit/test_topo.o $(O)/engine/topo.o
	$(CC) $(SANFLAGS) -o $@ $^
$(O)/tests/gpu_check: $(O)/tests/gpu-check/gpu_check.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/target_gpu: $(O)/tests/target/gpu_test.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
# The CUDA test double: host memory behind the cu* API (tests only).
$(O)/tests/libcuda-double.so: tests/cuda-double/fakecuda.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror -o $@ $<

$(FIO_SRC)/.configured:
	engine/fetch-fio-src $(FIO_SRC)
# fio's headers are not ours: include them as system headers, gnu11 as fio is.
$(O)/engine/fio_nvmeof.o: engine/fio_nvmeof.c engine/tid.h engine/topo.h $(HDRS) $(FIO_SRC)/.configured
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -isystem $(FIO_SRC) -include $(FIO_SRC)/config-host.h \
		$(filter-out -std=c11,$(CFLAGS_ALL)) -std=gnu11 -c $< -o $@
$(ENGINE): $(O)/engine/fio_nvmeof.o $(O)/engine/tid.o $(O)/engine/topo.o $(CORE_OBJ)
	$(CC) -shared $(SANFLAGS) -o $@ $^ $(LIBS)

# testbed first: it installs what the build needs (rdma-core headers, fio).
test-unit: testbed
	$(MAKE) all
	$(MAKE) all SAN=1
	for t in $(notdir $(UNIT_TESTS)); do build/out/tests/$$t && build/san/tests/$$t || exit 1; done
	tests/gpu-check/selftest-double

testbed:
	tests/testbed/setup

test-target: testbed
	$(MAKE) all
	$(MAKE) all SAN=1
	$(MAKE) build/tsan/tests/target_core TSAN=1
	tests/testbed/run bash tests/target/run-all.sh

test: testbed test-unit test-fuzz test-target

# CI's short fuzz pass; `make fuzz` runs longer.
test-fuzz:
	tests/fuzz/run 10

# libFuzzer targets (clang, ASan+UBSan); `make fuzz FUZZ_SECONDS=600` for a
# longer run. CI runs a short pass.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS = -std=c11 -g -O1 -D_GNU_SOURCE -Icore/include -Icore -Iengine \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CORE = core/protocol.c core/status.c core/names.c core/nstable.c core/admin.c core/discovery.c core/aer.c core/queue.c core/fakewire.c core/rdma.c core/mem.c core/ctrl.c \
	core/cuda.c
fuzz-build: build/fuzz/fuzz_identify build/fuzz/fuzz_cm build/fuzz/fuzz_tid build/fuzz/fuzz_queue
build/fuzz/fuzz_identify: tests/fuzz/fuzz_identify.c core/protocol.c core/status.c $(HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_identify.c core/protocol.c core/status.c
build/fuzz/fuzz_cm: tests/fuzz/fuzz_cm.c core/protocol.c core/status.c $(HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_cm.c core/protocol.c core/status.c
build/fuzz/fuzz_tid: tests/fuzz/fuzz_tid.c engine/tid.c engine/tid.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_tid.c engine/tid.c
build/fuzz/fuzz_queue: tests/fuzz/fuzz_queue.c $(FUZZ_CORE) $(HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_queue.c $(FUZZ_CORE) $(LIBS)
fuzz:
	tests/fuzz/run $(FUZZ_SECONDS)

# The README's main command: build, boot the test bed, run jobs/demo.sh.
demo: testbed
	$(MAKE) all
	tests/testbed/run bash jobs/demo.sh

# BENCHMARKS.md: ours against the kernel's nvme-rdma in one boot, then the
# per-command cost of the core. A benchmark, not a test: no thresholds.
bench: testbed
	$(MAKE) all
	@echo "per-command cost of the core on this machine (native, no emulation):"
	build/out/bench/percmd
	tests/testbed/run bash bench/bench.sh

clean:
	rm -rf build/out build/san build/tsan build/fuzz
