# nvmeof: a userspace NVMe over Fabrics RDMA initiator. See README.md.
#   make            library, fio engine, tool, tests (build/out); installs nothing
#   make SAN=1      the same with ASan and UBSan (build/san); TSAN=1: build/tsan
#   make setup      as root: what the build and the test bed need (apt), fio's source
#   make build-deps as root: only what building needs (apt), fio's source
#   make unit       the unit tests of one build ($(O): SAN=1, TSAN=1 or O=...)
#   make test       everything CI runs: setup, unit tests (plain and sanitized),
#                   fuzzing, then the real-target suites in the test bed
CC ?= cc
ifeq ($(origin CC),default)
CC = cc
endif
OPT ?= -O2
# Portable code only: the test-bed guest CPU lacks the host's AVX-512.
CSTD = -std=c11
CFLAGS_BASE = $(CSTD) $(OPT) -g -fPIC -Wall -Wextra -Werror -Wshadow \
	-Wpointer-arith -Wformat=2 -Wstrict-prototypes -Wno-format-nonliteral -Wno-format-truncation
CPPFLAGS_BASE = -D_GNU_SOURCE -Icore/include -Icore -DNVMEOF_VERSION_STR='"$(VERSION)"'
# -lssl -lcrypto: OpenSSL 3, for in-band authentication (core/auth_crypto.c)
# and TLS on NVMe/TCP (core/tls_conn.c)
LIBS = -lrdmacm -libverbs -lssl -lcrypto -lpthread -ldl
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

# Plain make installs nothing and writes only under build/: what it needs
# from the system (rdma-core's headers, fio's source) comes from `make setup`,
# and when it is missing make stops at once and says so. Goals that set up
# first, or compile nothing, are not held to it.
SETUP_GOALS = setup build-deps fio-release testbed testbed612 fio-src clean uninstall demo test test-unit test-target test-fuzz fuzz fuzz-build bench
BUILD_GOALS = $(filter-out $(SETUP_GOALS),$(or $(MAKECMDGOALS),all))
ifneq ($(BUILD_GOALS),)
ifneq ($(shell printf '\043include <infiniband/verbs.h>\n\043include <rdma/rdma_cma.h>\n\043include <openssl/evp.h>\n\043include <numa.h>\n' | \
	$(CC) $(CPPFLAGS) -E -x c -o /dev/null - 2>/dev/null && echo ok),ok)
$(error rdma-core's, OpenSSL's or libnuma's headers (infiniband/verbs.h, rdma/rdma_cma.h, openssl/evp.h, numa.h) are missing. \
	Run as root: make setup (apt: libibverbs-dev, librdmacm-dev, libssl-dev, libnuma-dev and the rest the build and the test bed use))
endif
endif

# ISA-L's crc32_iscsi for NVMe/TCP's digests (core/tcp_crc32c.c), where
# libisal-dev is installed: its header compiles and -lisal links. ISAL=0
# builds without it (our SSE4.2 code and table alone), ISAL=1 insists on it.
# What was chosen is kept in $(O)/isal.stamp, so switching rebuilds what
# depends on it.
ifeq ($(origin ISAL),undefined)
ISAL := $(if $(BUILD_GOALS),$(shell printf '\043include <isa-l/crc.h>\nint main(void) { return (int)crc32_iscsi((unsigned char *)"", 0, 0); }\n' | \
	$(CC) $(CPPFLAGS) -x c -o /dev/null - -lisal 2>/dev/null && echo 1 || echo 0),0)
endif
ifeq ($(ISAL),1)
CPPFLAGS_BASE += -DNVMEOF_HAVE_ISAL
LIBS += -lisal
else ifneq ($(ISAL),0)
$(error ISAL is 1 (ISA-L's CRC32C) or 0 (without it), not $(ISAL))
endif

CORE_SRC = core/protocol.c core/status.c core/names.c core/util.c core/opts.c core/rdma.c core/mem.c \
	core/cuda.c core/slots.c core/submit.c core/complete.c core/qstage.c core/qpark.c core/qstate.c core/poll.c core/wait.c core/sync.c \
	core/queue.c core/qrdma.c core/group.c core/cfields.c core/cstate.c core/creset.c core/ctrl.c core/admin.c core/hostid.c core/keepalive.c \
	core/reassoc.c core/trace.c core/ctrl_mem.c core/nstable.c core/adminio.c core/discovery.c core/aer.c \
	core/connretry.c core/hwts.c core/ana.c core/mpath.c core/mpath_io.c core/mpath_qlife.c core/mpath_wait.c core/mpath_select.c core/auth_key.c core/auth_msg.c core/auth_crypto.c core/auth_tx.c core/auth_run.c core/tls_key.c core/tls_keyring.c core/tls_conn.c core/tls_rec.c core/tls_ktls.c core/passthru.c core/fdp.c core/evloop.c \
	core/tcp_crc32c.c core/tcp_pdu.c core/tcp_rx.c core/tcp_sock.c core/tcp_cmd.c core/tcp_conn.c core/tcp_tx.c core/tcp_zc.c core/qtcp.c \
	core/protocol_zns.c core/zns.c
# The loopback test wire: tests, fuzzers and the micro-benchmark only.
TESTWIRE_OBJ = $(O)/tests/wire/fakewire.o
CORE_OBJ = $(CORE_SRC:%.c=$(O)/%.o)

UNIT_TESTS = $(O)/tests/unit_protocol $(O)/tests/unit_tid $(O)/tests/unit_queue $(O)/tests/unit_topo \
	$(O)/tests/unit_opts $(O)/tests/unit_qmap $(O)/tests/unit_adminio $(O)/tests/unit_connretry $(O)/tests/unit_auth \
	$(O)/tests/unit_regaccess $(O)/tests/unit_irq $(O)/tests/unit_hwts $(O)/tests/unit_mpath $(O)/tests/unit_mpathio \
	$(O)/tests/unit_passthru $(O)/tests/unit_tcppdu $(O)/tests/unit_tcpconn $(O)/tests/unit_authmem $(O)/tests/unit_fence \
	$(O)/tests/unit_tcpsock $(O)/tests/unit_tcpzc $(O)/tests/unit_tcpfirst $(O)/tests/unit_tcpheld $(O)/tests/unit_fcheck $(O)/tests/unit_tlskey $(O)/tests/unit_tlsio $(O)/tests/unit_zns \
	$(O)/tests/unit_fdp $(O)/tests/unit_ktls $(O)/tests/unit_zdesc $(O)/tests/unit_zretry $(O)/tests/unit_tcpopts \
	$(O)/tests/unit_hring $(O)/tests/unit_shreg
TARGET_TESTS = $(O)/tests/target_core $(O)/tests/target_passthru $(O)/tests/target_zns $(O)/tests/target_mpath $(O)/tests/target_disc $(O)/tests/target_gpu $(O)/tests/libcuda-double.so \
	$(O)/tests/gpu_check $(O)/tests/libregspy.so $(O)/tests/libcmfault.so
BENCH = $(O)/bench/percmd $(O)/bench/authdh

# Debian's python3 with python3-pytest and python3-numpy (tests/testbed/setup).
PYTHON ?= /usr/bin/python3

# fio engines must be built against the same fio version's headers as the
# fio that loads them: by default the distribution's source of the installed
# fio, which `make setup` (engine/fetch-fio-src) puts here; or
# FIO_SRC=/path/to/configured/fio-source.
FIO_SRC ?= build/fio-src
FIO_SRC_MISSING = fio's source is not in $(FIO_SRC) (the engine must be compiled against the installed \
	fio's own headers). Run as root: make setup (everything the build and the test bed need; fio's source \
	alone: make fio-src), or pass FIO_SRC=/path/to/configured/fio-X.Y
ifneq ($(filter all engine $(O)/libnvmeof_fio.so,$(BUILD_GOALS)),)
ifeq ($(wildcard $(FIO_SRC)/config-host.h),)
$(error $(FIO_SRC_MISSING))
endif
endif
ENGINE = $(O)/libnvmeof_fio.so

# The one version of everything: the shared library's file name,
# nvmeof_version(), `nvmeof --version`, pkg-config; the Python package's
# own version matches it (tests/unit/version.sh holds them equal). The
# soname (major) changes only with an incompatible ABI change
# (core/libnvmeof.map, nvmeof.h "Options").
VERSION = 0.6.0
SO_MAJOR = 0
SONAME = libnvmeof.so.$(SO_MAJOR)
TOOL = $(O)/nvmeof

.PHONY: FORCE all lib engine tool unit test test-unit test-fuzz test-target setup build-deps fio-release testbed testbed612 fio-src demo bench bench-tcp bench-tcp-tls bench-tcp-zerocopy bench-tcp-native fuzz \
	fuzz-build clean install uninstall man-pages
all: lib engine tool $(UNIT_TESTS) $(TARGET_TESTS) $(BENCH) $(O)/tests/fio_version $(O)/tests/tls_disc $(O)/tests/tlsscan.so
lib: $(O)/libnvmeof.so $(O)/$(SONAME) $(O)/libnvmeof.a $(O)/libnvmeof-dist.a
engine: $(ENGINE)
tool: $(TOOL)

# The compiler lists each object's headers (-MMD -MP, the .d files below), so
# a header change rebuilds only what includes it.
DEPFLAGS = -MMD -MP
$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(DEPFLAGS) -c $< -o $@
-include $(wildcard $(O)/*/*.d $(O)/*/*/*.d)
# Objects compiled before the compiler wrote these .d files are never
# rebuilt when a header changes (a struct's layout then differs between
# objects): a build folder without the marker starts over, once.
ifeq ($(wildcard $(O)/.deps-mmd),)
$(shell rm -rf $(O)/core $(O)/engine $(O)/tests $(O)/tools $(O)/bench; mkdir -p $(O) && touch $(O)/.deps-mmd)
endif

# Public symbols are the functions of nvmeof.h (core/libnvmeof.map); everything
# else stays hidden. The real file carries the full version; libnvmeof.so.0
# (the soname, what programs load) and libnvmeof.so (what -lnvmeof finds)
# point to it.
$(O)/core/%.o: CFLAGS_ALL += -DNVMEOF_BUILD
# VERSION lives in this file: what prints it follows it
$(O)/core/util.o $(O)/tools/nvmeof.o $(O)/engine/fio_nvmeof.o: Makefile
$(O)/libnvmeof.so.$(VERSION): $(CORE_OBJ) core/libnvmeof.map
	$(CC) -shared $(SANFLAGS) -Wl,-soname,$(SONAME) -o $@ $(CORE_OBJ) $(LIBS) \
		-Wl,--version-script=core/libnvmeof.map
$(O)/libnvmeof.so $(O)/$(SONAME): $(O)/libnvmeof.so.$(VERSION)
	ln -sf $(notdir $<) $@
$(O)/libnvmeof.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^
# The installed static library: one relocatable object whose only global
# symbols are the functions of nvmeof.h, so a program linked with it gets
# none of the library's insides (q_*, nvme_*, tr_*) to clash with its own
# names. The build's libnvmeof.a keeps them: the tests reach in.
$(O)/libnvmeof-dist.a: $(CORE_OBJ) core/libnvmeof.map
	sed -n 's/^[[:space:]]*\(nvmeof_[a-z0-9_]*\);.*/\1/p' core/libnvmeof.map > $(O)/libnvmeof.syms
	$(LD) -r -o $(O)/libnvmeof-dist.o $(CORE_OBJ)
	objcopy --keep-global-symbols=$(O)/libnvmeof.syms $(O)/libnvmeof-dist.o
	rm -f $@ && ar rcs $@ $(O)/libnvmeof-dist.o

# Tests link their own object, then what the table below adds; a program
# that calls into the core links the build's libnvmeof.a (insides included).
# Their objects are kept (.SECONDARY): make would delete them as intermediates.
TEST_OBJ = $(patsubst $(O)/tests/unit_%,$(O)/tests/unit/test_%.o,$(filter $(O)/tests/unit_%,$(UNIT_TESTS))) \
	$(patsubst $(O)/tests/target_%,$(O)/tests/target/%_test.o,$(filter $(O)/tests/target_%,$(TARGET_TESTS)))
.SECONDARY: $(TEST_OBJ)
$(O)/tests/unit_%: $(O)/tests/unit/test_%.o
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/target_%: $(O)/tests/target/%_test.o
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/tests/unit_protocol: $(O)/core/protocol.o $(O)/core/status.o $(O)/core/names.o $(O)/core/ana.o
$(O)/tests/unit_tcppdu: $(O)/core/tcp_crc32c.o $(O)/core/tcp_pdu.o $(O)/core/tcp_rx.o
$(O)/tests/unit_tcpconn $(O)/tests/unit_tcpzc: $(O)/core/tcp_crc32c.o $(O)/core/tcp_pdu.o $(O)/core/tcp_rx.o $(O)/core/tcp_cmd.o \
	$(O)/core/tcp_conn.o $(O)/core/tcp_tx.o $(O)/core/tcp_zc.o $(O)/core/tls_rec.o $(O)/core/tls_ktls.o
# counts the bytes the send path hashes (its data digests)
$(O)/tests/unit_tcpconn: LIBS += -Wl,--wrap=crc32c_update
# the moment a target's answer lands, between two of the host's reads
$(O)/tests/unit_tcpheld: LIBS += -Wl,--wrap=recvmsg
# the clock reads and pauses (yields, naps) of the waits' spin
$(O)/tests/unit_queue: LIBS += -Wl,--wrap=clock_gettime -Wl,--wrap=sched_yield -Wl,--wrap=nanosleep
# the engine's lines of a path's losses, read from a multipath queue
$(O)/tests/unit_mpathio: $(O)/engine/losses.o
$(O)/tests/unit_queue $(O)/tests/unit_connretry $(O)/tests/unit_hwts $(O)/tests/unit_mpathio $(O)/tests/unit_passthru \
	$(O)/tests/unit_auth $(O)/tests/unit_fence $(O)/tests/unit_zns $(O)/tests/unit_fdp: $(TESTWIRE_OBJ) $(O)/libnvmeof.a
$(O)/tests/unit_authmem $(O)/tests/unit_tlskey $(O)/tests/unit_tlsio $(O)/tests/unit_ktls: $(O)/libnvmeof.a
# tests/unit/tls-spdk.sh's client that connects from a discovery log entry
$(O)/tests/tls_disc: $(O)/tests/unit/tls_disc.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
# the memory scan tls-spdk.sh and tls.sh preload into the tool (built here:
# the 6.12 guest compiles slowly); never sanitized, it comes before any
$(O)/tests/tlsscan.so: tests/unit/tlsscan.c tests/unit/maps.h
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $< -ldl
$(O)/tests/unit/test_passthru.o $(O)/tests/unit/test_zns.o: CPPFLAGS_ALL += -Itests/wire
$(O)/tests/unit_opts $(O)/tests/unit_tcpsock $(O)/tests/unit_tcpfirst $(O)/tests/unit_tcpheld $(O)/tests/unit_adminio $(O)/tests/unit_regaccess $(O)/tests/target_core $(O)/tests/target_disc \
	$(O)/tests/target_gpu $(O)/tests/target_passthru $(O)/tests/target_zns: $(O)/libnvmeof.a
$(O)/tests/unit_tid: $(O)/engine/tid.o
# failover-check's verdict on made-up write histories
$(O)/tests/unit_fcheck: $(O)/tools/fcheck_verdict.o
$(O)/tests/unit/test_fcheck.o: CPPFLAGS_ALL += -Itools
# the CM fault double (tests/cmfault) takes target_core's CM events
$(O)/tests/target_core: $(O)/tests/cmfault/cmfault.o
$(O)/tests/unit_mpath $(O)/tests/target_mpath: $(O)/libnvmeof.a
$(O)/tests/unit_qmap: $(O)/engine/qmap.o
$(O)/tests/unit_hring: $(O)/engine/hring.o
$(O)/tests/unit_shreg: $(O)/engine/shreg.o
# Zone Descriptors as fio's zones (fio's zbd_types.h alone)
$(O)/tests/unit_zdesc: $(O)/engine/zdesc.o $(O)/libnvmeof.a
$(O)/engine/zdesc.o $(O)/tests/unit/test_zdesc.o: CPPFLAGS_ALL += -Iengine -isystem $(FIO_SRC)
# a zone call waiting for a free slot (the fake wire's full queue)
$(O)/tests/unit_zretry: $(O)/engine/zretry.o $(TESTWIRE_OBJ) $(O)/libnvmeof.a
$(O)/tests/unit/test_zretry.o: CPPFLAGS_ALL += -Iengine -Itests/wire
$(O)/tests/unit_topo: $(O)/engine/topo.o
# the engine's NVMe/TCP options per path (fio's headers, as the engine's)
$(O)/tests/unit_tcpopts: $(O)/engine/tcp_opts.o $(O)/engine/optval.o $(O)/libnvmeof.a
$(O)/tests/unit/test_tcpopts.o: CPPFLAGS_ALL += -Iengine -isystem $(FIO_SRC) -include $(FIO_SRC)/config-host.h
$(O)/tests/unit/test_tcpopts.o: CSTD = -std=gnu11
$(O)/tests/unit_irq: $(O)/engine/irq.o
$(O)/tools/rdma.o $(O)/tests/unit/test_tid.o $(O)/tests/unit/test_topo.o $(O)/tests/unit/test_qmap.o $(O)/tests/unit/test_hring.o $(O)/tests/unit/test_shreg.o $(O)/tests/unit/test_irq.o \
	$(O)/tests/unit/test_mpathio.o: CPPFLAGS_ALL += -Iengine
$(O)/tests/wire/fakewire.o $(O)/tests/unit/test_queue.o $(O)/tests/unit/test_connretry.o $(O)/tests/unit/test_hwts.o \
	$(O)/tests/unit/test_mpathio.o $(O)/tests/unit/test_auth.o $(O)/tests/unit/test_fence.o $(O)/tests/unit/test_fdp.o \
	$(O)/bench/percmd.o: CPPFLAGS_ALL += -Itests/wire
$(O)/tests/gpu_check: $(O)/tests/gpu-check/gpu_check.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/bench/percmd: $(O)/bench/percmd.o $(TESTWIRE_OBJ) $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
$(O)/bench/authdh: $(O)/bench/authdh.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
# The command-line tool (tools/): nvme-cli's subcommands over our library.
$(TOOL): $(O)/tools/nvmeof.o $(O)/tools/cmds.o $(O)/tools/io.o $(O)/tools/out.o $(O)/tools/secret.o $(O)/tools/rdma.o $(O)/tools/passthru.o \
	$(O)/tools/fcheck.o $(O)/tools/fcheck_run.o $(O)/tools/fcheck_verdict.o $(O)/tools/tlskey.o $(O)/tools/perf.o $(O)/tools/perf_run.o $(O)/tools/zns.o $(O)/engine/topo.o $(O)/libnvmeof.a
	$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)
# The CUDA test double: host memory behind the cu* API (tests only).
$(O)/tests/libcuda-double.so: tests/cuda-double/fakecuda.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror -o $@ $<

# LD_PRELOAD for tests: the access flags registrations really get (tests only).
$(O)/tests/libregspy.so: tests/regspy/regspy.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -o $@ $< -ldl

# LD_PRELOAD for tests: CM connects that fail or go unanswered (tests only).
$(O)/tests/libcmfault.so: tests/cmfault/cmfault.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -o $@ $< -ldl -lrdmacm -lpthread

# The engine's files that include fio's headers (engine/engine.h maps them).
# fio's headers are not ours: include them as system headers, gnu11 as fio is.
FIO_ENGINE_OBJ = $(addprefix $(O)/engine/,fio_nvmeof.o log.o ctrl_share.o options.o probe.o zones.o files.o paths.o \
	qplan.o qshare.o qwait.o qpairs.o iomem.o job.o reap.o fiover.o tcp_opts.o)
$(FIO_ENGINE_OBJ): CPPFLAGS_ALL += -isystem $(FIO_SRC) -include $(FIO_SRC)/config-host.h
$(FIO_ENGINE_OBJ): CSTD = -std=gnu11
# fio 3.42 renamed in_ramp_time() to in_ramp_period(): which one this fio
# source declares (engine/engine.h maps the old name onto the new)
FIO_IN_RAMP_PERIOD = $(shell grep -qs 'in_ramp_period' $(FIO_SRC)/fio_time.h && echo -DNVMEOF_FIO_IN_RAMP_PERIOD)
$(FIO_ENGINE_OBJ): CPPFLAGS_ALL += $(FIO_IN_RAMP_PERIOD)
$(FIO_ENGINE_OBJ): $(FIO_SRC)/config-host.h
$(FIO_SRC)/config-host.h:
	$(error $(FIO_SRC_MISSING))
# The version of fio's source (as fio's FIO-VERSION-GEN says it: a release
# tarball's `version` file, else its default), which the engine refuses to
# run under another fio's (engine/fiover.c).
FIO_SRC_VERSION = $(shell cat $(FIO_SRC)/version 2>/dev/null || sed -n 's/^DEF_VER=//p' $(FIO_SRC)/FIO-VERSION-GEN 2>/dev/null)
$(O)/engine/fiover.o: CPPFLAGS_ALL += -DNVMEOF_FIO_VERSION='"$(FIO_SRC_VERSION)"'
$(O)/engine/fiover.o: $(FIO_SRC)/FIO-VERSION-GEN
# The commit the engine was built from, said once per fio process: rewritten
# only when it changes ("-dirty": uncommitted changes; "unknown": no git).
$(O)/engine/fiover.o: CPPFLAGS_ALL += -I$(O)/engine
$(O)/engine/fiover.o: $(O)/engine/commit.h
$(O)/engine/commit.h: FORCE
	@mkdir -p $(@D)
	@c=$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown); \
	[ "$$c" = unknown ] || git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; \
	echo "#define NVMEOF_COMMIT \"$$c\"" > $@.tmp; cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
FORCE:
$(O)/isal.stamp: FORCE
	@mkdir -p $(@D)
	@echo $(ISAL) > $@.tmp; cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(O)/core/tcp_crc32c.o $(O)/tests/unit/test_tcppdu.o $(O)/tools/nvmeof.o: $(O)/isal.stamp
# A stand-in for fio of any version, to load the engine (tests only).
$(O)/tests/unit/fio_version.o: CPPFLAGS_ALL += -isystem $(FIO_SRC) -include $(FIO_SRC)/config-host.h
$(O)/tests/unit/fio_version.o: CSTD = -std=gnu11
$(O)/tests/fio_version: $(O)/tests/unit/fio_version.o
	$(CC) $(SANFLAGS) -rdynamic -o $@ $^ -ldl
# fio needs one symbol of it (engine/libnvmeof_fio.map); the core inside stays hidden.
ENGINE_OBJ = $(FIO_ENGINE_OBJ) $(O)/engine/tid.o $(O)/engine/optval.o $(O)/engine/topo.o $(O)/engine/qmap.o $(O)/engine/irq.o \
	$(O)/engine/hring.o $(O)/engine/shreg.o $(O)/engine/losses.o $(O)/engine/zdesc.o $(O)/engine/zretry.o $(CORE_OBJ)
$(ENGINE): $(ENGINE_OBJ) engine/libnvmeof_fio.map
	$(CC) -shared $(SANFLAGS) -o $@ $(ENGINE_OBJ) $(LIBS) -lnuma -Wl,--version-script=engine/libnvmeof_fio.map

# What runs each suite (tests/unit/harness.sh puts a stand-in here).
SUITE = tests/suite
# The unit tests (no target) of one build, $(O), and the GPU check against
# the CUDA test double. install.sh and the Python tests load the library into
# uninstrumented programs: plain builds only.
# Every stage runs and reports, even after one failed; make unit fails if any did.
ifeq ($(SANFLAGS),)
# (tool.sh sets an address-space limit, which ASan's shadow memory cannot live under)
UNIT_PLAIN_ONLY = \
	$(SUITE) $(notdir $(O))/version.sh 300 tests/unit/version.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/docs.sh 300 tests/unit/docs.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/jobs.sh 300 tests/unit/jobs.sh $(O) || rc=1; \
	$(SUITE) bench-tcp-native.sh 120 tests/unit/bench-tcp-native.sh || rc=1; \
	$(SUITE) $(notdir $(O))/tool.sh 300 tests/unit/tool.sh $(O) || rc=1; \
	$(SUITE) install.sh 600 tests/unit/install.sh || rc=1; \
	$(SUITE) harness.sh 300 tests/unit/harness.sh || rc=1; \
	$(SUITE) python-venv.sh 600 tests/unit/python-venv.sh || rc=1; \
	NVMEOF_LIB=$(CURDIR)/$(O)/libnvmeof.so PYTHONDONTWRITEBYTECODE=1 \
		$(SUITE) python-unit 300 $(PYTHON) -m pytest -p no:cacheprovider -q tests/python/unit || rc=1;
endif
unit: all
	# stack-use-after-return: a callback must never reach a returned frame;
	# tls-spdk.sh one at a time (make test-unit runs both builds' at once):
	# each picks its free ports before its target listens on them
	rc=0; for t in $(UNIT_TESTS); do \
		ASAN_OPTIONS=detect_stack_use_after_return=1 $(SUITE) $(notdir $(O))/$$(basename $$t) 600 $$t || rc=1; \
	done; \
	$(SUITE) $(notdir $(O))/selftest-double 300 tests/gpu-check/selftest-double $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/layers.sh 120 tests/unit/layers.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/exports.sh 300 tests/unit/exports.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/secrets.sh 300 tests/unit/secrets.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/tls-spdk.sh 300 flock /tmp/nvmeof-tls-spdk.lock tests/unit/tls-spdk.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/engine_opts.sh 300 tests/unit/engine_opts.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/fio-version.sh 300 tests/unit/fio-version.sh $(O) || rc=1; \
	$(SUITE) $(notdir $(O))/list-rdma.sh 300 tests/unit/list-rdma.sh $(O) || rc=1; \
	$(UNIT_PLAIN_ONLY) \
	exit $$rc

# setup first: it installs what the build needs (rdma-core headers, fio).
# The builds run on every CPU (make test itself runs without -j: its steps
# and suites go one after another); a build that fails still fails its unit
# stage, which builds again serially and says what broke. The plain and the
# sanitized unit tests run at once where there are two CPUs or more (each
# build's suites one after another, mostly one CPU each): the sanitized
# run's output, kept in build/unit-san.log, follows the plain run's. The
# sanitized run, the shorter, is followed there by the ThreadSanitizer
# build (its failure is reported by the build after the wait).
BUILD_JOBS ?= $(shell nproc)
TSAN_UNIT = build/tsan/tests/unit_queue build/tsan/tests/unit_fence build/tsan/tests/unit_hring build/tsan/tests/unit_shreg
test-unit: setup
	-$(MAKE) -j$(BUILD_JOBS) all
	-$(MAKE) -j$(BUILD_JOBS) all SAN=1
	rc=0; \
	if [ "$(BUILD_JOBS)" -gt 1 ]; then \
		{ $(MAKE) unit SAN=1; s=$$?; $(MAKE) $(TSAN_UNIT) TSAN=1 > /dev/null 2>&1; exit $$s; } \
			> build/unit-san.log 2>&1 & san=$$!; \
		$(MAKE) unit || rc=1; wait $$san || rc=1; cat build/unit-san.log; \
	else $(MAKE) unit || rc=1; $(MAKE) unit SAN=1 || rc=1; fi; \
	if $(MAKE) -j$(BUILD_JOBS) $(TSAN_UNIT) TSAN=1; then \
		tests/suite tsan/unit_queue 900 build/tsan/tests/unit_queue || rc=1; \
		tests/suite tsan/unit_fence 300 build/tsan/tests/unit_fence || rc=1; \
		tests/suite tsan/unit_hring 120 build/tsan/tests/unit_hring || rc=1; \
		tests/suite tsan/unit_shreg 120 build/tsan/tests/unit_shreg || rc=1; \
	else rc=1; fi; \
	exit $$rc

# Everything the build and the test bed need from the system (apt, as root),
# then fio's source; each step does nothing when its part is there.
setup: testbed testbed612
	engine/fetch-fio-src $(FIO_SRC)
testbed:
	tests/testbed/setup
# A second test bed on Debian's 6.12 kernel for bookworm (security archive):
# its nvmet has in-band authentication (CONFIG_NVME_TARGET_AUTH) and TLS
# (CONFIG_NVME_TARGET_TCP_TLS, through tlshd: tests/testbed/build-tlshd), 6.1's not.
TB612 = build/testbed612
testbed612:
	pkg=$$(apt-cache depends linux-image-6.12-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $$2; exit}'); \
	[ -n "$$pkg" ] || [ -f $(TB612)/kernel/version ] || \
		{ echo "testbed612: no linux-image-6.12-amd64 in apt (bookworm-security); run apt-get update" >&2; exit 1; }; \
	NVMEOF_TB_STATE=$(TB612) NVMEOF_TB_KERNEL_PKG=$$pkg tests/testbed/setup
	tests/testbed/build-tlshd $(TB612)
fio-src:
	engine/fetch-fio-src $(FIO_SRC)
# fio releases to hold the engine to beside the installed one
# (tests/target/fio-versions.sh): each built from its upstream archive
# (NVMEOF_FIO_RELEASES, else ../shared/fio-releases) into build/fio-VERSION
# and installed nowhere, kept once built, and the plain build's engine
# built against it in build/fio-VERSION-out.
FIO_RELEASES ?= 3.39 3.42
fio-release:
	@for v in $(FIO_RELEASES); do \
		engine/build-fio-release $$v build/fio-$$v || exit 1; \
		$(MAKE) -j$(BUILD_JOBS) O=build/fio-$$v-out FIO_SRC=build/fio-$$v build/fio-$$v-out/libnvmeof_fio.so \
			build/fio-$$v-out/tests/fio_version || exit 1; \
	done
# What building needs and nothing more (no QEMU, kernels or valgrind): the
# compiler, rdma-core's, libnuma's and OpenSSL's headers, ISA-L's (optional:
# the CRC32C of NVMe/TCP's digests), pkg-config, fio, then fio's source. Installs only what is missing.
BUILD_DEPS = gcc make libc6-dev pkg-config libibverbs-dev librdmacm-dev libnuma-dev libssl-dev libisal-dev fio
build-deps:
	@missing=$$(for p in $(BUILD_DEPS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
		grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "build-deps: installing" $$missing; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing > /dev/null || \
			{ echo "build-deps: apt-get install failed for:" $$missing >&2; exit 1; }; \
	fi
	engine/fetch-fio-src $(FIO_SRC)

TESTS_612_CORE = identify_matches_testbed roundtrip_keyed_only keep_alive_keeps_the_association \
	reconnect_keeps_write_order_and_the_controller poll_group_of_four_queues reconnect_refused_with_dnr_fails_at_once
# (an engine job's reconnect is the library's, which reconnect_keeps_write_order_and_the_controller
# runs against 6.12's nvmet: the engine's own reconnect test adds only fio's output)
TESTS_612_ENGINE = t_verify_randrw_4k_ns2 t_verify_md5_and_large_blocks_above_mdts t_qpairs4_verify_in_threads
# The test-bed boots of make test, each with a limit (NVMEOF_TB_TIMEOUT) over
# twice what it takes on the slowest machine measured (BENCHMARKS.md, "How
# long make test takes"); tests/summary prints each boot's time against it.
TB_LIMIT_PLAIN ?= 3000
TB_LIMIT_SAN ?= 3000
TB_LIMIT_NUMA ?= 900
TB_LIMIT_612 ?= 1200
test-target: setup
	$(MAKE) -j$(BUILD_JOBS) all
	$(MAKE) -j$(BUILD_JOBS) all SAN=1
	$(MAKE) -j$(BUILD_JOBS) build/tsan/tests/target_core build/tsan/tests/target_disc build/tsan/tests/target_mpath TSAN=1
	# fio's releases for the engine; where one did not build, fio-versions.sh
	# in the plain boot fails saying so (it skips only without the archives)
	$(MAKE) fio-release > build/fio-release.log 2>&1 || \
		{ tail -3 build/fio-release.log; echo "fio-release: failed (build/fio-release.log)"; }
	# the Python package installed into a virtual environment here, where it
	# takes seconds; the plain boot runs its examples against the target
	rc=0; \
	tests/suite python-pkg-install 300 bash tests/target/python-pkg.sh --prepare build/pypkg || rc=1; \
	NVMEOF_TB_NAME=main-plain NVMEOF_TB_TIMEOUT=$(TB_LIMIT_PLAIN) \
		tests/testbed/run bash tests/target/run-all.sh plain || rc=1; \
	NVMEOF_TB_NAME=main-sanitized NVMEOF_TB_TIMEOUT=$(TB_LIMIT_SAN) \
		tests/testbed/run bash tests/target/run-all.sh sanitized || rc=1; \
	NVMEOF_TB_NAME=placement-numa2 NVMEOF_TB_TIMEOUT=$(TB_LIMIT_NUMA) NVMEOF_TB_NUMA=2 \
		tests/testbed/run bash tests/target/run-placement.sh || rc=1; \
	NVMEOF_TB_NAME=auth-6.12 NVMEOF_TB_TIMEOUT=$(TB_LIMIT_612) NVMEOF_TB_STATE=$(TB612) \
		tests/testbed/run bash tests/target/run-612.sh "$(TESTS_612_CORE)" "$(TESTS_612_ENGINE)" || rc=1; \
	exit $$rc

# Everything CI runs; every stage runs even when one before it failed, and
# the closing summary (tests/summary) counts them all.
SUMMARY = $(CURDIR)/build/test-summary.tsv
test: setup
	@mkdir -p build && rm -f $(SUMMARY) $(SUMMARY).failed
	# (tests/stages prints the summary of what finished even when the run is
	# stopped by a signal)
	NVMEOF_SUMMARY=$(SUMMARY) tests/stages $(SUMMARY) '$(MAKE) test-unit' '$(MAKE) test-fuzz' '$(MAKE) test-target'

# CI's short fuzz pass; `make fuzz` runs longer.
test-fuzz:
	tests/suite fuzz-smoke 900 tests/fuzz/run 5

# libFuzzer targets (clang, ASan+UBSan); `make fuzz FUZZ_SECONDS=600` for a
# longer run. CI runs a short pass.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS = -std=c11 -g -O1 -D_GNU_SOURCE -DNVMEOF_VERSION_STR='"$(VERSION)"' -Icore/include -Icore -Iengine -Itests/wire \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CORE = $(CORE_SRC) tests/wire/fakewire.c
# Each fuzzer is one compile-and-link of several sources: it depends on every
# header those may include.
FUZZ_HDRS = $(wildcard core/*.h core/include/*.h tests/wire/*.h)
fuzz-build: build/fuzz/fuzz_identify build/fuzz/fuzz_cm build/fuzz/fuzz_tid build/fuzz/fuzz_queue build/fuzz/fuzz_auth \
	build/fuzz/fuzz_secret build/fuzz/fuzz_tcppdu build/fuzz/fuzz_tcpconn build/fuzz/fuzz_reauth build/fuzz/fuzz_ktls
# (tls_rec.c, tls_ktls.c: the connection's record calls, never reached without TLS)
TCPCONN_SRC = core/tcp_rx.c core/tcp_pdu.c core/tcp_crc32c.c core/tcp_cmd.c core/tcp_conn.c core/tcp_tx.c core/tcp_zc.c \
	core/tls_rec.c core/tls_ktls.c
build/fuzz/fuzz_tcpconn: tests/fuzz/fuzz_tcpconn.c $(TCPCONN_SRC) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_tcpconn.c $(TCPCONN_SRC) -lssl -lcrypto
build/fuzz/fuzz_ktls: tests/fuzz/fuzz_ktls.c core/tls_ktls.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_ktls.c core/tls_ktls.c -lssl -lcrypto
build/fuzz/fuzz_tcppdu: tests/fuzz/fuzz_tcppdu.c core/tcp_rx.c core/tcp_pdu.c core/tcp_crc32c.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_tcppdu.c core/tcp_rx.c core/tcp_pdu.c core/tcp_crc32c.c
build/fuzz/fuzz_identify: tests/fuzz/fuzz_identify.c core/protocol.c core/status.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_identify.c core/protocol.c core/status.c
build/fuzz/fuzz_cm: tests/fuzz/fuzz_cm.c core/protocol.c core/status.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_cm.c core/protocol.c core/status.c
AUTH_SRC = core/auth_key.c core/auth_msg.c core/auth_crypto.c core/auth_tx.c core/protocol.c core/status.c \
	core/names.c core/util.c
build/fuzz/fuzz_auth: tests/fuzz/fuzz_auth.c $(AUTH_SRC) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_auth.c $(AUTH_SRC) core/connretry.c -lcrypto
build/fuzz/fuzz_secret: tests/fuzz/fuzz_secret.c $(AUTH_SRC) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_secret.c $(AUTH_SRC) -lcrypto
build/fuzz/fuzz_tid: tests/fuzz/fuzz_tid.c engine/tid.c engine/tid.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_tid.c engine/tid.c
build/fuzz/fuzz_queue: tests/fuzz/fuzz_queue.c $(FUZZ_CORE) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_queue.c $(FUZZ_CORE) $(LIBS)
build/fuzz/fuzz_reauth: tests/fuzz/fuzz_reauth.c $(FUZZ_CORE) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_reauth.c $(FUZZ_CORE) $(LIBS)
fuzz:
	tests/fuzz/run $(FUZZ_SECONDS)

# The README's main command: build, boot the test bed, run jobs/demo.sh.
demo: setup
	$(MAKE) all
	tests/testbed/run bash jobs/demo.sh

# BENCHMARKS.md: ours against the kernel's nvme-rdma in one boot, then the
# per-command cost of the core. A benchmark, not a test: no thresholds.
# Everything it writes goes under build/bench/; BENCHMARKS.md's plots are
# the committed copies in bench/plots/, replaced by hand when it is updated.
bench: setup
	$(MAKE) all
	@echo "per-command cost of the core on this machine (native, no emulation):"
	build/out/bench/percmd
	# about 26 minutes here: past the test bed's default limit (1500 s)
	NVMEOF_TB_TIMEOUT=$${NVMEOF_TB_TIMEOUT:-3600} tests/testbed/run bash bench/bench.sh
	@echo "bench: plots in build/bench/plots/; to update BENCHMARKS.md's: cp build/bench/plots/*.svg bench/plots/"

# Ours over NVMe/TCP against the kernel's nvme-tcp (fio libaio), one boot:
# BENCHMARKS.md "NVMe/TCP against the kernel's nvme-tcp".
bench-tcp: all
	tests/testbed/run bash bench/tcp.sh
# TLS's cost over NVMe/TCP against nvmet on the 6.12 bed: plain, OpenSSL's
# records and kTLS, same boot (BENCHMARKS.md "NVMe/TCP over TLS")
bench-tcp-tls: all
	NVMEOF_TB_STATE=$(TB612) tests/testbed/run bash bench/tcp-tls.sh
# MSG_ZEROCOPY for large writes over NVMe/TCP, on and off, same boot (docs/tcp.md)
bench-tcp-zerocopy: all
	tests/testbed/run bash bench/tcp-zerocopy.sh
# Ours over NVMe/TCP against SPDK's initiator (its fio plugin and spdk_nvme_perf),
# natively, no guest: SPDK's nvmf_tgt on 127.0.0.1 (BENCHMARKS.md "NVMe/TCP
# natively against SPDK's initiator"). Root, hugepages, ../shared/spdk-target.
# It takes the test bed's lock, so no boot shares the CPUs with it.
bench-tcp-native: all
	flock -w 3600 $${NVMEOF_TB_LOCK:-/tmp/nvmeof-testbed.lock} bash bench/tcp-native.sh

# The fio engine's man page from its one source, docs/engine.md (the page is
# committed: installing builds nothing; tests/unit/docs.sh checks it is current).
man-pages:
	python3 man/engine-man.py docs/engine.md > man/nvmeof-fio.7

clean:
	rm -rf build/out build/san build/tsan build/fuzz

# ---- install ----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=staging root]: what the plain
# build (build/out) made. The fio engine goes to $(LIBDIR)/fio/, outside the
# linker's path: fio loads it by path (--ioengine=external:PATH).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
FIOENGINEDIR ?= $(LIBDIR)/fio
JOBSDIR ?= $(PREFIX)/share/nvmeof/jobs
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
JOB_FILES = $(wildcard jobs/*.fio) jobs/common.fio.inc jobs/kdev.sh jobs/jobfile.py
# Paths under PREFIX are written relative to ${prefix}, so that
# pkg-config --define-variable=prefix=... can relocate them.
pcpath = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
$(O)/nvmeof.pc: nvmeof.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pcpath,$(LIBDIR))|' \
		-e 's|@INCLUDEDIR@|$(call pcpath,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@ISAL_LIBS@|$(if $(filter 1,$(ISAL)), -lisal)|' $< > $@
# Rebuilt each time: PREFIX may differ from the last install.
.PHONY: $(O)/nvmeof.pc

# Only the fio engine needs fio's source: without it the rest installs, and
# one line says what was left out.
HAVE_FIO_SRC = $(wildcard $(FIO_SRC)/config-host.h)
install: lib tool $(O)/nvmeof.pc $(if $(HAVE_FIO_SRC),engine)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(JOBSDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR)
	install -m 755 $(TOOL) $(DESTDIR)$(BINDIR)/
	# man pages as committed (roff: nothing to build) and the completion
	install -m 644 man/nvmeof.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/nvmeof-fio.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 contrib/bash-completion/nvmeof $(DESTDIR)$(BASHCOMPDIR)/nvmeof
	install -m 644 core/include/nvmeof.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(O)/libnvmeof.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libnvmeof.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf libnvmeof.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libnvmeof.so
	install -m 644 $(O)/libnvmeof-dist.a $(DESTDIR)$(LIBDIR)/libnvmeof.a
	install -m 644 $(O)/nvmeof.pc $(DESTDIR)$(PKGCONFIGDIR)/
ifneq ($(HAVE_FIO_SRC),)
	install -d $(DESTDIR)$(FIOENGINEDIR)
	install -m 755 $(ENGINE) $(DESTDIR)$(FIOENGINEDIR)/
else
	@echo "install: the fio engine is left out: fio's source is not in $(FIO_SRC) (make fio-src, or FIO_SRC=/path/to/fio-X.Y); the rest is installed"
endif
	install -m 644 $(JOB_FILES) $(DESTDIR)$(JOBSDIR)/
	# jobs/run, with the installed engine as its default
	sed 's|$$TOP/build/out/libnvmeof_fio.so|$(FIOENGINEDIR)/libnvmeof_fio.so|' jobs/run \
		> $(DESTDIR)$(JOBSDIR)/run && chmod 755 $(DESTDIR)$(JOBSDIR)/run
	grep -q '$(FIOENGINEDIR)/libnvmeof_fio.so' $(DESTDIR)$(JOBSDIR)/run
	if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/nvmeof $(DESTDIR)$(INCLUDEDIR)/nvmeof.h $(DESTDIR)$(LIBDIR)/libnvmeof.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libnvmeof.so $(DESTDIR)$(LIBDIR)/libnvmeof.a \
		$(DESTDIR)$(PKGCONFIGDIR)/nvmeof.pc $(DESTDIR)$(FIOENGINEDIR)/libnvmeof_fio.so \
		$(addprefix $(DESTDIR)$(JOBSDIR)/,$(notdir $(JOB_FILES)) run) \
		$(DESTDIR)$(MANDIR)/man1/nvmeof.1 $(DESTDIR)$(MANDIR)/man7/nvmeof-fio.7 $(DESTDIR)$(BASHCOMPDIR)/nvmeof
	# our own directories, when nothing else is in them
	rmdir $(DESTDIR)$(JOBSDIR) $(DESTDIR)$(PREFIX)/share/nvmeof $(DESTDIR)$(FIOENGINEDIR) 2>/dev/null || true
