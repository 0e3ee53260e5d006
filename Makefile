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

ifeq ($(SAN),1)
O = build/san
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
O = build/out
SANFLAGS =
endif
CFLAGS_ALL = $(CFLAGS_BASE) $(SANFLAGS) $(CFLAGS)
CPPFLAGS_ALL = $(CPPFLAGS_BASE) $(CPPFLAGS)

CORE_SRC = core/protocol.c core/status.c core/rdma.c core/mem.c core/queue.c core/ctrl.c
CORE_OBJ = $(CORE_SRC:%.c=$(O)/%.o)
HDRS = $(wildcard core/*.h core/include/*.h tests/unit/*.h)

UNIT_TESTS = $(O)/tests/unit_protocol
TARGET_TESTS = $(O)/tests/target_core

.PHONY: all lib unit test test-unit test-target testbed clean
all: lib $(UNIT_TESTS) $(TARGET_TESTS)
lib: $(O)/libnvmeof.so $(O)/libnvmeof.a

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

test-unit:
	$(MAKE) all
	$(MAKE) all SAN=1
	build/out/tests/unit_protocol
	build/san/tests/unit_protocol

testbed:
	tests/testbed/setup

test-target: testbed
	$(MAKE) all
	$(MAKE) all SAN=1
	tests/testbed/run bash tests/target/run-all.sh

test: test-unit test-target

clean:
	rm -rf build/out build/san
