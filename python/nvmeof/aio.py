"""asyncio over the low-level API: awaitable raw commands, reads and writes
that sleep in the event loop (loop.add_reader on the queue's completion
channel) instead of spinning, so one thread overlaps many transfers on
several queues.

    q = nvmeof.aio.AsyncQueue(controller.queue())
    await q.write(1, slba=0, blocks=8, buffer=buf)
    completion = await q.execute(protocol.flush(1))
    zones = await q.zones(1, slba=0, buffer=report_buf)   # zoned namespaces

One AsyncQueue per Queue, used from one event loop. While commands are
outstanding the queue is also polled every `housekeeping` seconds: the
descriptor wakes the loop for completions only, and a command timeout or a
lost connection is noticed by a poll.
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from . import _lib
from . import protocol
from .errors import QueueFullError, from_code
from .lowlevel import Completion, RawQueue, _raw_lib
from .namespace import Zone

_declared = False


def _lib_fd():
    global _declared
    lib = _raw_lib()
    if not _declared:
        import ctypes
        lib.nvmeof_queue_fd.argtypes = [ctypes.c_void_p]
        lib.nvmeof_queue_fd.restype = ctypes.c_int
        lib.nvmeof_queue_arm.argtypes = [ctypes.c_void_p]
        lib.nvmeof_queue_arm.restype = ctypes.c_int
        lib.nvmeof_queue_pending.argtypes = [ctypes.c_void_p]
        lib.nvmeof_queue_pending.restype = ctypes.c_bool
        _declared = True
    return lib


class AsyncQueue:
    """Awaitable commands on one Queue (Controller.queue())."""

    def __init__(self, queue: Any, housekeeping: float = 0.5) -> None:
        self.queue = queue
        self.raw = queue.raw if hasattr(queue, "raw") else RawQueue(queue.controller, queue)
        lib = _lib_fd()
        fd = lib.nvmeof_queue_fd(queue._h)
        if fd < 0:
            raise from_code(fd, _lib.errmsg())
        self._fd = fd
        self._housekeeping = housekeeping
        self._futures = {}          # Request -> Future
        self._loop = None
        self._reading = False
        self._timer = None
        self._slot_freed = None     # an asyncio.Event while someone waits for a free slot
        self.wakeups = 0            # times the descriptor woke the loop
        # housekeeping timers that found completions: each is a completion
        # the loop slept through (with a live target and commands in
        # flight it stays 0)
        self.late = 0

    def _service(self, from_fd=False, from_timer=False):
        if from_fd:
            self.wakeups += 1
        lib = _lib_fd()
        done = self.raw.poll()
        if from_timer and done:
            self.late += 1
        self._resolve(done)
        rc = lib.nvmeof_queue_arm(self.queue._h)
        if rc:
            self._fail_all(from_code(rc, _lib.errmsg()))
            return
        self._resolve(self.raw.poll())  # what landed before the arm
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._futures and lib.nvmeof_queue_pending(self.queue._h):
            # what the poll left (more than its batch, NVMe/TCP bytes read
            # ahead, write data it held for a submit) wakes no descriptor:
            # take it at the loop's next turn
            self._timer = self._loop.call_soon(self._service)
        elif self._futures:
            self._timer = self._loop.call_later(self._housekeeping, self._service, False, True)
        elif self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False

    def _resolve(self, done):
        for req in done:
            fut = self._futures.pop(req, None)
            if fut is None or fut.done():
                continue
            if req.error is not None:
                fut.set_exception(req.error)
            else:
                fut.set_result(req.response)
        if done and self._slot_freed is not None:
            self._slot_freed.set()

    def _fail_all(self, exc):
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(exc)
        self._futures.clear()

    async def submit(self, command: Any, data_owner: Any = None) -> "asyncio.Future[Completion]":
        """Sends command (waiting in the loop for a free slot when the queue
        is full); a future of its Completion."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        while True:
            try:
                req = self.raw.submit(command, data_owner)
                break
            except QueueFullError:
                self._slot_freed = self._slot_freed or asyncio.Event()
                self._slot_freed.clear()
                self._ensure_reading()
                await self._slot_freed.wait()
        fut = loop.create_future()
        self._futures[req] = fut
        self._ensure_reading()
        return fut

    def _ensure_reading(self):
        if not self._reading:
            self._loop.add_reader(self._fd, self._service, True)
            self._reading = True
            self._loop.call_soon(self._service)  # arm after the submission

    async def execute(self, command: Any, data_owner: Any = None) -> Completion:
        """Sends command and awaits its completion; raises NVMeStatusError
        on an error status."""
        fut = await self.submit(command, data_owner)
        return (await fut).raise_for_status()

    async def read(self, nsid: int, slba: int, blocks: int, buffer: Any, *, lba_size: int,
                   buffer_offset: int = 0) -> Completion:
        """blocks logical blocks from slba into buffer (one command: at most
        MDTS; the caller splits larger transfers)."""
        return await self.execute(protocol.rw_command(protocol.NVME_CMD_READ, nsid, slba, blocks, buffer,
                                                      lba_size=lba_size, buffer_offset=buffer_offset), buffer)

    async def write(self, nsid: int, slba: int, blocks: int, buffer: Any, *, lba_size: int,
                    buffer_offset: int = 0) -> Completion:
        return await self.execute(protocol.rw_command(protocol.NVME_CMD_WRITE, nsid, slba, blocks, buffer,
                                                      lba_size=lba_size, buffer_offset=buffer_offset), buffer)

    # ---- zoned namespaces (the Zoned Namespace command set) ----
    async def zone_send(self, nsid: int, slba: int, action: str, *, all: bool = False) -> Completion:
        """Zone Management Send: action ("reset", "open", "close", "finish",
        "offline") on the zone at slba, or on every zone (all=True)."""
        return await self.execute(protocol.zone_mgmt_send(nsid, slba, action, select_all=all))

    async def zones(self, nsid: int, slba: int, buffer: Any, *, state: str = "all",
                    buffer_offset: int = 0, length: Optional[int] = None) -> "list[Zone]":
        """Report Zones from the zone holding slba into buffer (a registered
        region: the 64-byte header and 64 bytes a zone), as Namespace.zones
        gives them; one command, so as many zones as buffer holds (length
        bytes of it from buffer_offset, default the rest)."""
        await self.execute(protocol.report_zones(nsid, slba, buffer, length=length, state=state,
                                                 buffer_offset=buffer_offset), buffer)
        n = buffer.length - buffer_offset if length is None else length
        _, descs = protocol.parse_zone_report(buffer.read(n, buffer_offset))
        name = _lib.load().nvmeof_zone_state_str
        return [Zone(zslba, wp, zcap, name(zs).decode(), zt, za) for zt, zs, za, zcap, zslba, wp in descs]

    async def zone_append(self, nsid: int, zslba: int, blocks: int, buffer: Any, *, lba_size: int,
                          buffer_offset: int = 0) -> int:
        """Zone Append of blocks from buffer to the zone starting at zslba
        (one command: the caller keeps it within the Zone Append Size
        Limit); the LBA the controller wrote them at."""
        cpl = await self.execute(protocol.zone_append(nsid, zslba, blocks, buffer, lba_size=lba_size,
                                                      buffer_offset=buffer_offset), buffer)
        return cpl.result | cpl.result_dw1 << 32

    @property
    def outstanding(self) -> int:
        return len(self._futures)

    def close(self) -> None:
        """Stops watching the descriptor (the Queue stays open)."""
        if self._reading and self._loop is not None:
            self._loop.remove_reader(self._fd)
            self._reading = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
