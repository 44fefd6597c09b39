"""Backend "python": the module's own functions run as Python with the prelude.

This is the reference the golden rule compares against. Compiling still
translates the module (so an invalid program fails the same way on every
backend) and records the entries' surface types; loading imports the
module from its file under a unique name. Arguments become prelude values
(numpy scalars and arrays of the declared dtype, TupleArray for arrays of
tuples/records, the module's own record classes); results (Python lists,
Python numbers, TupleArrays) are normalised to the common output format.

The artifact also keeps the translated core IR (pickled, as the core backend
does): while an entry runs, its *site table* (`site_table`: the result types
of the Lets at each source position) is active for the module's file, so an
empty result in Python mode gets the type the compiled program gives it
rather than a guess (pyshark/prelude/static.py).
"""
from __future__ import annotations

import hashlib
import importlib.util
import pickle
import sys
from pathlib import Path

from pyshark.core.types import SRecord, SScalar, STuple, stype_base, stype_rank

from . import convert
from .artifacts import source_hash
from .backend import Backend, LoadedModule, entries_from_manifest, translate_and_check

MODULE_FILE = "module.py"
PROGRAM_FILE = "program.pickle"


def site_table(program) -> dict:
    """{(line, col): [(Exp class name, ((dtype str, rank), ...)), ...]} for every
    Let of the program (nested bodies too), in emission order: the types the
    compiled program gives what is computed at each source position; a Map
    adds ("Map.params", its function's parameter types)."""
    from pyshark.core import ir
    from pyshark.core.traverse import iter_stms
    from pyshark.core.types import ScalarType
    table: dict = {}
    for fun in program.functions.values():
        for stm in iter_stms(fun.body):
            if stm.loc is None or not stm.pat:
                continue
            types = tuple((t.dtype.str, 0) if isinstance(t, ScalarType) else (t.elem.dtype.str, t.rank)
                          for t in (v.type for v in stm.pat))
            table.setdefault((stm.loc.line, stm.loc.col), []).append((type(stm.exp).__name__, types))
            if isinstance(stm.exp, ir.Map) and stm.exp.lam.params:
                # the element types of a map's inputs: Python mode's stand-in
                # for an empty list input (prelude map)
                params = tuple((t.dtype.str, 0) if isinstance(t, ScalarType)
                               else (t.elem.dtype.str, t.rank)
                               for t in (p.type for p in stm.exp.lam.params))
                table[(stm.loc.line, stm.loc.col)].append(("Map.params", params))
    return table


def import_module_file(path: Path, text_hash: str):
    """Imports a module file under a unique name (several versions may coexist)."""
    path = Path(path).resolve()
    tag = hashlib.sha256(f"{path}:{text_hash}".encode()).hexdigest()[:12]
    name = f"_pyshark_py_{path.stem}_{tag}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Python mode: a @pyshark.jit decorator in this module is a plain @ps.entry
    module.__pyshark_python_mode__ = True
    sys.modules[name] = module      # NamedTuple classes look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


class PythonModule(LoadedModule):
    def __init__(self, module, entries, source, program_file: Path | None = None):
        super().__init__(entries, source)
        self.module = module
        self._records: dict = {}
        self._program_file = program_file
        self._sites = None

    def site_table(self) -> dict | None:
        """The module's site table, read from the artifact on first use."""
        if self._sites is None and self._program_file is not None:
            try:
                program = pickle.loads(Path(self._program_file).read_bytes())
                self._sites = site_table(program)
            except (OSError, pickle.UnpicklingError, AttributeError, EOFError):
                self._program_file = None     # no static types: Python mode guesses
        return self._sites

    def record_class(self, rec: SRecord) -> type:
        """The module's own NamedTuple class for `rec`, else a generated one."""
        cls = self._records.get(rec)
        if cls is None:
            cls = getattr(self.module, rec.name, None)
            if not (isinstance(cls, type) and tuple(getattr(cls, "_fields", ())) == rec.field_names):
                cls = convert.record_class(rec)
            self._records[rec] = cls
        return cls

    def to_prelude(self, st, canon):
        """Canonical value -> the value Python-mode code expects."""
        if isinstance(st, SScalar):
            return canon
        if isinstance(st, STuple):
            return tuple(self.to_prelude(e, c) for e, c in zip(st.elems, canon))
        if isinstance(st, SRecord):
            return self.record_class(st)(*(self.to_prelude(t, c)
                                           for t, c in zip(st.field_types, canon)))
        base = stype_base(st)
        if isinstance(base, SScalar):
            return canon
        from pyshark.prelude.tuple_array import TupleArray
        k = stype_rank(st)
        make = self.record_class(base) if isinstance(base, SRecord) else tuple
        fields = [self.to_prelude(convert.lift(ft, k), c)
                  for (_, ft), c in zip(convert.fields_of(base), canon)]
        return TupleArray(fields, make, k)

    def call(self, name: str, canon_args: list):
        from pyshark.prelude import python_semantics
        from pyshark.prelude.static import active
        entry = self.entries[name]
        fn = getattr(self.module, name)
        args = [self.to_prelude(p.stype, a) for p, a in zip(entry.params, canon_args)]
        with python_semantics(), active(self.module.__file__, self.site_table):
            result = fn(*args)
        return convert.output_from_value(entry.ret, result,
                                         convert.Where("result of entry", name),
                                         record_class_for=self.record_class)


class PythonBackend(Backend):
    name = "python"
    description = "Python mode: the module run as Python with the numpy prelude (the reference)"

    def compile(self, path: Path, source_text: str, directory: Path):
        program = translate_and_check(path, check=False, text=source_text)
        # A copy of the source makes a `pyshark build` output self-contained
        # (and is what runs for a source added as text, e.g. by @pyshark.jit).
        (Path(directory) / MODULE_FILE).write_text(source_text, encoding="utf-8")
        (Path(directory) / PROGRAM_FILE).write_bytes(
            pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL))
        return program, {"module": MODULE_FILE, "program": PROGRAM_FILE}

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        h = manifest["source_hash"]
        # Import the user's own file when it is unchanged (tracebacks point there).
        if (source_path is None or not Path(source_path).is_file()
                or source_hash(Path(source_path).read_text()) != h):
            source_path = Path(directory) / manifest["files"]["module"]
        module = import_module_file(source_path, h)
        program = manifest["files"].get("program")
        return PythonModule(module, entries_from_manifest(manifest), manifest["source"],
                            Path(directory) / program if program else None)

