"""LLVM IR for 32-byte blocks of 1-D arrays, shared by the intrinsics of the encoded kernel sets
(``gfni`` and ``shuffle``): array data, indices, unaligned block loads, broadcasts, and the
16-byte table look-up of each architecture.

A block is 32 bytes on every CPU: one AVX2 register on x86-64, two NEON registers on aarch64,
where LLVM splits every 256-bit operation into two 128-bit ones. Only the table look-up is an
architecture's own instruction (``Codegen.look_up``)."""

from llvmlite import ir
from numba.core import cgutils, types

from ..jit.target import architecture


def arrays_ok(*arrays) -> bool:
    """Whether every argument is a 1-D contiguous uint64 or uint8 array type."""
    return all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
               and a.dtype in (types.uint64, types.uint8) for a in arrays)


class Codegen:
    lanes = ir.VectorType(ir.IntType(64), 4)
    octets = ir.VectorType(ir.IntType(8), 32)

    def __init__(self, context, builder):
        self.context, self.builder = context, builder

    def data(self, arr_type, arr):
        return self.context.make_array(arr_type)(self.context, self.builder, arr).data

    def index(self, value, value_type):
        return self.context.cast(self.builder, value, value_type, types.int64)

    def block(self, data, index):
        """Pointer to the 32 bytes at element ``index`` of an array's data (any alignment)."""
        return self.builder.bitcast(self.builder.gep(data, [index]), self.lanes.as_pointer())

    def load(self, ptr):
        value = self.builder.load(ptr)
        value.align = 1
        return value

    def look_up(self, table, indices):
        """Each byte of ``indices`` (octets, every one below 16) replaced by that entry of
        ``table`` (octets: 16 entries, twice): AVX2's ``vpshufb`` on x86-64, two NEON ``tbl``
        on aarch64, which both take the table's first half (LLVM then loads only those 16
        bytes). Both index a register, never memory, in a time that does not depend on the
        operands."""
        b, octets = self.builder, self.octets
        if architecture() == "aarch64":
            half = ir.VectorType(ir.IntType(8), 16)
            tbl = b.module.declare_intrinsic("llvm.aarch64.neon.tbl1.v16i8", fnty=ir.FunctionType(half, [half, half]))
            lanes = [ir.Constant(ir.VectorType(ir.IntType(32), 16), list(range(16 * h, 16 * h + 16))) for h in (0, 1)]
            entries = b.shuffle_vector(table, table, lanes[0])
            halves = [b.call(tbl, [entries, b.shuffle_vector(indices, indices, at)]) for at in lanes]
            return b.shuffle_vector(halves[0], halves[1], ir.Constant(ir.VectorType(ir.IntType(32), 32), list(range(32))))
        shuffle = b.module.declare_intrinsic("llvm.x86.avx2.pshuf.b", fnty=ir.FunctionType(octets, [octets, octets]))
        return b.call(shuffle, [table, indices])

    def broadcast(self, word):
        """A 64-bit word in every lane."""
        b = self.builder
        out = ir.Constant(self.lanes, ir.Undefined)
        for lane in range(4):
            out = b.insert_element(out, word, ir.Constant(ir.IntType(32), lane))
        return out

    def term_offset(self, s, step, shrink, q):
        """s + q step - shrink q (q - 1) / 2: the source offset of term q when offsets grow by
        step - q shrink (shrink 0: a stride; shrink > 0: down a column of a packed triangle)."""
        b, i64 = self.builder, ir.IntType(64)
        return b.sub(b.add(s, b.mul(q, step)), b.mul(shrink, b.lshr(b.mul(q, b.sub(q, i64(1))), i64(1))))

    def register(self, ptr, kind):
        """A variable (promoted to a register by LLVM) holding the 32 bytes at ``ptr`` as ``kind``."""
        var = cgutils.alloca_once(self.builder, kind)
        self.builder.store(self.builder.bitcast(self.load(ptr), kind), var)
        return var

    def blocks_at(self, data, base, step, count, kind):
        """The ``count`` 32-byte blocks from element ``base`` of an array, ``step`` elements apart, as ``kind``."""
        b, i64 = self.builder, ir.IntType(64)
        return [b.bitcast(self.load(self.block(data, b.add(base, i64(step * k)))), kind) for k in range(count)]

    def sums_over_terms(self, data, starts, kind, count, term):
        """The 32-byte blocks of ``data`` at the element indices ``starts``, held as variables of
        type ``kind`` (in registers) while ``term(q, sums)`` runs for q < count, then stored back."""
        b = self.builder
        sums = [(at, self.register(at, kind)) for at in (self.block(data, i) for i in starts)]
        with cgutils.for_range(b, count) as terms:
            term(terms.index, [var for _, var in sums])
        for at, var in sums:
            b.store(b.bitcast(b.load(var), self.lanes), at).align = 1

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
