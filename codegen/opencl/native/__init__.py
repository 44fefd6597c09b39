"""Native host code for the opencl backend: emit_host.py (the host kir as LLVM
over the OpenCL runtime: rt.h with rt_mem.c, rt_launch.c, rt_api.c),
build.py (the link), capi.py (module.h), module.py (loading and calling
through ctypes). docs/opencl-backend.md, "Native host code"."""
