"""tests/codegen: this folder's conftest puts it on sys.path (pytest's
prepend import mode), so the emitter suites of every backend share
prim_reference.py."""
