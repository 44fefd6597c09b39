"""The `pyshark` command: test, show, build, bench.

    pyshark test PATH [--backend B ...]     run embedded/JSON test cases
    pyshark show module.py --ir core        print the core IR of a module (or kernels,
                                            llvm, opencl: the OpenCL C and host code)
    pyshark devices                         list the OpenCL platforms and devices
                                            (each usable, or why not)
    pyshark setup-opencl                    install an OpenCL CPU runtime that builds here
    pyshark build module.py [--backend B] [-o OUT]
    pyshark bench [OPTIONS]                 the benchmark suite (benchmarks/, a source checkout)

Exit status: 0 success, 1 failing tests or a compile error, 2 usage errors
(including a backend that is not built yet).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import CompileError


def _registry():
    from pyshark.wrapper import registry
    return registry


def _check_backends(names: list[str]) -> str | None:
    """None if every backend can be used, else the message to print."""
    reg = _registry()
    for name in names:
        try:
            reg.get_backend(name)
        except ValueError as exc:
            return str(exc)
    return None


def _skipped_backends() -> list[tuple[str, str]]:
    """(name, why) of the user-facing backends that cannot run here."""
    reg = _registry()
    here = set(reg.available_backends())
    return [(name, reg.unavailable_reason(name) or "cannot run on this machine")
            for name in reg.known_backends() if name not in here]


def cmd_test(args) -> int:
    from . import testing
    backends = args.backend or _registry().available_backends()
    problem = _check_backends(backends)
    if problem:
        print(f"pyshark test: {problem}", file=sys.stderr)
        return 2
    if not args.backend:
        for name, why in _skipped_backends():
            print(f"SKIP backend {name}: {why}")
    try:
        modules = testing.find_modules(args.path)
    except FileNotFoundError as exc:
        print(f"pyshark test: {exc}", file=sys.stderr)
        return 2
    passed = failed = skipped = 0
    for module in modules:
        try:
            results = testing.run_module(module, backends)
        except (ValueError, SyntaxError) as exc:     # a malformed case table
            print(f"FAIL {module}: {exc}")
            failed += 1
            continue
        if not results:
            skipped += 1
            if args.verbose:
                print(f"SKIP {module}: no test cases")
            continue
        for r in results:
            if r.passed:
                passed += 1
            else:
                failed += 1
                print(r.line())
        if args.verbose:
            ok = sum(r.passed for r in results)
            print(f"{module}: {ok}/{len(results)} passed on {', '.join(backends)}")
    summary = f"{passed} passed, {failed} failed"
    if skipped:
        summary += f", {skipped} skipped"
    print(summary)
    return 1 if failed else 0


def cmd_show(args) -> int:
    from pyshark.translate import translate_file
    from pyshark.core.pretty import pretty_program
    path = Path(args.module)
    if not path.is_file():
        print(f"pyshark show: no such module: {path}", file=sys.stderr)
        return 2
    try:
        program = translate_file(str(path))
    except CompileError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.ir == "core":
        print(pretty_program(program))
        return 0
    from pyshark.core.check import check_program
    check_program(program)
    if args.ir == "fused":
        try:
            from pyshark.codegen.pipeline import optimise
        except ImportError:
            print("pyshark show: the middle end (codegen/pipeline.py) is not built yet",
                  file=sys.stderr)
            return 2
        print(pretty_program(optimise(program)))
        return 0
    from pyshark.codegen.cpu.backend import build_kernels
    from pyshark.wrapper.backend import Options
    options = Options(unsafe=args.unsafe, fastmath=args.fastmath)
    if args.ir == "opencl":
        return _show_opencl(program, options, args.device)
    kernels = build_kernels(program, options)
    if args.ir == "kernels":
        from pyshark.codegen.kir import pretty_module
        print(pretty_module(kernels))
        return 0
    from pyshark.codegen.cpu.emit_llvm import emit_module
    text = emit_module(kernels, fastmath=args.fastmath)
    if args.ir == "llvm":
        from pyshark.codegen.cpu.link import optimised_ir
        text = optimised_ir(text)
    print(text)
    return 0


def _show_opencl(program, options, spec) -> int:
    """The OpenCL C program and the host module the opencl backend builds:
    for the device it would run on (its work-group and local memory
    limits), or a generic GPU target when there is no device."""
    from pyshark.codegen.opencl.backend import kernels_for
    from pyshark.codegen.target import gpu_target
    try:
        from pyshark.codegen.opencl import runtime
        dev = runtime.device(spec)
        target, where = dev.target(), dev.name
    except Exception as exc:            # no pyopencl, no device, no match
        if spec:
            print(f"pyshark show: {exc}", file=sys.stderr)
            return 2
        target, where = gpu_target(256, 32768, False), "no OpenCL device: a generic GPU target"
    hp, meta, _ = kernels_for(program, options, target)
    print(f"// OpenCL C for {where} ({len(meta)} kernels)")
    print(hp.cl_source)
    print(f"# host code (Python){'; ParFors run on the host: ' + str(hp.host_parfors) if hp.host_parfors else ''}")
    print(hp.py_source)
    return 0


def cmd_devices(args) -> int:
    """Lists the OpenCL platforms and devices, each "usable" or why not
    (codegen/opencl/probe.py), and the one PyShark uses by default. Without
    pyopencl or any device it says so (exit 0)."""
    try:
        from pyshark.codegen.opencl import devices, icd
        import pyopencl as cl
        plats = devices.platforms()
        ok = devices.verdicts(plats)
    except Exception as exc:            # no pyopencl, no ICD loader, a failing driver
        print(f"no OpenCL devices ({type(exc).__name__}: {exc})")
        return 0
    if not any(devs for _, devs in plats):
        print("no OpenCL devices" + (f" ({len(plats)} platforms without devices)" if plats else "")
              + f"; the OpenCL loader read {icd.describe()}")
        print(f"to get one: {devices.WHAT_TO_DO}")
        return 0
    chosen = None
    try:
        from pyshark.codegen.opencl import runtime
        dev = runtime.device().dev
        chosen = next(((pi, di) for pi, (_, devs) in enumerate(plats)
                       for di, d in enumerate(devs) if d.int_ptr == dev.int_ptr), None)
    except Exception as exc:
        print(f"(no default device: {exc})")
    print(f"{'':2}{'P:D':5} {'type':5} {'CUs':>4} {'memory':>10} {'fp64':4}  name: status")
    for pi, (p, devs) in enumerate(plats):
        print(f"platform {pi}: {p.name} ({p.version.strip()})")
        for di, d in enumerate(devs):
            kind = ("GPU" if d.type & cl.device_type.GPU else
                    "CPU" if d.type & cl.device_type.CPU else
                    "ACC" if d.type & cl.device_type.ACCELERATOR else "other")
            fp64 = "yes" if (d.double_fp_config or "cl_khr_fp64" in d.extensions) else "no"
            mark = "* " if chosen == (pi, di) else "  "
            mem = f"{d.global_mem_size / 2**30:.1f} GiB"
            v = ok[(pi, di)]
            status = "usable" if v.usable else f"not usable: {v.reason}"
            print(f"{mark}{f'{pi}:{di}':5} {kind:5} {d.max_compute_units:>4} {mem:>10} "
                  f"{fp64:4}  {d.name.strip()}: {status}")
    how = "PYOPENCL_CTX" if __import__("os").environ.get("PYOPENCL_CTX") else \
        "the first usable GPU, else the first usable device"
    print(f"* the default device ({how}); choose another with "
          f"Wrapper(backend='opencl', device='P:D' or a name substring) or PYOPENCL_CTX")
    if not any(v.usable for v in ok.values()):
        print(f"no device is usable: {devices.WHAT_TO_DO}")
    return 0


def cmd_build(args) -> int:
    from pyshark.wrapper import build
    reg = _registry()
    backend = args.backend or reg.available_backends()[0]
    problem = _check_backends([backend])
    if problem:
        print(f"pyshark build: {problem}", file=sys.stderr)
        return 2
    source = Path(args.module)
    if not source.is_file():
        print(f"pyshark build: no such module: {source}", file=sys.stderr)
        return 2
    out = Path(args.output) if args.output else Path("build") / f"{source.stem}-{backend}"
    try:
        manifest = build(source, out, backend, unsafe=args.unsafe, fastmath=args.fastmath)
    except CompileError as exc:
        print(exc, file=sys.stderr)
        return 1
    except FileExistsError as exc:
        print(f"pyshark build: {exc}", file=sys.stderr)
        return 2
    print(f"built {source} for backend {backend!r} into {out}/ "
          f"(entries: {', '.join(manifest['entries']) or 'none'})")
    return 0


def cmd_bench(argv: list[str]) -> int:
    """Hands every argument to the benchmark runner: benchmarks/ of a source
    checkout, else the copy installed with the package (pyshark.benchmarks)."""
    root = Path(__file__).resolve().parent.parent
    if (root / "benchmarks" / "runner.py").is_file() and (root / "pyproject.toml").is_file():
        sys.path.insert(0, str(root))
        from benchmarks.runner import main as bench_main
    else:
        try:
            from pyshark.benchmarks.runner import main as bench_main
        except ImportError as exc:
            print(f"pyshark bench: the benchmark suite is not installed here ({exc}); "
                  f"pip install 'pyshark[bench]'", file=sys.stderr)
            return 2
    return bench_main(argv)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyshark", description="PyShark: data-parallel kernels "
                                "in plain Python.")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("test", help="run a module's test cases on every available backend "
                       "and compare them with Python mode")
    t.add_argument("path", help="a PyShark module or a folder of modules")
    t.add_argument("--backend", action="append", metavar="B",
                   help="backend to test (repeatable; default: every available one)")
    t.add_argument("-v", "--verbose", action="store_true", help="one line per module too")
    t.set_defaults(func=cmd_test)

    s = sub.add_parser("show", help="print the intermediate representation of a module")
    s.add_argument("module")
    s.add_argument("--ir", choices=["core", "fused", "kernels", "llvm", "llvm-raw", "opencl"],
                   default="core", help="which stage: core (translated), fused (after the "
                   "middle end), kernels (kernel IR), llvm (optimised LLVM IR), llvm-raw "
                   "(LLVM IR as emitted), opencl (the OpenCL C kernels and the generated "
                   "host code); default: core")
    s.add_argument("--device", metavar="SPEC", help="--ir opencl: for this OpenCL device "
                   "(as Wrapper(device=...); default: the default device)")
    s.add_argument("--unsafe", action="store_true", help="as compiled with unsafe=True")
    s.add_argument("--fastmath", action="store_true", help="as compiled with fastmath=True")
    s.set_defaults(func=cmd_show)

    b = sub.add_parser("build", help="compile a module into a loadable directory "
                       "(manifest.json + artifact), for Wrapper.load(OUT)")
    b.add_argument("module")
    b.add_argument("--backend", metavar="B", help="cpu | opencl | core | python "
                   "(default: the fastest available)")
    b.add_argument("-o", "--output", metavar="OUT",
                   help="output directory (default: build/MODULE-BACKEND)")
    b.add_argument("--unsafe", action="store_true", help="drop bounds checks")
    b.add_argument("--fastmath", action="store_true", help="allow FMA contraction and "
                   "reassociation")
    b.set_defaults(func=cmd_build)

    d = sub.add_parser("devices", help="list the OpenCL platforms and devices (and which "
                       "one the opencl backend uses by default)")
    d.set_defaults(func=cmd_devices)

    # listed for --help only: main() hands these to their own parsers
    sub.add_parser("setup-opencl", add_help=False, help="install an OpenCL CPU runtime that "
                   "builds on this machine (pyshark setup-opencl --help)")
    sub.add_parser("bench", add_help=False, help="run the benchmark suite (pyshark bench --help)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return cmd_bench(argv[1:])
    if argv[:1] == ["setup-opencl"]:
        from .setup_opencl import main as setup_main
        return setup_main(argv[1:])
    args = make_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
