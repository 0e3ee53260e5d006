"""jobs/sweeplib.py reads the engine's end-of-job lines into the sweep's CSV:
the placement line in each form the engine prints (engine/iomem.c), checked
here without a target, so a change of wording shows before a sweep runs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "jobs"))
import sweeplib  # noqa: E402


def fields(text):
    t = dict.fromkeys(sweeplib.TOPO, "")
    sweeplib.placement(text, t)
    return t


def test_placement_with_the_reason_for_the_node():
    t = fields("nvmeof: job sl: placement: 20480 bytes at 0x7f44c74c0000; CPUs on NUMA 0, I/O memory on "
               "NUMA 0 (normal pages, numa_node=auto: the job's CPUs' node, its HCAs' being unknown), "
               "HCA rxe0 (not PCI, NUMA ?), PCIe relaxed ordering on\n")
    assert (t["cpu_numa"], t["mem_numa"], t["mem_pages"], t["relaxed_ordering"], t["cross_node"]) == \
        ("0", "0", "normal", "on", "no")


def test_placement_huge_pages_cross_node():
    t = fields("nvmeof: job j: placement: 4096 bytes at 0x7f; CPUs on NUMA 1, I/O memory on NUMA 0 "
               "(huge pages), HCA rxe0 (not PCI, NUMA ?), PCIe relaxed ordering off\n"
               "nvmeof: job j: cross-node placement: the job's CPUs on NUMA 1, its I/O memory on NUMA 0\n")
    assert (t["cpu_numa"], t["mem_numa"], t["mem_pages"], t["relaxed_ordering"], t["cross_node"]) == \
        ("1", "0", "huge", "off", "yes")
