"""LLVM IR for blocks of 1-D arrays, shared by the intrinsics of the encoded kernel sets (``gfni``
and ``shuffle``): array data, indices, unaligned block loads, broadcasts, and the 16-byte table
look-up of each architecture.

An m-vector of the encoding is ``chunks`` 16-byte chunks (its m/2 bytes rounded up), held in a
slot of 32-byte blocks (``slot_words``). The kernels run it as 32-byte blocks and, when the
count of chunks is odd, one 16-byte block for the last chunk (``widths``), so that MAYO-1's 39
bytes cost 48 bytes of work, not 64. A 32-byte block is one AVX2 register on x86-64 and two NEON
registers on aarch64, where LLVM splits every 256-bit operation into two 128-bit ones; a 16-byte
block is one SSE or NEON register. Only the table look-up is an architecture's own instruction
(``Codegen.look_up``)."""

import numba as nb
from llvmlite import ir
from numba.core import cgutils, types

from ..jit.cache import JIT_CACHE
from ..jit.target import architecture


def arrays_ok(*arrays) -> bool:
    """Whether every argument is a 1-D contiguous uint64 or uint8 array type."""
    return all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
               and a.dtype in (types.uint64, types.uint8) for a in arrays)


@nb.njit(cache=JIT_CACHE, nogil=True, inline="always")
def slot_words(chunks):
    """uint64 words of the slot of an m-vector of len(chunks) 16-byte chunks: whole 32-byte blocks."""
    return 4 * ((len(chunks) + 1) // 2)


def widths(chunks: int) -> list[int]:
    """The blocks, in bytes, that cover ``chunks`` 16-byte chunks: 32 bytes, then 16 for an odd last chunk."""
    return [32] * (chunks // 2) + [16] * (chunks % 2)


def lanes(width: int) -> ir.VectorType:
    """A block of ``width`` bytes as 64-bit lanes."""
    return ir.VectorType(ir.IntType(64), width // 8)


def octets(width: int) -> ir.VectorType:
    """A block of ``width`` bytes as bytes."""
    return ir.VectorType(ir.IntType(8), width)


def splat(kind: ir.VectorType, value: int) -> ir.Constant:
    """``value`` in every element of a vector of type ``kind``."""
    return ir.Constant(kind, [value] * kind.count)


def _selection(first: int, count: int) -> ir.Constant:
    """The shuffle mask picking ``count`` elements from ``first`` on."""
    return ir.Constant(ir.VectorType(ir.IntType(32), count), list(range(first, first + count)))


class Codegen:
    def __init__(self, context, builder):
        self.context, self.builder = context, builder

    def data(self, arr_type, arr):
        return self.context.make_array(arr_type)(self.context, self.builder, arr).data

    def index(self, value, value_type):
        return self.context.cast(self.builder, value, value_type, types.int64)

    def block(self, data, index, kind):
        """Pointer to the block of type ``kind`` at element ``index`` of an array's data (any alignment)."""
        return self.builder.bitcast(self.builder.gep(data, [index]), kind.as_pointer())

    def load(self, ptr):
        value = self.builder.load(ptr)
        value.align = 1
        return value

    def store(self, value, ptr):
        self.builder.store(value, ptr).align = 1

    def look_up(self, table, indices):
        """Each byte of ``indices`` (octets of 32 or 16 bytes, every one below 16) replaced by that
        entry of ``table`` (32 octets: 16 entries, twice): on x86-64 AVX2's ``vpshufb`` (SSSE3's
        ``pshufb`` for 16 bytes), on aarch64 one NEON ``tbl`` per 16 bytes, which take the
        table's first half (LLVM then loads only those 16 bytes). All index a register, never
        memory, in a time that does not depend on the operands."""
        b = self.builder
        width = indices.type.count
        entries = b.shuffle_vector(table, table, _selection(0, 16))
        if architecture() == "aarch64":
            half = octets(16)
            tbl = b.module.declare_intrinsic("llvm.aarch64.neon.tbl1.v16i8", fnty=ir.FunctionType(half, [half, half]))
            if width == 16:
                return b.call(tbl, [entries, indices])
            halves = [b.call(tbl, [entries, b.shuffle_vector(indices, indices, _selection(16 * h, 16))])
                      for h in (0, 1)]
            return b.shuffle_vector(halves[0], halves[1], _selection(0, 32))
        if width == 16:
            shuffle = b.module.declare_intrinsic("llvm.x86.ssse3.pshuf.b.128", fnty=ir.FunctionType(octets(16), [octets(16)] * 2))
            return b.call(shuffle, [entries, indices])
        shuffle = b.module.declare_intrinsic("llvm.x86.avx2.pshuf.b", fnty=ir.FunctionType(octets(32), [octets(32)] * 2))
        return b.call(shuffle, [table, indices])

    def broadcast(self, word, kind):
        """A 64-bit word in every lane of a block of type ``kind`` (64-bit lanes)."""
        b = self.builder
        out = ir.Constant(kind, ir.Undefined)
        for lane in range(kind.count):
            out = b.insert_element(out, word, ir.Constant(ir.IntType(32), lane))
        return out

    def term_offset(self, s, step, shrink, q):
        """s + q step - shrink q (q - 1) / 2: the source offset of term q when offsets grow by
        step - q shrink (shrink 0: a stride; shrink > 0: down a column of a packed triangle)."""
        b, i64 = self.builder, ir.IntType(64)
        return b.sub(b.add(s, b.mul(q, step)), b.mul(shrink, b.lshr(b.mul(q, b.sub(q, i64(1))), i64(1))))

    def term_cursor(self, s, step, shrink):
        """The offsets of ``term_offset`` carried from term to term instead: (offset, advance),
        where offset() is the current term's and advance() moves to the next (two additions, no
        multiplication in the loop over the terms). Made before that loop."""
        b = self.builder
        at, delta = cgutils.alloca_once_value(b, s), cgutils.alloca_once_value(b, step)

        def advance():
            b.store(b.add(b.load(at), b.load(delta)), at)
            b.store(b.sub(b.load(delta), shrink), delta)
        return (lambda: b.load(at)), advance

    def register(self, ptr, kind):
        """A variable (promoted to a register by LLVM) holding the block at ``ptr`` as ``kind``."""
        var = cgutils.alloca_once(self.builder, kind)
        self.builder.store(self.builder.bitcast(self.load(ptr), kind), var)
        return var

    def blocks_at(self, data, base, step, kinds):
        """The blocks of an m-vector from element ``base`` of an array, ``step`` elements a
        32-byte block apart, one of each type in ``kinds`` (``widths``, as octets or lanes)."""
        b, i64 = self.builder, ir.IntType(64)
        return [self.load(self.block(data, b.add(base, i64(step * k)), kind)) for k, kind in enumerate(kinds)]

    def sums_over_terms(self, data, starts, kinds, count, term):
        """The blocks of ``data`` at the element indices ``starts``, of the types ``kinds``, held
        as variables (in registers) while ``term(q, sums)`` runs for q < count, then stored back."""
        sums = [(at, self.register(at, kind)) for at, kind in
                ((self.block(data, i, kind), kind) for i, kind in zip(starts, kinds))]
        with cgutils.for_range(self.builder, count) as terms:
            term(terms.index, [var for _, var in sums])
        for at, var in sums:
            self.store(self.builder.load(var), at)

    def in_chunks(self, total, size, run):
        """run(n, first) for units first .. first + n - 1 covering 0 .. total - 1: chunks of
        ``size`` in a loop, then the rest in a chunk of its own (each n known when compiling)."""
        b, i64 = self.builder, ir.IntType(64)
        full = b.udiv(total, i64(size))
        with cgutils.for_range(b, full) as chunks:
            run(size, b.mul(chunks.index, i64(size)))
        rest = b.urem(total, i64(size))
        for n in range(1, size):
            with b.if_then(b.icmp_unsigned("==", rest, i64(n))):
                run(n, b.mul(full, i64(size)))
