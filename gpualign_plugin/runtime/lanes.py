"""Integer operations kept in the lane width, for Numba loops that LLVM turns into vector code.

Numba widens ``int16`` and ``int32`` arithmetic to ``int64`` (like NumPy's scalar
rules), which quarters or halves the lanes per vector instruction. The intrinsics
here compute in the operands' own width, so a loop over a fixed number of lanes
of ``int16`` values becomes ``vpaddsw``/``vpmaxsw`` on 32 lanes per AVX-512
register. Used by the SIMD kernels of the database search
(:mod:`gpualign_plugin.search.cpu`) and the striped pairwise score
(:mod:`gpualign_plugin.striped`).
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def add(typingctx, a, b):
    """``a + b`` in the operands' own width: saturating for int16, wrapping for int32 and int64.

    (Numba would widen int16/int32 arithmetic to int64, halving or quartering the
    lanes per vector.)
    """
    if not (isinstance(a, types.Integer) and a == b and a.bitwidth in (16, 32, 64)):
        return None

    def codegen(context, builder, signature, args):
        if signature.return_type.bitwidth == 16:
            kind = args[0].type
            saturating = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(kind, [kind, kind]), "llvm.sadd.sat.i16")
            return builder.call(saturating, args)
        return builder.add(args[0], args[1])

    return a(a, b), codegen


@intrinsic
def maximum(typingctx, a, b):
    """``max(a, b)`` of two integers of the same width, kept in that width."""
    if not (isinstance(a, types.Integer) and a == b):
        return None

    def codegen(context, builder, signature, args):
        return builder.select(builder.icmp_signed(">", args[0], args[1]), args[0], args[1])

    return a(a, b), codegen


@intrinsic
def minimum(typingctx, a, b):
    """``min(a, b)`` of two integers of the same width, kept in that width."""
    if not (isinstance(a, types.Integer) and a == b):
        return None

    def codegen(context, builder, signature, args):
        return builder.select(builder.icmp_signed("<", args[0], args[1]), args[0], args[1])

    return a(a, b), codegen
