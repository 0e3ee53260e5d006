"""nvmeof.discover against the test bed's discovery controller: the
subsystems a Python user connects to, without the tool."""
import nvmeof

from conftest import ADDR, NQN_A, TRTYPE


def test_discover_lists_subsystem_a():
    entries = nvmeof.discover(ADDR, transport=TRTYPE)
    subs = [e for e in entries if e["subtype"] == "nvme subsystem"]
    assert any(e["subnqn"] == NQN_A and e["traddr"] == ADDR and e["trtype"] == TRTYPE for e in subs), entries
    # the NQN it lists connects
    with nvmeof.Controller.connect(ADDR, NQN_A, transport=TRTYPE) as c:
        assert c.namespaces
