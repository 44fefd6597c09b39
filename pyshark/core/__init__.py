"""The core language: typed SOAC IR (ir.py, types.py), its type checker
(check.py), pretty-printer (pretty.py) and reference interpreter (interp.py)."""
