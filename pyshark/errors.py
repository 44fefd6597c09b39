"""The exceptions PyShark raises to users.

Run-time errors are the builtin Python classes (IndexError, ZeroDivisionError,
AssertionError) plus ShapeError, so that every backend raises what Python mode
raises. Compile-time errors are CompileError, always located in the source.
What an OpenCL device or its driver does wrong is a DeviceError (never a raw
pyopencl exception): NoDeviceError, DeviceBuildError, DeviceOutOfMemory.
"""
from __future__ import annotations


class ShapeError(ValueError):
    """An irregular array, a length mismatch in map/zip, or a bad unflatten."""


#: The run-time errors compiled code raises, written once: the name an
#: ir.Assert / kir.Fail carries -> (its code in the native ABI's ctx, the class
#: every backend raises). Codes are 1..N with no gap (codegen/cpu/c_api.py).
#: MemoryError comes only from a failed allocation and KeyboardInterrupt only
#: from a Ctrl-C during a call (NOT_ASSERTED): neither is a program's error.
RUNTIME_ERRORS: dict = {}
NOT_ASSERTED = frozenset({"MemoryError", "KeyboardInterrupt"})


class CompileError(Exception):
    """A program outside the PyShark subset, located at file:line:col.

    The message shows the source line with a caret under the column and, where
    one exists, a hint saying what to write instead.
    """

    def __init__(self, message: str, filename: str = "<source>", line: int = 0,
                 col: int = 0, source_line: str | None = None, hint: str | None = None):
        self.message = message
        self.filename = filename
        self.line = line          # 1-based
        self.col = col            # 0-based, as libcst reports it
        self.source_line = source_line
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.filename}:{self.line}:{self.col + 1}: error: {self.message}"
        if self.source_line is not None:
            stripped = self.source_line.rstrip("\n")
            text += f"\n    {stripped}\n    {' ' * self.col}^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def __str__(self) -> str:
        return self.render()


class InternalCompilerError(Exception):
    """A bug in PyShark itself (for example an IR that fails the type checker)."""


class DeviceError(RuntimeError):
    """An OpenCL device cannot do what was asked: there is no usable device,
    the driver failed to build a program, the device was lost, or it ran
    out of memory. The message names the device and says what to do;
    `device` is the device's name ("" when there is none) and `log` the
    driver's build log where there is one."""

    def __init__(self, message: str, *, device: str = "", log: str = ""):
        self.device = device
        self.log = log
        text = message
        if log.strip():
            text += "\n--- the driver's build log ---\n" + log.strip()
        super().__init__(text)


class NoDeviceError(DeviceError):
    """No usable OpenCL device here, or none that a device spec names."""


class DeviceBuildError(DeviceError):
    """The OpenCL driver could not build a program (its log is attached)."""


class DeviceOutOfMemory(DeviceError, MemoryError):
    """The OpenCL device has no memory left for an allocation or launch."""


RUNTIME_ERRORS.update({
    "IndexError": (1, IndexError), "ZeroDivisionError": (2, ZeroDivisionError),
    "AssertionError": (3, AssertionError), "ShapeError": (4, ShapeError),
    "ValueError": (5, ValueError), "MemoryError": (6, MemoryError),
    "OverflowError": (7, OverflowError), "KeyboardInterrupt": (8, KeyboardInterrupt),
})
