"""Numba's code generation, set once per process before any CPU kernel is compiled.

Importing this module (the package's ``__init__`` does; kernels compile on their first
call, later) sets one LLVM code-generation option for the process: on x86, LLVM's pass
that turns conditional moves back into branches guesses badly for DP recurrences (the
max() operations become data-dependent branches); local alignment of unrelated
sequences, where H hovers around 0, ran 2.5x slower with it (0.20 against 0.50 GCUPS,
measured on the project's 2-core EPYC). The option changes the machine code only, never a result.
"""

import platform

if platform.machine().lower() in ("x86_64", "amd64"):
    import llvmlite.binding as _llvm

    _llvm.set_option("", "-x86-cmov-converter=false")
