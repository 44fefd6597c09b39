"""Code generation: core IR -> kernel IR -> CPU (LLVM) and OpenCL backends.

The wrapper's registry (wrapper/registry.py) offers the "cpu" backend
(codegen/cpu: LLVM IR through llvmlite, linked into a shared library) and
the "opencl" backend (codegen/opencl: OpenCL C run through pyopencl) where a
usable device exists; docs/cpu-backend.md and docs/opencl-backend.md say how
each works.
"""
