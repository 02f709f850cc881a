"""A jit function in a module that sees only triton.language.core (test_interpreter_speedup)."""
import triton
import triton.language.core as core  # noqa: F401  (the interpreter patches the language modules a function sees)


@triton.jit
def plus_one(x):
    return x + 1
