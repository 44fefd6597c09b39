"""Code generation: core IR -> kernel IR -> CPU (LLVM) and OpenCL backends.

Not built yet: the "cpu" and "opencl" backends join the wrapper's registry
when they land.
"""
