"""Waiting for an OpenCL device so that Ctrl-C still works (runtime.py).

Python runs its SIGINT handler between bytecodes of the main thread, so a
main thread blocked in pyopencl (a blocking read, clWaitForEvents,
queue.finish) heard Ctrl-C only when the wait ended: after every kernel
the call had enqueued. `wait(dev, ev)` returns at once when `ev` is
complete and simply waits in any other thread (they never get
KeyboardInterrupt). On the main thread it polls the event's status,
yielding the core between polls (sched_yield), for up to SPIN seconds (the
signal handler runs between polls), then hands the blocking wait to a
waiter thread and waits for that on a threading.Event in slices of SLICE
seconds: a signal that the kernel delivers to the main thread interrupts
the wait at once (lock waits are interruptible on POSIX), one delivered to
another thread is seen at the end of the slice. Measured with PoCL on the
2-core test machine (saxpy calls of 10^3, 10^5 and 2^20 elements, medians
of interleaved runs): a blocking wait 253, 785 and 6774 us; polling with
yields 230, 770 and 5965 us (no worse); an immediate hand-off 295, 813 and
6800 us (a thread hop costs ~40 us there); polling without yields, or
sleeping in growing slices, was slower still (their CPU or their wake-up
delay is PoCL's loss). Past SPIN the hand-off costs a few percent at most.

When the wait is left by an exception (KeyboardInterrupt), the event goes
to `dev.pending` instead of dying here: a pyopencl NannyEvent that dies
waits for its transfer (it guards the host array), which would be the
blocking wait all over again.
"""
from __future__ import annotations

import os
import queue
import threading
import time

SPIN = 1e-3             # seconds of polling a status before the hand-off
SLICE = 0.05            # seconds between signal checks while handed off
_COMPLETE = 0           # CL_COMPLETE; errors are negative, pending states 1..3

_MAIN = [threading.main_thread().ident]
_WAITER: list = []      # [queue of (event, threading.Event)] once the waiter runs
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: (
        _MAIN.__setitem__(0, threading.main_thread().ident), _WAITER.clear()))


def _waiter(jobs: queue.SimpleQueue):
    while True:
        ev, done = jobs.get()
        try:
            ev.wait()
        except Exception:       # the caller's own ev.wait() reports it
            pass
        done.set()


def _hand_off(ev) -> threading.Event:
    if not _WAITER:
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=_waiter, args=(jobs,), name="pyshark-opencl-wait",
                         daemon=True).start()
        _WAITER.append(jobs)
    done = threading.Event()
    _WAITER[0].put((ev, done))
    return done


def wait(dev, ev) -> None:
    """Waits for pyopencl event `ev` of device `dev` (see the module
    docstring); raises what ev.wait() raises for a failed command."""
    if ev.command_execution_status <= _COMPLETE or threading.get_ident() != _MAIN[0]:
        ev.wait()
        return
    try:
        end = time.perf_counter() + SPIN
        while ev.command_execution_status > _COMPLETE:
            if time.perf_counter() > end:
                done = _hand_off(ev)
                while not done.wait(SLICE):
                    pass
                break
            os.sched_yield()
        ev.wait()
    except BaseException:
        dev.pending.append(ev)
        raise


__all__ = ["wait", "SPIN", "SLICE"]
