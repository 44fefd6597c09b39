"""Native host code for the opencl backend: emit_host.py (the host kir as LLVM
over rt.c, the OpenCL runtime), build.py (the link), capi.py (module.h),
module.py (loading and calling through ctypes). docs/opencl-backend.md,
"Native host code"."""
