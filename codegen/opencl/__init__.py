"""The OpenCL backend: kernel IR -> OpenCL C kernels (emit_cl.py) plus
generated Python host code (host.py), run through pyopencl (runtime.py).

backend.py (core IR -> kernel IR -> artifacts) builds on these. Nothing here
imports pyopencl at import time: runtime.py does when a device is first used.
"""
