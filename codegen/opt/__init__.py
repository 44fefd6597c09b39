"""The middle end: core IR -> core IR passes, one file per pass.

Each pass is a pure function Program -> Program (the input is never mutated;
IR nodes are frozen dataclasses): inline, simplify, cse, fuse. Shared helpers
live in rewrite.py (generic traversal and renaming) and analysis.py (known
lengths, may-raise, aliasing). codegen/pipeline.py runs them in order.
"""
