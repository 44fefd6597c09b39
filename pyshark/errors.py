"""The exceptions PyShark raises to users.

Run-time errors are the builtin Python classes (IndexError, ZeroDivisionError,
AssertionError) plus ShapeError, so that every backend raises what Python mode
raises. Compile-time errors are CompileError, always located in the source.
"""
from __future__ import annotations


class ShapeError(ValueError):
    """An irregular array, a length mismatch in map/zip, or a bad unflatten."""


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
