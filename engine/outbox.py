"""The outbox: an executor's outgoing batches, and the three ways they are flushed.

Collectors ``push`` emitted tuples (buffered per destination executor) and ``send`` or
``ack`` acker messages (buffered per acker) through the outbox's verbs; nothing there
awaits. The batches leave in one of three ways, and only here:

1. **Awaited** (``flush``): a bolt executor after each batch of ``execute`` calls. Acker
   messages go at once; tuples wait while a destination queue is full. This is the
   back-pressure: a slow consumer slows its producers.
2. **Spout's polling** (``flush_polling``): a spout executor after each round of
   ``next_tuple``. Like the awaited flush, but while a destination is full it keeps
   handling the acks, fails and timeouts arriving in its own inbox, so that a fail never
   waits for downstream room.
3. **Immediate** (``schedule_flush``): a bolt's emit, ack or fail made outside ``execute``
   (from the user's own task, timer or callback) schedules a flush with
   ``loop.call_soon``. That flush uses ``put_nowait`` and **does not respect the queue
   bound**: code that emits from its own task in a loop must yield to the event loop
   (``await asyncio.sleep(0)``) or it can grow a destination queue without limit. While
   the executor is running user code (``busy``) the scheduled flush does nothing: the
   executor flushes at the end of its batch.

A batch whose destination queue is full is *held back* in the outbox, not waited on, until
it reaches ``HOLD_MAX`` tuples (``HOLD_STUCK_MAX`` when the queue is stuck: taking
nothing, see ``engine.queue_watch``); meanwhile shuffle groupings route around that
queue, so one stuck task does not stop its producer from feeding the others. A spout
waiting for room in a queue that turns out stuck stops waiting and holds the batch. A
held batch leaves with the next flush that finds room (bolt executors retry while idle).
``stranded`` counts what sits in or is held for the queues of hung consumers.
``blocked`` is True while a spout's polling flush waits for room (the stall monitor
reads it).

Acker messages (INIT, FAIL, RESET, coalesced ACKs) always go with ``put_nowait``: the
acker must never wait on a full queue, or ackers and executors could deadlock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

from mypy_extensions import i64

from engine.queue_watch import QueueWatch
from engine.queues import BatchQueue
from engine.tuples import Tuple

__all__ = ["BACKPRESSURE_POLL_SECS", "HOLD_MAX", "HOLD_STUCK_MAX", "Outbox"]

BACKPRESSURE_POLL_SECS: Final = 0.01
# Tuples a batch for a full queue may hold before its producer waits for room; for a
# stuck queue (a grouping that cannot route around it, say fields) a little more.
HOLD_MAX: Final = 256
HOLD_STUCK_MAX: Final = 1024
# The outbox's remembered buffer when there is none: never appended to (no task matches).
_NO_BUF: Final[list[Tuple]] = []


class Outbox:
    """An executor's outgoing buffers: tuples per destination executor, messages per acker.

    Collectors use its verbs only: ``push`` a tuple to a task, ``ack_one``/``ack_to``/
    ``send`` for the ackers, ``touch`` after any of them. The executor marks the batch it
    runs (``set_busy``) and flushes.
    """

    __slots__ = (
        "_acker_acks",
        "_acker_bufs",
        "_acker_queues",
        "_blocked",
        "_bufs",
        "_busy",
        "_last_buf",
        "_last_root",
        "_last_task",
        "_last_val",
        "_queues",
        "_scheduled",
        "_task_executor",
        "_transferred",
        "_watch",
    )

    def __init__(self, queues: list[BatchQueue], task_executor: list[int],
                 acker_queues: list[BatchQueue], watch: QueueWatch | None = None) -> None:
        self._queues = queues
        self._watch = watch
        self._task_executor = task_executor
        self._bufs: dict[int, list[Tuple]] = {}
        # The buffer the latest push went to, and its task: a bolt's emits mostly go to
        # the task of the one before. Any change to ``_bufs`` forgets it (``_swap``,
        # ``_hold``): a batch handed to a queue must never grow.
        self._last_task = -1
        self._last_buf = _NO_BUF
        self._acker_queues = acker_queues
        # Per acker: INIT/FAIL/RESET messages in order, and ACKs coalesced per root by XOR
        # (associative and commutative, so one message per root per batch says the same).
        self._acker_bufs: list[list[tuple[Any, ...]]] = [[] for _ in acker_queues]
        self._acker_acks: list[dict[int, i64]] = [{} for _ in acker_queues]
        # With one acker, the latest run of acks to one root, XOR-ed natively and folded
        # into ``_acker_acks`` when another root comes or at flush: a bolt acks the tuples
        # of a tree in runs (a sentence's words arrive together).
        self._last_root: Any = None
        self._last_val: i64 = 0
        # True while the executor runs user code it will flush after; calls made at other
        # times (from the user's own tasks or callbacks) schedule a flush instead.
        self._busy = False
        self._scheduled = False
        self._blocked = False
        self._transferred = 0  # tuples handed to destination queues, counted per batch

    # -- the collectors' verbs ------------------------------------------------------------

    @property
    def num_ackers(self) -> int:
        """How many ackers the messages are spread over (by ``root % num_ackers``)."""
        return len(self._acker_queues)

    def push(self, task: int, tup: Tuple) -> None:
        """Buffer ``tup`` for the executor of ``task``."""
        if task == self._last_task:
            self._last_buf.append(tup)
            return
        ex = self._task_executor[task]
        buf = self._bufs.get(ex)
        if buf is None:
            buf = self._bufs[ex] = [tup]
        else:
            buf.append(tup)
        self._last_task = task
        self._last_buf = buf

    def send(self, root: Any, message: tuple[Any, ...]) -> None:
        """Buffer an INIT, FAIL or RESET ``message`` for ``root``'s acker."""
        n = len(self._acker_bufs)
        self._acker_bufs[0 if n == 1 else root % n].append(message)

    def ack_one(self, root: Any, val: i64) -> None:
        """With one acker: XOR ``val`` into ``root``'s ack (runs to one root coalesce)."""
        if root is self._last_root:
            self._last_val ^= val
        else:
            self.merge_last()
            self._last_root = root
            self._last_val = val

    def ack_to(self, root: Any, val: i64) -> None:
        """XOR ``val`` into ``root``'s ack, with its acker's."""
        per_acker = self._acker_acks
        acks = per_acker[root % len(per_acker)]
        acks[root] = acks.get(root, 0) ^ val

    def touch(self) -> None:
        """Something was buffered: outside the executor's batch, flush soon."""
        if not self._busy:
            self.schedule_flush()

    # -- the executor's ---------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while the executor runs user code and flushes after it."""
        return self._busy

    def set_busy(self, busy: bool) -> None:
        """The executor starts (True) or ends (False) a batch of user code."""
        self._busy = busy

    @property
    def blocked(self) -> bool:
        """True while a spout's polling flush waits for room."""
        return self._blocked

    @property
    def transferred(self) -> int:
        """Tuples handed to destination queues so far."""
        return self._transferred

    def holding(self) -> bool:
        """Whether tuples are buffered (held back for a full queue, between flushes)."""
        return bool(self._bufs)

    def buffered(self) -> dict[int, int]:
        """Tuples buffered per destination executor."""
        return {ex: len(buf) for ex, buf in self._bufs.items()}

    def schedule_flush(self) -> None:
        """Flush soon, without waiting and ignoring queue bounds (the immediate path)."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_now)

    def _flush_now(self) -> None:
        self._scheduled = False
        if self._busy:
            return  # the executor flushes at the end of its batch
        self.flush_acker_messages()
        if self._bufs:
            for ex, buf in self._swap().items():
                self._transferred += len(buf)
                self._queues[ex].put_nowait(buf)

    def merge_last(self) -> None:
        """Fold the run of acks to ``_last_root`` into the first acker's coalesced acks."""
        root = self._last_root
        if root is not None:
            self._last_root = None
            acks = self._acker_acks[0]
            acks[root] = acks.get(root, 0) ^ self._last_val

    def flush_acker_messages(self) -> None:
        """Hand every pending acker message to its acker (never blocks)."""
        self.merge_last()
        acks = self._acker_acks
        for i, buf in enumerate(self._acker_bufs):
            if buf or acks[i]:
                self._acker_queues[i].put_nowait((buf, acks[i]))
                self._acker_bufs[i] = []
                acks[i] = {}

    async def flush(self) -> None:
        """Send every buffered batch, waiting where a destination queue is full."""
        self.flush_acker_messages()
        if self._bufs:
            queues = self._queues
            for ex, buf in self._swap().items():
                queue = queues[ex]
                if queue.full() and self._holds(ex, len(buf)):
                    self._hold(ex, buf)
                    continue
                self._transferred += len(buf)
                await queue.put(buf)

    def stranded(self, secs: float) -> int:
        """Tuples sitting in the queues of consumers hung for ``secs`` (``QueueWatch.hung``)
        or held here for them.

        Their trees can only time out while the consumer hangs; a spout's flow control
        does not count them against its limit (see ``SpoutExecutor``). Looks at every
        queue: called only when a spout task reaches its limit, never per tuple.
        """
        watch = self._watch
        if watch is None:
            return 0
        n = 0
        for ex, queue in enumerate(self._queues):
            if watch.hung(ex, secs):
                n += len(queue)
                held = self._bufs.get(ex)
                if held:
                    n += len(held)
        return n

    def _holds(self, ex: int, n: int) -> bool:
        """Whether a batch of ``n`` tuples for full queue ``ex`` is held back, not waited on."""
        if n < HOLD_MAX:
            return True
        return n < HOLD_STUCK_MAX and self._watch is not None and self._watch.stuck(ex)

    def _swap(self) -> dict[int, list[Tuple]]:
        """Every buffered batch, taken out: pushes from now on start new batches."""
        bufs, self._bufs = self._bufs, {}
        self._last_task = -1
        self._last_buf = _NO_BUF  # the batch is the queue's now: let it go with it
        return bufs

    def _hold(self, ex: int, buf: list[Tuple]) -> None:
        """Keep ``buf`` for a later flush, ahead of anything emitted to ``ex`` since."""
        self._last_task = -1
        self._last_buf = _NO_BUF
        newer = self._bufs.get(ex)
        if newer:
            buf.extend(newer)
        self._bufs[ex] = buf

    async def flush_polling(self, inbox: BatchQueue,
                            handle: Callable[[Any], Awaitable[None]]) -> None:
        """Send every buffered batch; while a destination is full, ``handle`` what arrives
        in ``inbox`` (acks, fails, timeouts) and pass on the acker messages that causes."""
        self.flush_acker_messages()
        if not self._bufs:
            return
        for ex, buf in self._swap().items():
            queue = self._queues[ex]
            held = False
            while not queue.fits(len(buf)):
                if self._holds(ex, len(buf)):
                    self._hold(ex, buf)
                    held = True
                    break
                self._blocked = True
                if await inbox.wait(BACKPRESSURE_POLL_SECS):
                    item = inbox.get_nowait()
                    while item is not None:
                        await handle(item)
                        item = inbox.get_nowait()
                    self.flush_acker_messages()
            self._blocked = False
            if not held:
                self._transferred += len(buf)
                queue.put_nowait(buf)
