"""What a driver's failure becomes: a PyShark DeviceError, never a raw
pyopencl exception (pyshark/errors.py).

pyopencl raises `pyopencl.Error` subclasses (LogicError, RuntimeError,
MemoryError) carrying the OpenCL status code. The code decides the class:
out of memory or resources -> DeviceOutOfMemory (also a MemoryError), a
failed build -> DeviceBuildError with the driver's log, a device that is not
available or stopped answering -> DeviceError saying so; anything else ->
DeviceError with the driver's words. Each message names the device and
what to do.
"""
from __future__ import annotations

from contextlib import contextmanager

from pyshark.errors import DeviceBuildError, DeviceError, DeviceOutOfMemory

# OpenCL status codes (CL/cl.h)
_OUT_OF_MEMORY = {-4: "MEM_OBJECT_ALLOCATION_FAILURE", -5: "OUT_OF_RESOURCES",
                  -6: "OUT_OF_HOST_MEMORY", -61: "INVALID_BUFFER_SIZE"}
_LOST = {-2: "DEVICE_NOT_AVAILABLE", -14: "EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
         -36: "INVALID_COMMAND_QUEUE", -9999: "a fault in a kernel (NVIDIA -9999)"}
_BUILD = {-11: "BUILD_PROGRAM_FAILURE", -3: "COMPILER_NOT_AVAILABLE",
          -7: "PROFILING_INFO_NOT_AVAILABLE"}
_OTHER_BACKEND = "or run on the CPU instead with Wrapper(backend='cpu')"


def _code(exc) -> int | None:
    try:
        return int(exc.code)
    except Exception:
        return None


def is_driver_error(exc: BaseException) -> bool:
    """Whether exc comes from pyopencl (without importing it when absent)."""
    return type(exc).__module__.startswith("pyopencl")


def translate(exc: BaseException, device: str, doing: str) -> DeviceError:
    """The DeviceError for a pyopencl exception raised while `doing` (a
    phrase: "running entry 'saxpy'") on `device` (its name)."""
    code = _code(exc)
    what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = f"on the OpenCL device {device}" if device else "in the OpenCL runtime"
    if code in _OUT_OF_MEMORY or type(exc).__name__ == "MemoryError":
        return DeviceOutOfMemory(
            f"{where}: out of device memory while {doing} ({what}); free DeviceArrays or call "
            f"Wrapper.close(), use smaller inputs, {_OTHER_BACKEND}", device=device)
    if code in _BUILD:
        return DeviceBuildError(
            f"{where}: the driver could not build the program while {doing} ({what}); "
            f"update the OpenCL runtime (pyshark setup-opencl), or report it with the log below, "
            f"{_OTHER_BACKEND}", device=device, log=_log_of(exc))
    if code in _LOST:
        return DeviceError(
            f"{where}: the device failed or stopped answering while {doing} ({what}); "
            f"the process should be restarted to use it again, {_OTHER_BACKEND}", device=device)
    return DeviceError(f"{where}: the driver failed while {doing} ({what}); {_OTHER_BACKEND}",
                       device=device)


def out_of_memory(device: str, entry: str, exc: MemoryError) -> DeviceOutOfMemory:
    """An allocation the device refused during a call of `entry`, as the
    error the user sees (both host paths raise it)."""
    return DeviceOutOfMemory(f"on the OpenCL device {device}, entry {entry!r}: {exc}; free "
                             f"DeviceArrays or call Wrapper.close(), use smaller inputs, or "
                             f"Wrapper(backend='cpu')", device=device)


def _log_of(exc) -> str:
    """The build log pyopencl put in the exception's text (after the first line)."""
    lines = str(exc).splitlines()
    return "\n".join(lines[1:]) if len(lines) > 1 else ""


@contextmanager
def device_errors(device: str, doing: str):
    """Turns a pyopencl exception raised in the block into a DeviceError."""
    try:
        yield
    except DeviceError:
        raise
    except Exception as exc:
        if is_driver_error(exc):
            raise translate(exc, device, doing) from exc
        raise
