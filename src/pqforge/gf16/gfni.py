"""GF(16) products with the GFNI affine instruction, on CPUs that have it.

Multiplying GF(16) elements by a constant c is GF(2)-linear on each element, so on a byte of the
nibble-packed encoding (two elements) it is one 8x8 bit matrix: two copies of c's 4x4 matrix on
the diagonal. ``vgf2p8affineqb`` applies such a matrix to every byte of a vector register, so one
256-bit instruction multiplies 64 elements by c (a 128-bit one 32, for a vector's odd last
16-byte chunk: ``blocks.widths``). The kernels here work on m-vectors in the encoding, each in a
slot of ``blocks.slot_words`` uint64 words, and never leave it: bytes in, bytes out, no bit
planes.

Constant time: a scalar's matrix is computed with shifts and masks (``scalar_matrix``), never
looked up in memory, and the instruction's timing does not depend on its operands; loop bounds
and memory positions come from public sizes only. So both the scalars and the vectors may be
secret.

Whether these kernels run is decided in ``gf16.sets`` (the CPU must have GFNI and AVX). The
row entry points at the end (``matrix_forms``, ``row_accumulate``, ``row_flush``) also serve
the AVX2 set: given its entangled shuffle tables as B's forms, they emit ``gf16.shuffle``'s code.
"""

from __future__ import annotations


import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from ..jit.cache import JIT_CACHE
from .blocks import Codegen, arrays_ok, lanes, octets, slot_words, widths
from .kernels import times_x
from .shuffle import accumulate_pairs, flush_pairs, pair_tables

class _Codegen(Codegen):
    """The shared block IR and the affine map."""

    def affine(self, x, matrix_lanes):
        """The affine instruction on the block x (32 or 16 bytes) with the broadcast matrix."""
        b = self.builder
        kind = octets(x.type.count * 8)
        fn = b.module.declare_intrinsic(f"llvm.x86.vgf2p8affineqb.{'256' if kind.count == 32 else '128'}",
                                        fnty=ir.FunctionType(kind, [kind, kind, ir.IntType(8)]))
        y = b.call(fn, [b.bitcast(x, kind), b.bitcast(matrix_lanes, kind), ir.Constant(ir.IntType(8), 0)])
        return b.bitcast(y, x.type)


_BYTES = np.uint64(0x0101010101010101)


def affine_words(x: np.ndarray, matrix) -> np.ndarray:
    """The affine instruction on uint64 words x with the bit matrix ``matrix``, for the Python
    twins: output bit i of each byte is the parity of the byte ANDed with matrix byte 7 - i."""
    y = np.zeros(len(x), np.uint64)
    for i in range(8):
        t = x & (((np.uint64(matrix) >> np.uint64(8 * (7 - i))) & np.uint64(0xFF)) * _BYTES)
        t ^= t >> np.uint64(4)
        t ^= t >> np.uint64(2)
        t ^= t >> np.uint64(1)
        y |= (t & _BYTES) << np.uint64(i)
    return y


@nb.njit(cache=JIT_CACHE, nogil=True)
def scalar_matrix(c):
    """The GFNI bit matrix (uint64) multiplying both elements of a byte by c.

    Output bit i of a byte is the parity of the byte ANDed with matrix byte 7 - i. For the low
    element, row i holds bit i of c, c x, c x^2, c x^3 (the images of the basis); the high
    element's rows are the same, shifted to the high nibble. Shifts and masks only: c may be
    secret."""
    p0 = np.int64(c) & 15
    p1 = times_x(p0)
    p2 = times_x(p1)
    p3 = times_x(p2)
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

def _tables(forms) -> bool:
    """Whether the scalars' forms are shuffle tables (2-D, a row each), not GFNI bit matrices."""
    return isinstance(forms, types.Array) and forms.ndim == 2


_COLUMNS_AT_ONCE = {1: 12, 2: 6, 3: 4}
"""Columns of B whose sums one pass over the terms keeps in registers, by blocks a slot."""


@intrinsic
def _accumulate_columns(typingctx, tmp, src, s, step, shrink, count, matrices, j0, cols, chunks):
    """The compiled GFNI ``row_accumulate``: B's columns taken G at a time
    (``_COLUMNS_AT_ONCE``), their sums (slot c of tmp for column c) held in registers over all
    terms; per term the source blocks loaded once (``blocks.widths``), then per column one
    broadcast matrix and one affine product a block. No bounds check."""
    if not (arrays_ok(tmp, src) and tmp.dtype == types.uint64 and isinstance(chunks, types.UniTuple)
            and isinstance(matrices, types.Array) and matrices.dtype == types.uint64 and matrices.ndim == 1):
        return None
    kinds = [lanes(width) for width in widths(chunks.count)]
    blocks = len(kinds)
    sstep = 256 // src.dtype.bitwidth
    W = 4 * blocks
    G = _COLUMNS_AT_ONCE.get(blocks, 2)
    sig = types.void(tmp, src, s, step, shrink, count, matrices, j0, cols, chunks)

    def codegen(context, builder, signature, args):
        g = _Codegen(context, builder)
        types_ = signature.args
        i64 = ir.IntType(64)
        tmp_data, src_data = g.data(types_[0], args[0]), g.data(types_[1], args[1])
        mat_data = g.data(types_[6], args[6])
        s_, step_, shrink_, count_, j0_, cols_ = (g.index(args[i], types_[i]) for i in (2, 3, 4, 5, 7, 8))

        def run(size, c0):
            """Columns c0 .. c0 + size - 1 over all terms (sum of column i, block b: sums[i blocks + b])."""
            starts = [builder.add(builder.mul(builder.add(c0, i64(i)), i64(W)), i64(4 * b))
                      for i in range(size) for b in range(blocks)]

            def term(q, sums):
                xs = g.blocks_at(src_data, g.term_offset(s_, step_, shrink_, q), sstep, kinds)
                row = builder.add(builder.mul(builder.add(j0_, q), cols_), c0)
                for i in range(size):
                    word = builder.load(builder.gep(mat_data, [builder.add(row, i64(i))]))
                    for b in range(blocks):
                        acc = sums[i * blocks + b]
                        matrix = g.broadcast(word, kinds[b])
                        builder.store(builder.xor(builder.load(acc), g.affine(xs[b], matrix)), acc)
            g.sums_over_terms(tmp_data, starts, kinds * size, count_, term)

        g.in_chunks(cols_, G, run)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _flush_columns(typingctx, dst, d, dcol, tmp, cols, chunks):
    """dst[d + c dcol ..] ^= slot c of tmp for c < cols, and tmp cleared; the blocks of
    ``blocks.widths``."""
    if not (arrays_ok(dst, tmp) and dst.dtype == tmp.dtype == types.uint64 and isinstance(chunks, types.UniTuple)):
        return None
    kinds = [lanes(width) for width in widths(chunks.count)]
    W = 4 * len(kinds)
    sig = types.void(dst, d, dcol, tmp, cols, chunks)

    def codegen(context, builder, signature, args):
        g = Codegen(context, builder)
        types_ = signature.args
        i64 = ir.IntType(64)
        dst_data, tmp_data = g.data(types_[0], args[0]), g.data(types_[3], args[3])
        d_, dcol_, cols_ = (g.index(args[i], types_[i]) for i in (1, 2, 4))
        with cgutils.for_range(builder, cols_) as loop:
            c = loop.index
            for b, kind in enumerate(kinds):
                at = g.block(dst_data, builder.add(builder.add(d_, builder.mul(c, dcol_)), i64(4 * b)), kind)
                from_at = g.block(tmp_data, builder.add(builder.mul(c, i64(W)), i64(4 * b)), kind)
                g.store(builder.xor(g.load(at), g.load(from_at)), at)
                g.store(ir.Constant(kind, [0] * kind.count), from_at)
        return context.get_dummy_value()
    return sig, codegen


# Matrix products row by row: out[R, :] += sum_q A[R, q] B[q, :] for m-vectors A and a scalar
# matrix B (the oil matrix, vinegar or signature vectors). Each set runs them its fastest way:
# GFNI one slot after another, each accumulated in registers (an affine product needs no
# preparation of the vector); the AVX2 set all of B's columns at once per term, the vector split
# into nibbles once and one shuffle a product (``shuffle.accumulate_pairs``).

def matrix_forms(B, like):
    """B (rows, cols) in the form the row products of ``like``'s set take: GFNI bit matrices
    (``scalar_matrices``), or entangled pair tables (``shuffle.pair_tables``). B may be secret."""
    return pair_tables(B) if np.ndim(like) == 2 else scalar_matrices(B)


@overload(matrix_forms, inline="always")
def _matrix_forms_compiled(B, like):
    if _tables(like):
        return lambda B, like: pair_tables(B)
    return lambda B, like: scalar_matrices(B)


@nb.njit(cache=JIT_CACHE, nogil=True, inline="always")
def row_scratch(cols, chunks):
    """The sums of one output row for ``row_accumulate`` (zero): cols slots, rounded up to even."""
    return np.zeros((cols + 1) // 2 * 2 * slot_words(chunks), np.uint64)


def row_accumulate(tmp, src, s, step, shrink, count, forms, j0, cols, chunks):
    """tmp += sum_{q < count} src[s_q ..] * B[j0 + q, :] (cols products), B given by
    ``matrix_forms``, on the first len(chunks) 16-byte chunks of each source vector and sum (the
    rest of a slot is left as it is). Source offsets start at s and grow by step - q shrink from
    term q to q + 1 (shrink 0: a stride; down a column of a packed upper triangle of slots, where
    entry (r, j) sits r v - r (r - 1) / 2 + j - r slots in, step = (v - 1) W and shrink = W).
    tmp (``row_scratch``, slots of W = ``slot_words(chunks)``) holds the sums in the set's own
    form until ``row_flush``."""
    if np.ndim(forms) == 2:
        accumulate_pairs(tmp, src, s, step, shrink, count, forms, j0, (cols + 1) // 2, chunks)
        return
    W, n = slot_words(chunks), 2 * len(chunks)
    offset = s
    for q in range(count):
        x = src[offset:offset + n] if src.dtype == np.uint64 else src[offset:offset + 8 * n].view(np.uint64)
        for c in range(cols):
            tmp[c * W:c * W + n] ^= affine_words(np.ascontiguousarray(x), forms[(j0 + q) * cols + c])
        offset += step - q * shrink


@overload(row_accumulate, inline="always")
def _row_accumulate_compiled(tmp, src, s, step, shrink, count, forms, j0, cols, chunks):
    if not isinstance(chunks, types.UniTuple):
        return None
    if _tables(forms):
        def impl(tmp, src, s, step, shrink, count, forms, j0, cols, chunks):
            accumulate_pairs(tmp, src, s, step, shrink, count, forms, j0, (cols + 1) // 2, chunks)
        return impl

    def impl(tmp, src, s, step, shrink, count, forms, j0, cols, chunks):
        _accumulate_columns(tmp, src, s, step, shrink, count, forms, j0, cols, chunks)
    return impl


def row_flush(dst, d, dcol, tmp, cols, chunks, like):
    """dst[d + c dcol ..] ^= the row's product c for c < cols (its first len(chunks) 16-byte
    chunks), from tmp, which is cleared."""
    if np.ndim(like) == 2:
        flush_pairs(dst, d, dcol, tmp, cols, chunks)
        return
    W, n = slot_words(chunks), 2 * len(chunks)
    for c in range(cols):
        for w in range(n):
            dst[d + c * dcol + w] ^= tmp[c * W + w]
            tmp[c * W + w] = 0


@overload(row_flush, inline="always")
def _row_flush_compiled(dst, d, dcol, tmp, cols, chunks, like):
    if not isinstance(chunks, types.UniTuple):
        return None
    if _tables(like):
        return lambda dst, d, dcol, tmp, cols, chunks, like: flush_pairs(dst, d, dcol, tmp, cols, chunks)

    def impl(dst, d, dcol, tmp, cols, chunks, like):
        _flush_columns(dst, d, dcol, tmp, cols, chunks)
    return impl
