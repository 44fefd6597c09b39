"""The `pyshark` command: test, show, build, bench.

    pyshark test PATH [--backend B ...]     run embedded/JSON test cases
    pyshark show module.py --ir STAGE       print a module after any named stage of a
                                            backend's pipeline (codegen/stages.py), or
                                            as core IR, kernels, llvm, opencl
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


# `pyshark show --ir` names a stage of a backend's pipeline (codegen/stages.py)
# or one of these: the input, the emitters' outputs, and the older names.
_SHOW_VIEWS = {
    "core": "the translated program (before any stage)",
    "fused": "after the last core IR pass",
    "kernels": "the kernel IR the emitter spells (after the last stage)",
    "llvm-raw": "LLVM IR as emitted (cpu)",
    "llvm": "optimised LLVM IR (cpu)",
    "opencl": "the OpenCL C kernels and the generated host code (opencl)",
}


def _show_pipelines(unsafe: bool = False, opencl_target=None) -> dict:
    """backend -> its stage list (the opencl one for `opencl_target`, or a
    generic GPU target)."""
    from pyshark.codegen.stages import pipeline_for
    from pyshark.codegen.target import gpu_target
    gpu = opencl_target if opencl_target is not None else gpu_target(256, 32768, False)
    try:
        from pyshark.codegen.cpu.link import host_target
        cpu = host_target()            # the cpu backend's own (tuned for this host)
    except ImportError:                # no llvmlite: the generic multicore target
        cpu = None
    return {"cpu": pipeline_for(cpu, unsafe=unsafe),
            "kir": pipeline_for(None, unsafe=unsafe, par_min=4),
            "opencl": pipeline_for(gpu, unsafe=unsafe)}


def _stage_list() -> str:
    """Every stage of each backend's pipeline, in order."""
    pipelines = _show_pipelines()
    cpu = ", ".join(n for n, _ in pipelines["cpu"])
    gpu = ", ".join(n for n, _ in pipelines["opencl"])
    return f"for cpu and kir {cpu}; for opencl {gpu}"


def _stage_help() -> str:
    """The --ir help: every view, and every stage of each backend's pipeline."""
    views = "; ".join(f"{k}: {v}" for k, v in _SHOW_VIEWS.items())
    return f"{views}; or the output of a stage, in pipeline order: {_stage_list()} (default: core)"


def _show_backend(args) -> str:
    """The backend whose pipeline `show` runs: --backend, else opencl for
    --ir opencl or a stage only its pipeline has, else cpu."""
    if args.backend:
        return args.backend
    cpu = [n for n, _ in _show_pipelines()["cpu"]]
    return "cpu" if args.ir in cpu or (args.ir in _SHOW_VIEWS and args.ir != "opencl") \
        else "opencl"


def _views_for(backend: str) -> list[str]:
    emitted = {"opencl": ("opencl",), "cpu": ("llvm-raw", "llvm")}.get(backend, ())
    return [v for v in _SHOW_VIEWS if v not in ("llvm-raw", "llvm", "opencl") or v in emitted]


def cmd_show(args) -> int:
    from pyshark.translate import translate_file
    from pyshark.core.pretty import pretty_program
    path = Path(args.module)
    if not path.is_file():
        print(f"pyshark show: no such module: {path}", file=sys.stderr)
        return 2
    known = set(_SHOW_VIEWS) | {n for st in _show_pipelines().values() for n, _ in st}
    if args.ir not in known:
        print(f"pyshark show: no stage {args.ir!r}; the stages are: {_stage_list()}; or: "
              f"{', '.join(_SHOW_VIEWS)}", file=sys.stderr)
        return 2
    backend = _show_backend(args)
    target, where = None, None
    if backend == "opencl":
        found = _opencl_target(args.device)
        if found is None:
            return 2
        target, where = found
    stages = _show_pipelines(args.unsafe, target)[backend]
    names = [n for n, _ in stages]
    if args.ir not in names and args.ir not in _views_for(backend):
        print(f"pyshark show: no stage {args.ir!r} for backend {backend}; the stages are: "
              f"{', '.join(names)}; or: {', '.join(_views_for(backend))}", file=sys.stderr)
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
    from pyshark.codegen.kir import check_module, pretty_module
    from pyshark.codegen.stages import run_stages
    check_program(program)
    until = names[names.index("lower") - 1] if args.ir == "fused" else \
        args.ir if args.ir in names else None
    out = run_stages(program, stages, until=until)
    if until is not None and until != names[-1]:
        print(pretty_program(out) if until in names[:names.index("lower")]
              else pretty_module(out))
        return 0
    check_module(out)                   # the emitter's input, as the backends check it
    if args.ir == "opencl":
        return _show_opencl(out, where)
    if args.ir in ("llvm", "llvm-raw"):
        from pyshark.codegen.cpu.emit import emit_module
        text = emit_module(out, fastmath=args.fastmath)
        if args.ir == "llvm":
            from pyshark.codegen.cpu.link import optimised_ir
            text = optimised_ir(text)
        print(text)
        return 0
    print(pretty_module(out))
    return 0


def _opencl_target(spec):
    """(target, where) of the device the opencl backend would run on (its
    work-group and local memory limits), or a generic GPU target when there
    is no device; None (after saying why) when `spec` names no device."""
    from pyshark.codegen.target import gpu_target
    try:
        from pyshark.codegen.opencl import runtime
        dev = runtime.device(spec)
        return dev.target(), dev.name
    except Exception as exc:            # no pyopencl, no device, no match
        if spec:
            print(f"pyshark show: {exc}", file=sys.stderr)
            return None
        return gpu_target(256, 32768, False), "no OpenCL device: a generic GPU target"


def _show_opencl(kernels, where: str) -> int:
    """The OpenCL C program and the host module the opencl backend builds
    from the last stage's kernel IR."""
    from pyshark.codegen.opencl.backend import spell_kernels
    hp, meta, _ = spell_kernels(kernels)
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
    s.add_argument("--ir", metavar="STAGE", default="core", help=_stage_help())
    s.add_argument("--backend", choices=["cpu", "opencl", "kir"],
                   help="whose pipeline (default: cpu, or opencl for a stage only it has)")
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
