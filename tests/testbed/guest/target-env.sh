# What the test bed's target is; sourced by the run script and by tests.
export NVMEOF_TB_ADDR=192.0.2.1            # documentation range, on dummy0 in the guest
export NVMEOF_TB_UNREACHABLE=192.0.2.77    # on the same subnet, nobody answers
export NVMEOF_TB_PORT=4420
export NVMEOF_TB_DISC_PORT=8009           # NVMe/TCP's discovery port (port 7: TCP, subsystem A)
export NVMEOF_TB_NQN_A=nqn.2026-12.io.nvmeof:testbed-a   # any host; ns1 null_blk 512 B, ns2 file 4 KiB
export NVMEOF_TB_NQN_B=nqn.2026-12.io.nvmeof:testbed-b   # only NVMEOF_TB_HOSTNQN_B
export NVMEOF_TB_HOSTNQN_B=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6f66-4000-8000-00000000000b
export NVMEOF_TB_SERIAL=NVMEOFTB0001
export NVMEOF_TB_MODEL=nvmeof-testbed
export NVMEOF_TB_NS1_LBA=512 NVMEOF_TB_NS1_BYTES=1073741824
export NVMEOF_TB_NS2_LBA=4096 NVMEOF_TB_NS2_BYTES=268435456
# Several paths: a second Soft-RoCE device (rxe1 on dummy1) with
# its own address, and subsystem M reached through two RDMA ports of its
# own, port 3 on NVMEOF_TB_ADDR:NVMEOF_TB_MPORT and port 4 on
# NVMEOF_TB_ADDR2:NVMEOF_TB_MPORT, its namespaces 1 and 2 in ANA group 2 (optimized
# on both until `tb ana` says otherwise). Ports 1 and 2 are as before.
# The same over NVMe/TCP: ports 5 (NVMEOF_TB_ADDR) and 6 (NVMEOF_TB_ADDR2),
# same port number; NVMEOF_TB_TRTYPE=tcp makes `tb`'s paths those, and
# NVMEOF_TB_TRTYPE2 (rdma or tcp) path 2's alone (mixed paths).
export NVMEOF_TB_ADDR2=198.51.100.1        # TEST-NET-2, on dummy1
export NVMEOF_TB_MPORT=4430             # not 4421: tool.sh expects nobody there
export NVMEOF_TB_TLS_PORT=4455          # nvmet port 10 (tb tls up): NVMe/TCP, TLS 1.3 required
export NVMEOF_TB_NQN_M=nqn.2026-12.io.nvmeof:testbed-m   # any host; ns1 and ns2 files 64 MiB, 4 KiB blocks (tmpfs)
export NVMEOF_TB_ANAGRP=2
# Path 3 (tb wire-up, for partitions over RDMA): the target at NVMEOF_TB_ADDR3
# on one end of a veth pair, the host at NVMEOF_TB_SRC3 on the other
# (TEST-NET-3), each end with its own Soft-RoCE device.
export NVMEOF_TB_ADDR3=203.0.113.1 NVMEOF_TB_SRC3=203.0.113.2
# Zoned namespaces: subsystem Z (any host), namespace 1 a zoned null_blk of
# 16 zones of 4 MiB (1024 blocks of 4 KiB), MOR 4, MAR 6, appends up to
# 128 KiB, on ports 8 (RDMA) and 9 (TCP) at NVMEOF_TB_ADDR:NVMEOF_TB_ZPORT
# (tests/testbed/guest/zns-up)
export NVMEOF_TB_NQN_Z=nqn.2026-12.io.nvmeof:testbed-z
export NVMEOF_TB_ZPORT=4450
