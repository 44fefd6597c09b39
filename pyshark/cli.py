"""The `pyshark` command: test, show, build, bench.

    pyshark test PATH [--backend B ...]     run embedded/JSON test cases
    pyshark show module.py --ir core        print the core IR of a module
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


def cmd_test(args) -> int:
    from . import testing
    backends = args.backend or _registry().available_backends()
    problem = _check_backends(backends)
    if problem:
        print(f"pyshark test: {problem}", file=sys.stderr)
        return 2
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
    kernels = build_kernels(program, Options(unsafe=args.unsafe, fastmath=args.fastmath))
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
    """Hands every argument to benchmarks.runner (it lives beside the package, not in it)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "runner.py").is_file():
        print("pyshark bench: the benchmarks/ folder of a source checkout is needed "
              "(pip install -e '.[bench]' from the repository)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(root))
    from benchmarks.runner import main as bench_main
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
    s.add_argument("--ir", choices=["core", "fused", "kernels", "llvm", "llvm-raw"],
                   default="core", help="which stage: core (translated), fused (after the "
                   "middle end), kernels (kernel IR), llvm (optimised LLVM IR), llvm-raw "
                   "(LLVM IR as emitted); default: core")
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

    # listed for --help only: main() hands `bench ...` to the benchmark runner
    sub.add_parser("bench", add_help=False, help="run the benchmark suite (pyshark bench --help)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return cmd_bench(argv[1:])
    args = make_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
