"""Surface Python subset -> typed core IR, with located CompileErrors.

Public API:
    translate_file(path) -> pyshark.core.ir.Program
    translate_source(source, filename="<source>") -> Program
"""
from .module import translate_file, translate_source

__all__ = ["translate_file", "translate_source"]
