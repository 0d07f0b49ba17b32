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


# -- declassification: a value that is public by design ------------------------------------------

_MEMCHECK_MAKE_MEM_DEFINED = 0x4D430002
"""valgrind's client request code (memcheck tool base 'M', 'C', third request)."""

_CLIENT_REQUEST = ("rolq $$3, %rdi\n\trolq $$13, %rdi\n\trolq $$61, %rdi\n\trolq $$51, %rdi\n\t"
                   "xchgq %rbx, %rbx")
"""valgrind's client-request sequence on x86-64: the rotations add up to 128 bits, so natively
%rdi is unchanged and the exchange does nothing; valgrind recognises the sequence and serves
the request whose arguments %rax points to."""


def _x86_64() -> bool:
    import llvmlite.binding as ll
    return ll.get_process_triple().startswith("x86_64")


def _asm_parser() -> None:
    """LLVM's assembly parser for this CPU, which the client-request sequence needs wherever a
    kernel that contains it is compiled, also when it comes from numba's cache into a new caller
    (numba sets up no parser: its own inline assembly is empty)."""
    import llvmlite.binding as ll
    ll.initialize_native_asmparser()


_asm_parser()


@intrinsic
def _declassified(typingctx, x):
    if not (isinstance(x, types.Integer) and x.bitwidth == 64):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        slot = builder.alloca(i64)
        builder.store(args[0], slot)
        if _x86_64():
            request = builder.alloca(i64, size=ir.Constant(i64, 6))
            words = (_MEMCHECK_MAKE_MEM_DEFINED, builder.ptrtoint(slot, i64), 8, 0, 0, 0)
            for k, word in enumerate(words):
                value = ir.Constant(i64, word) if isinstance(word, int) else word
                builder.store(value, builder.gep(request, [ir.Constant(i64, k)]))
            fnty = ir.FunctionType(i64, [request.type, i64])
            builder.asm(fnty, _CLIENT_REQUEST, "={rdx},{rax},0,~{cc},~{memory}",
                        [request, ir.Constant(i64, 0)], side_effect=True)
        return builder.load(slot)
    return x(x), codegen


def declassify(x):
    """``x`` (a 64-bit integer), declared public from here on: a value derived from secrets that
    the algorithm reveals by design (whether a signing attempt's system had full rank). Natively
    a few instructions that change nothing; under valgrind's memcheck (``pqforge ct memcheck``)
    the value counts as defined, so branching on it is not reported. Every use names its reason
    in the constant-time targets (``Target.declassified``). The identity outside compiled code."""
    return x


@overload(declassify, inline="always")
def _declassify_compiled(x):
    def impl(x):
        return _declassified(x)
    return impl
