"""The low-level API (Controller.io / Controller.admin, nvmeof.protocol,
Completion) against the real target: a program written with the seed's
names only, raw commands against the wrapped calls, and what is refused."""
import struct

import pytest

import nvmeof
from nvmeof import protocol

from conftest import ADDR, NQN_A, pattern

NSID = 2  # file-backed, 4 KiB blocks: it keeps what is written


def test_seed_low_level_program_writes_and_reads_back():
    # Only the seed's low-level names from here on.
    with nvmeof.Controller.connect(ADDR, NQN_A) as controller:
        lba = 4096
        with controller.allocate(8 * lba) as out, controller.allocate(8 * lba) as back:
            data = bytes(pattern(8 * lba, 37))
            out.write(data)
            write = protocol.rw_command(protocol.NVME_CMD_WRITE, NSID, 64, 8, out, lba_size=lba)
            request = controller.io.submit(write, data_owner=out)
            assert isinstance(request.command_id, int)  # the seed assigns it at submit
            assert controller.io.outstanding == 1
            done = []
            while not request.done:
                done += controller.io.poll()
            assert done == [request]
            assert request.send_complete and request.data_owner is out
            request.response.raise_for_status()
            assert request.response.succeeded
            assert request.response.command_id == request.command_id
            assert controller.io.outstanding == 0
            read = protocol.rw_command(protocol.NVME_CMD_READ, NSID, 60, 8, back, lba_size=lba,
                                       buffer_offset=0)
            completion = controller.io.execute(read, data_owner=back, timeout=10.0)
            assert isinstance(completion, nvmeof.Completion) and completion.succeeded
            assert back.read(4 * lba, 4 * lba) == data[:4 * lba]
            # the same bytes through the wrapped call
            controller.namespace(NSID).read(back, slba=64, blocks=8)
            assert back.read() == data
            # the Completion as 16 bytes
            again = nvmeof.Completion.from_bytes(completion.to_bytes())
            assert (again.sq_id, again.command_id, again.status_field) == \
                (completion.sq_id, completion.command_id, completion.status_field)


def test_command_ids_are_known_at_submit_and_come_back_in_the_completions(ctrl):
    # A program that tracks its requests by CID, as the seed's can: the CID
    # is there at submit, one per command in flight, and the target's
    # completion carries that same CID.
    with ctrl.allocate(4 * 4096) as buf, ctrl.allocate(2 * protocol.IDENTIFY_SIZE) as idbuf:
        for rq, cmds, owner in (
                (ctrl.io, [protocol.rw_command(protocol.NVME_CMD_READ, NSID, i, 1, buf, lba_size=4096,
                                               buffer_offset=i * 4096) for i in range(4)], buf),
                (ctrl.admin, [protocol.identify(idbuf, controller=True),
                              protocol.set_keyed_sgl(protocol.identify(idbuf, nsid=NSID), idbuf,
                                                     protocol.IDENTIFY_SIZE, protocol.IDENTIFY_SIZE)], idbuf)):
            by_cid = {}
            for cmd in cmds:
                req = rq.submit(cmd, data_owner=owner)
                assert isinstance(req.command_id, int) and req.command_id not in by_cid
                by_cid[req.command_id] = req
            answered = []
            while len(answered) < len(cmds):
                answered += rq.poll()
            for req in answered:
                assert by_cid.pop(req.response.command_id) is req
                req.response.raise_for_status()
            assert not by_cid and rq.outstanding == 0


def test_raw_identify_matches_controller_info(ctrl):
    with ctrl.allocate(protocol.IDENTIFY_SIZE) as buf:
        c = ctrl.admin.execute(protocol.identify(buf, controller=True), data_owner=buf)
        assert c.sq_id == 0
        raw = buf.read()
        assert raw[4:24].decode().strip() == ctrl.info.serial
        assert raw[24:64].decode().strip() == ctrl.info.model
        ctrl.admin.execute(protocol.identify(buf, nsid=NSID), data_owner=buf)
        nsze = struct.unpack_from("<Q", buf.read(8))[0]
        assert nsze == ctrl.namespace(NSID).info.size
    # Get Features, Number of Queues: the value in the completion's result
    c = ctrl.admin.execute(protocol.get_features(0x07))
    nsq, ncq = (c.result & 0xFFFF) + 1, (c.result >> 16) + 1
    assert min(nsq, ncq, 64) == ctrl.info.max_io_queues


def test_vendor_opcode_raises_nvme_status_error_with_the_completion(ctrl):
    with pytest.raises(nvmeof.NVMeStatusError) as e:
        ctrl.io.execute(protocol.command(0xC0, NSID))
    assert isinstance(e.value, OSError)
    assert e.value.completion.status_code == 0x01 and e.value.completion.status_type == 0
    assert "Invalid Command Opcode" in str(e.value)
    # the queue carries on
    with ctrl.allocate(4096) as buf:
        ctrl.io.execute(protocol.rw_command(protocol.NVME_CMD_READ, NSID, 0, 1, buf, lba_size=4096))


def test_sgl_outside_registered_memory_is_refused_before_sending(ctrl):
    class Fake:  # looks like a region, registered nowhere
        addr, length, rkey = 0x10000, 4096, 0x1234
    before = ctrl._default_queue().stats().cmds
    with pytest.raises(nvmeof.InvalidArgumentError, match="no region registered"):
        ctrl.io.submit(protocol.rw_command(protocol.NVME_CMD_READ, NSID, 0, 1, Fake(), lba_size=4096))
    with pytest.raises(nvmeof.InvalidArgumentError, match="Fabrics"):
        ctrl.io.submit(protocol.command(protocol.NVME_FABRICS_COMMAND))
    assert ctrl._default_queue().stats().cmds == before
    assert ctrl.io.outstanding == 0


def test_data_pointer_that_is_no_keyed_sgl_is_refused_not_dropped(ctrl):
    # A data pointer the library cannot use (PRPs, or a keyed SGL asking the
    # target to invalidate the region's key) is refused before sending, not
    # replaced by "no data".
    with ctrl.allocate(4096) as buf:
        prp = protocol.command(protocol.NVME_CMD_READ, NSID)
        struct.pack_into("<QQ", prp, 24, buf.addr, 0)  # PSDT 00b: PRP1
        invalidate = protocol.rw_command(protocol.NVME_CMD_READ, NSID, 0, 1, buf, lba_size=4096)
        invalidate[39] = 0x4F
        before = ctrl._default_queue().stats().cmds
        for cmd in (prp, invalidate):
            with pytest.raises(nvmeof.InvalidArgumentError, match="not a Keyed SGL Data Block"):
                ctrl.io.execute(cmd, data_owner=buf)
            with pytest.raises(nvmeof.InvalidArgumentError):
                ctrl.io.submit(cmd, data_owner=buf)
        assert ctrl._default_queue().stats().cmds == before
        assert ctrl.io.outstanding == 0


def test_full_queue_raises_queue_full_error(ctrl):
    with ctrl.queue(depth=2) as q, ctrl.allocate(3 * 4096) as buf:
        raw = q.raw
        reqs = [raw.submit(protocol.rw_command(protocol.NVME_CMD_READ, NSID, i, 1, buf, lba_size=4096,
                                               buffer_offset=i * 4096), data_owner=buf)
                for i in range(q.depth)]
        with pytest.raises(nvmeof.QueueFullError):
            raw.submit(protocol.rw_command(protocol.NVME_CMD_READ, NSID, 9, 1, buf, lba_size=4096))
        while not all(r.done for r in reqs):
            raw.poll()
        assert all(r.response.succeeded for r in reqs)
        assert raw.outstanding == 0
