"""GF(16) products with the GFNI affine instruction, on CPUs that have it.

Multiplying GF(16) elements by a constant c is GF(2)-linear on each element, so on a byte of the
nibble-packed encoding (two elements) it is one 8x8 bit matrix: two copies of c's 4x4 matrix on
the diagonal. ``vgf2p8affineqb`` applies such a matrix to every byte of a vector register, so one
256-bit instruction multiplies 64 elements by c. The kernels here work on m-vectors in the
encoding, each in a slot of W = 4 * len(limbs) uint64 words (as ``ExpandedPublicKey.nibbles``
keeps them), and never leave it: bytes in, bytes out, no bit planes.

Constant time: a scalar's matrix is computed with shifts and masks (``scalar_matrix``), never
looked up in memory, and the instruction's timing does not depend on its operands; loop bounds
and memory positions come from public sizes only. So both the scalars and the vectors may be
secret.

Whether these kernels run is decided in ``gf16.sets`` (the CPU must have GFNI and AVX). The
shared entry points (``dot_add_slot``, ``dot_add_column_slot``, ``scalar_forms``) also serve
the AVX2 set: given shuffle tables as the scalars' forms, they emit ``gf16.shuffle``'s code.
"""

from __future__ import annotations


import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from .._compile_cache import JIT_CACHE
from .blocks import Codegen, arrays_ok
from .shuffle import dot_add_tables, scalar_tables

class _Codegen(Codegen):
    """The shared block IR and the affine map."""

    def __init__(self, context, builder):
        super().__init__(context, builder)
        self.affine_fn = builder.module.declare_intrinsic(
            "llvm.x86.vgf2p8affineqb.256", fnty=ir.FunctionType(self.octets, [self.octets, self.octets, ir.IntType(8)]))

    def affine(self, x, matrix_lanes):
        b = self.builder
        y = b.call(self.affine_fn, [b.bitcast(x, self.octets), b.bitcast(matrix_lanes, self.octets),
                                    ir.Constant(ir.IntType(8), 0)])
        return b.bitcast(y, self.lanes)


@intrinsic
def _affine_xor4(typingctx, dst, d, src, s, matrix):
    """The 32 bytes at src[s] through the bit matrix ``matrix`` (a uint64, broadcast to every
    64-bit lane), XORed into the 32 bytes at dst[d]. 1-D contiguous uint64 or uint8 arrays,
    indexed in their own elements (so a uint8 source may start at any byte); no bounds check."""
    if not arrays_ok(dst, src):
        return None
    sig = types.void(dst, d, src, s, types.uint64)

    def codegen(context, builder, signature, args):
        g = _Codegen(context, builder)
        at = g.block(g.data(signature.args[0], args[0]), g.index(args[1], signature.args[1]))
        x = g.load(g.block(g.data(signature.args[2], args[2]), g.index(args[3], signature.args[3])))
        matrix = context.cast(builder, args[4], signature.args[4], types.uint64)
        builder.store(builder.xor(g.load(at), g.affine(x, g.broadcast(matrix))), at).align = 1
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _dot_add(typingctx, dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs):
    """dst[d..] ^= sum_q A(matrices[t + q tstep]) src[s_q ..] for q < count, where the source
    offsets start at s and grow by step - q shrink from term q to q + 1 (shrink 0: a constant
    stride; shrink > 0: down a column of a packed upper triangle): one slot of len(limbs)
    32-byte blocks accumulated in registers over the whole sum (the accumulator is loaded and
    stored once). dst, src: 1-D uint64 or uint8 arrays indexed in their own elements;
    matrices: 1-D uint64. No bounds check."""
    if not (arrays_ok(dst, src) and isinstance(limbs, types.UniTuple) and isinstance(matrices, types.Array)
            and matrices.dtype == types.uint64 and matrices.ndim == 1 and matrices.layout == "C"):
        return None
    blocks = limbs.count
    dstep, sstep = 256 // dst.dtype.bitwidth, 256 // src.dtype.bitwidth     # elements a block spans
    sig = types.void(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs)

    def codegen(context, builder, signature, args):
        g = _Codegen(context, builder)
        kinds = signature.args
        i64 = ir.IntType(64)
        dst_data, src_data = g.data(kinds[0], args[0]), g.data(kinds[2], args[2])
        mat_data = g.data(kinds[6], args[6])
        d_, s_, step_, shrink_, t_, tstep_, count_ = (g.index(args[i], kinds[i]) for i in (1, 3, 4, 5, 7, 8, 9))
        slots = []
        for b in range(blocks):
            at = g.block(dst_data, builder.add(d_, i64(dstep * b)))
            acc = cgutils.alloca_once(builder, g.lanes)      # promoted to a register by LLVM
            builder.store(g.load(at), acc)
            slots.append((at, acc))
        with cgutils.for_range(builder, count_) as loop:
            q = loop.index
            matrix = g.broadcast(builder.load(builder.gep(mat_data, [builder.add(t_, builder.mul(q, tstep_))])))
            # s + q step - shrink q (q - 1) / 2
            base = builder.sub(builder.add(s_, builder.mul(q, step_)),
                               builder.mul(shrink_, builder.lshr(builder.mul(q, builder.sub(q, i64(1))), i64(1))))
            for b, (_, acc) in enumerate(slots):
                x = g.load(g.block(src_data, builder.add(base, i64(sstep * b))))
                builder.store(builder.xor(builder.load(acc), g.affine(x, matrix)), acc)
        for at, acc in slots:
            builder.store(builder.load(acc), at).align = 1
        return context.get_dummy_value()
    return sig, codegen


_BYTES = np.uint64(0x0101010101010101)


def mul_add_slot(dst, d, src, s, matrix, limbs):
    """dst[d : d + W] ^= c * src[s : s + W] for one m-vector in a W-word slot (W = 4 * len(limbs)),
    c given by its ``scalar_matrix``; 1-D uint64 arrays, or a uint8 ``src`` indexed in bytes
    (an m-vector read straight from an encoding at any byte offset, with the bytes after it).

    Compiled, one affine instruction per 32 bytes. This Python twin computes the same with word
    operations (output bit i of each byte: the parity of the byte ANDed with matrix row i)."""
    n = 4 * len(limbs)
    x = src[s:s + n] if src.dtype == np.uint64 else src[s:s + 8 * n].view(np.uint64)
    if np.ndim(matrix):                 # a scalar's shuffle tables (``gf16.shuffle``)
        from .shuffle import multiply_bytes
        dst[d:d + n] ^= multiply_bytes(np.ascontiguousarray(x), matrix)
        return
    y = np.zeros(n, np.uint64)
    for i in range(8):
        t = x & (((np.uint64(matrix) >> np.uint64(8 * (7 - i))) & np.uint64(0xFF)) * _BYTES)
        t ^= t >> np.uint64(4)
        t ^= t >> np.uint64(2)
        t ^= t >> np.uint64(1)
        y |= (t & _BYTES) << np.uint64(i)
    dst[d:d + n] ^= y


@overload(mul_add_slot, inline="always")
def _mul_add_slot_compiled(dst, d, src, s, matrix, limbs):
    if not isinstance(limbs, types.UniTuple):
        return None

    dstep = 256 // dst.dtype.bitwidth             # elements a 32-byte block spans
    sstep = 256 // src.dtype.bitwidth

    def impl(dst, d, src, s, matrix, limbs):
        for q in range(len(limbs)):
            _affine_xor4(dst, np.uint64(d) + np.uint64(dstep * q), src, np.uint64(s) + np.uint64(sstep * q), matrix)
    return impl


@nb.njit(cache=JIT_CACHE, nogil=True, inline="always")
def _times_x(a):
    """x * a for an element a (int64, 0..15): shift up, fold bit 4 back as x + 1."""
    return ((a << 1) & 15) ^ (((a >> 3) & 1) * 3)


@nb.njit(cache=JIT_CACHE, nogil=True)
def scalar_matrix(c):
    """The GFNI bit matrix (uint64) multiplying both elements of a byte by c.

    Output bit i of a byte is the parity of the byte ANDed with matrix byte 7 - i. For the low
    element, row i holds bit i of c, c x, c x^2, c x^3 (the images of the basis); the high
    element's rows are the same, shifted to the high nibble. Shifts and masks only: c may be
    secret."""
    p0 = np.int64(c) & 15
    p1 = _times_x(p0)
    p2 = _times_x(p1)
    p3 = _times_x(p2)
    m = np.uint64(0)
    for i in range(4):
        row = np.uint64(((p0 >> i) & 1) | (((p1 >> i) & 1) << 1) | (((p2 >> i) & 1) << 2)
                        | (((p3 >> i) & 1) << 3))
        m |= row << np.uint64(8 * (7 - i))               # low element: output bit i
        m |= (row << np.uint64(4)) << np.uint64(8 * (3 - i))   # high element: output bit 4 + i
    return m


@nb.njit(cache=JIT_CACHE, nogil=True)
def scalar_matrices(B):
    """``scalar_matrix`` of every element of the 2-D array B, flat: element (r, c) at r * C + c
    (a uint64 array of B.size). B may be secret."""
    R, C = B.shape
    out = np.empty(R * C, np.uint64)
    for r in range(R):
        for c in range(C):
            out[r * C + c] = scalar_matrix(B[r, c])
    return out

def dot_add_slot(dst, d, src, s, step, matrices, t, tstep, count, limbs):
    """dst[d : d + W] ^= sum_{q < count} c_q * src[s + q step : ... + W] with c_q given by its
    matrix matrices[t + q tstep]: a dot product of scalars and m-vectors into one slot, the
    accumulator kept in registers (``mul_add_slot`` for the arrays and indexing)."""
    dot_add_column_slot(dst, d, src, s, step, 0, matrices, t, tstep, count, limbs)


def dot_add_column_slot(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs):
    """``dot_add_slot`` with source offsets that grow by step - q shrink from term q to q + 1: down
    a column of a packed upper triangle of slots (entry (r, j) at r v - r (r - 1) / 2 + j - r
    slots) the offset grows by (v - 1 - r) slots, so step = (v - 1) W and shrink = W."""
    offset = s
    for q in range(count):
        mul_add_slot(dst, d, src, offset, matrices[t + q * tstep], limbs)
        offset += step - q * shrink


@overload(dot_add_slot, inline="always")
def _dot_add_slot_compiled(dst, d, src, s, step, matrices, t, tstep, count, limbs):
    if not isinstance(limbs, types.UniTuple):
        return None

    if _tables(matrices):
        def impl(dst, d, src, s, step, matrices, t, tstep, count, limbs):
            dot_add_tables(dst, d, src, s, step, 0, matrices, t, tstep, count, limbs)
        return impl

    def impl(dst, d, src, s, step, matrices, t, tstep, count, limbs):
        _dot_add(dst, d, src, s, step, 0, matrices, t, tstep, count, limbs)
    return impl


@overload(dot_add_column_slot, inline="always")
def _dot_add_column_slot_compiled(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs):
    if not isinstance(limbs, types.UniTuple):
        return None

    if _tables(matrices):
        def impl(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs):
            dot_add_tables(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs)
        return impl

    def impl(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs):
        _dot_add(dst, d, src, s, step, shrink, matrices, t, tstep, count, limbs)
    return impl


def _tables(forms) -> bool:
    """Whether the scalars' forms are shuffle tables (2-D, a row each), not GFNI bit matrices."""
    return isinstance(forms, types.Array) and forms.ndim == 2


def scalar_forms(B, like):
    """The forms of every element of the 2-D array B in the kernel set that ``like`` (an empty
    array of forms: ``gf16.sets.FORMS``) stands for: GFNI bit matrices (1-D, ``scalar_matrices``)
    or shuffle tables (2-D, ``shuffle.scalar_tables``). Compiled, the choice is made by type.
    B may be secret."""
    return scalar_tables(B) if np.ndim(like) == 2 else scalar_matrices(B)


@overload(scalar_forms, inline="always")
def _scalar_forms_compiled(B, like):
    if _tables(like):
        return lambda B, like: scalar_tables(B)
    return lambda B, like: scalar_matrices(B)
