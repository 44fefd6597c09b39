"""Every construct outside the subset gives a located CompileError (with a
hint where one exists), never an internal traceback."""
from __future__ import annotations

import pytest

from translate_helpers import reject


def body(stmt: str, params: str = "x: int, xs: ps.Array[ps.i64]") -> str:
    lines = "\n".join("    " + ln for ln in stmt.strip("\n").splitlines())
    return f"@ps.entry\ndef f({params}) -> int:\n{lines}\n    return x\n"


CASES = {
    "global": (body("global G  # <-"), "'global' is not supported"),
    "try": (body("try:  # <-\n    y = 1\nexcept ValueError:\n    y = 2"), "'try' statements"),
    "with": (body("with open('f') as h:  # <-\n    y = 1"), "'with' statements"),
    "yield": (body("yield x  # <-"), "'yield' is not supported"),
    "lambda_value": (body("g = lambda v: v  # <-"), "functions are not values"),
    "break": (body("for i in range(3):\n    break  # <-"), "'break' is not supported in v1"),
    "continue": (body("for i in range(3):\n    continue  # <-"), "'continue' is not supported"),
    "del": (body("del x  # <-"), "'del' is not supported"),
    "augassign_matmul": (body("x @= 1  # <-"), "the '@=' operator is not supported"),
    "walrus": (body("y = (z := x)  # <-"), "assignment expressions"),
    "star_expr": (body("y = (*xs,)  # <-"), "star-expressions"),
    "fstring": (body("assert x > 0, f'{xs}'  # <-"), "may interpolate scalars only"),
    "assert_msg_expr": (body("assert x > 0, x  # <-"), "string literal or an f-string"),
    "fstring_value": (body("y = f'{x}'  # <-"), "f-strings are not supported"),
    "dict": (body("y = {1: 2}  # <-"), "dict literals"),
    "set": (body("y = {1, 2}  # <-"), "set literals"),
    "is": (body("y = x is x  # <-"), "'is' operator"),
    "in": (body("y = x in xs  # <-"), "'in' operator"),
    "raise": (body("raise ValueError('no')  # <-"), "'raise' is not supported"),
    "import_in_function": (body("import math  # <-"), "imports inside functions"),
    "print": (body("print(x)  # <-"), "I/O is not supported"),
    "numpy": ("import numpy as np\n" + body("y = np.sqrt(x)  # <-"), "non-prelude module 'numpy'"),
    "math_attr": ("import math\n" + body("y = math.pi  # <-"), "non-prelude module 'math'"),
    "while_else": (body("while x > 0:\n    x = x - 1\nelse:  # <-\n    x = 1"), "'while ... else'"),
    "method_call": (body("y = xs.sum()  # <-"), "methods are not supported"),
    "prelude_keyword": (body("y = ps.sum(xs=xs)  # <-"), "keyword argument"),
    "undefined": (body("y = nope + 1  # <-"), "name 'nope' is not defined"),
    "range_value": (body("y = range(3)  # <-"), "ps.iota"),
    "unbound_local_def_value": (body("def g(v: int) -> int:\n    return v\ny = g  # <-"),
                                "functions are not values"),
    "recursive_local": (body("def g(v: int) -> int:\n    return g(v)  # <-\ny = g(x)"),
                        "recursive local function"),
    "int_truthiness": (body("if x:  # <-\n    x = 1"), "must be a bool"),
    "return_none": (body("if x > 0:\n    return  # <-"), "must return a value"),
    "attribute_assign": (body("xs.shape = 1  # <-"), "immutable"),
    "unpack_array": (body("a, b = xs  # <-"), "cannot unpack an array"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unsupported_construct(name):
    src, fragment = CASES[name]
    err = reject(src, contains=fragment)
    assert err.filename == "snippet.py"


def test_keyword_only_params_rejected_at_param():
    reject("""
        @ps.entry
        def f(a: int, *, b: int) -> int:  # <-
            return a
        """, contains="keyword-only parameters")


def test_kwargs_and_defaults_rejected():
    reject("""
        def g(a: int, **kw: int) -> int:  # <-
            return a
        """, contains="'**kw' parameters")
    reject("""
        def g(a: int = 1) -> int:  # <-
            return a
        """, contains="default parameter values")


def test_missing_return_annotation():
    reject("""
        def g(a: int):  # <-
            return a
        """, contains="no return type annotation")


def test_unsupported_decorator():
    reject("""
        import functools
        @functools.cache  # <-
        def g(a: int) -> int:
            return a
        """, contains="unsupported decorator")


def test_plain_class_rejected():
    reject("""
        class C:  # <-
            x: int
        """, contains="only NamedTuple records")


def test_module_level_lambda_and_code():
    reject("""
        sq = lambda v: v * v  # <-
        """, contains="functions are not values")
    reject("""
        print("hi")  # <-
        """, contains="module-level code")


def test_entry_decorator_spellings():
    from translate_helpers import HEADER
    from pyshark.translate import translate_source
    src = HEADER + "from pyshark.prelude import entry\nimport pyshark.prelude as p\n" \
        "@entry\ndef a(x: int) -> int:\n    return x\n" \
        "@p.entry\ndef b(x: int) -> int:\n    return x\n" \
        "def c(x: int) -> int:\n    return x\n" \
        "__pyshark_cases__ = [{'entry': 'a', 'args': [1], 'expected': 1}]\n"
    prog = translate_source(src, "snippet.py")
    assert set(prog.entries) == {"a", "b"} and set(prog.functions) == {"a", "b", "c"}


def test_top_level_recursion_rejected_at_the_call():
    reject("""
        def fact(n: int) -> int:
            return n * fact(n - 1) if n > 1 else 1  # <-
        @ps.entry
        def f(n: int) -> int:
            return fact(n)
        """, contains="recursive call of 'fact'")


def test_mutual_recursion_rejected():
    err = reject("""
        def even(n: int) -> bool:
            return odd(n - 1) if n > 0 else True
        def odd(n: int) -> bool:
            return even(n - 1) if n > 0 else False  # <-
        @ps.entry
        def f(n: int) -> bool:
            return even(n)
        """, contains="recursive call of 'even'")
    assert "loop" in err.hint


def test_entry_decorator_with_parentheses_rejected():
    reject("""
        @ps.entry()  # <-
        def f(n: int) -> int:
            return n
        """, contains="@ps.entry takes no arguments")


@pytest.mark.parametrize("name", sorted(__import__("pyshark.core.ir", fromlist=["x"]).C_API_NAMES)
                         + ["ocl_source", "ocl_call"])
def test_an_entry_may_not_take_a_c_api_name(name):
    from pyshark.core.ir import is_c_api_name
    # every compiled library exports pyshark_<entry> beside pyshark_ctx_new,
    # pyshark_ctx_free, pyshark_error_message and pyshark_stop_calls: an
    # entry of one of those names clashed in LLVM (ctx_new) or, worse,
    # replaced the tier swap's stop function (stop_calls); the opencl
    # library's are all pyshark_ocl_*
    err = reject(f"""
        @ps.entry
        def {name}(n: int) -> int:  # <-
            return n
        """, contains=f"an entry may not be called '{name}'")
    # the name the hint suggests is itself allowed
    suggested = err.hint.split("'")[1]
    assert name in suggested and not is_c_api_name(suggested)


def test_a_helper_may_take_a_c_api_name():
    from translate_helpers import run
    assert run("""
        def ctx_new(n: int) -> int:
            return n + 1

        @ps.entry
        def f(n: int) -> int:
            return ctx_new(n)
        """, "f", 41) == 42


@pytest.mark.parametrize("call,spelling", [
    ("np.sum(xs)", "use ps.sum"), ("np.empty(3)", "ps.replicate(n, ps.f32(0))"),
    ("np.float32(0)", "ps.f32(x)"), ("np.cumsum(xs)", "ps.scan(lambda a, b: a + b, 0, xs)"),
    ("np.max(xs)", "ps.maximum(xs)")])
def test_a_numpy_call_names_the_prelude_spelling(call, spelling):
    reject(f"""
        import numpy as np

        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.f32:
            y = {call}  # <-
            return ps.f32(0)
        """, contains=spelling)


def test_a_module_level_numpy_array_says_how_to_pass_it_in():
    err = reject("""
        import numpy as np
        WEIGHTS = np.ones(3)  # <-

        @ps.entry
        def f(xs: ps.Array[ps.f64]) -> ps.f64:
            return ps.sum(xs)
        """, contains="module-level arrays are not allowed")
    assert "make WEIGHTS a parameter of the entries that use it" in str(err)
