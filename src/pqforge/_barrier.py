"""The optimisation barrier that every mask made from secret bits passes through.

An optimising compiler that can prove a value is 0 or all-ones may turn ``mask & x`` back into a
choice, emit it as a branch on the secret bit, or unswitch a loop on it (timing campaigns caught
both: an earlier GF(16) product and McEliece's Berlekamp-Massey). ``opaque(x)`` returns x
through an empty inline-assembly statement whose result the optimiser must treat as unknown;
it costs no instruction. The identity outside compiled code.
"""

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload


def emit_opaque(builder, value):
    """LLVM IR: the i64 ``value`` through the empty inline-assembly statement (for intrinsics that
    build masks from secret bits themselves)."""
    fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64)])
    return builder.asm(fnty, "", "=r,0", [value], side_effect=False)


@intrinsic
def _asm_identity(typingctx, x):
    if not (isinstance(x, types.Integer) and x.bitwidth == 64):
        return None

    def codegen(context, builder, signature, args):
        return emit_opaque(builder, args[0])
    return x(x), codegen


def opaque(x):
    """``x`` (a 64-bit integer) unchanged; compiled, a value the optimiser knows nothing about."""
    return x


@overload(opaque, inline="always")
def _opaque_compiled(x):
    def impl(x):
        return _asm_identity(x)
    return impl
