# What the test bed's target is; sourced by the run script and by tests.
export NVMEOF_TB_ADDR=192.0.2.1            # documentation range, on dummy0 in the guest
export NVMEOF_TB_UNREACHABLE=192.0.2.77    # on the same subnet, nobody answers
export NVMEOF_TB_PORT=4420
export NVMEOF_TB_NQN_A=nqn.2026-12.io.nvmeof:testbed-a   # any host; ns1 null_blk 512 B, ns2 file 4 KiB
export NVMEOF_TB_NQN_B=nqn.2026-12.io.nvmeof:testbed-b   # only NVMEOF_TB_HOSTNQN_B
export NVMEOF_TB_HOSTNQN_B=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6f66-4000-8000-00000000000b
export NVMEOF_TB_SERIAL=NVMEOFTB0001
export NVMEOF_TB_MODEL=nvmeof-testbed
export NVMEOF_TB_NS1_LBA=512 NVMEOF_TB_NS1_BYTES=1073741824
export NVMEOF_TB_NS2_LBA=4096 NVMEOF_TB_NS2_BYTES=268435456
