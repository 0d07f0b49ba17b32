"""GF(16) products with byte shuffles, on the nibble encoding: the avx2 set (x86-64 without
GFNI) and the neon set (aarch64).

The product c * a of a fixed scalar c with every element a of a byte string is a lookup of each
nibble in c's 16-entry table, and AVX2's ``vpshufb`` looks up 32 bytes at once in a table held
in a register, NEON's ``tbl`` 16 (``blocks.Codegen.look_up``; a 32-byte block is two of them,
a vector's odd last 16-byte chunk one block of its own: ``blocks.widths``).
A byte holds two elements, so one product would take two shuffles (low and high nibbles). Here a table serves two scalars a and b at once, *entangled*: entry x holds a x in its
low nibble and b x in its high one. Shuffling a vector's low nibbles through it gives a and b
times them; the high nibbles likewise; the four half-products are sorted into a v and b v once
at the end of a sum (``flush_pairs``). So a product costs one shuffle, and a vector is split into
nibbles once for all the scalars it meets (``accumulate_pairs``): the matrix products of MAYO run
row by row, as ``gf16.gfni``'s row entry points describe.

Constant time: a table is computed from its scalars with shifts and masks (``_table_words``),
never looked up in memory; the shuffle indexes a register, not memory, and its timing does not
depend on its operands; loop bounds and memory positions follow public sizes only. So both the
scalars and the vectors may be secret.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from ..jit.cache import JIT_CACHE
from ..jit.target import architecture
from .blocks import Codegen, arrays_ok, lanes, octets, slot_words, splat, widths
from .kernels import nibbles_times_x

_JIT = dict(cache=JIT_CACHE, nogil=True)

_ODD = np.uint64(0xFF00FF00FF00FF00)        # bytes 1, 3, 5, 7: entries x with bit 0 set
_PAIRS = np.uint64(0xFFFF0000FFFF0000)      # entries with bit 1 set
_HIGH = np.uint64(0xFFFFFFFF00000000)       # entries with bit 2 set
_SPREAD = np.uint64(0x0101010101010101)


@nb.njit(**_JIT, inline="always")
def _table_words(c):
    """The entangled 16-entry table of the byte c = a | b << 4 (two scalars), T[x] = a x | (b x) << 4,
    as two uint64 words (entries 0..7, then 8..15, one byte each): the sum of c x^k over the set
    bits k of x, where c x^k multiplies both nibbles at once (``nibbles_times_x``), each spread to
    every byte and masked to the entries with bit k. Shifts and masks only: c may be secret."""
    p0 = np.uint64(c) & np.uint64(0xFF)
    p1 = nibbles_times_x(p0)
    p2 = nibbles_times_x(p1)
    p3 = nibbles_times_x(p2)
    low = ((p0 * _SPREAD) & _ODD) ^ ((p1 * _SPREAD) & _PAIRS) ^ ((p2 * _SPREAD) & _HIGH)
    return low, low ^ (p3 * _SPREAD)          # entries 8..15 have bit 3


@nb.njit(**_JIT)
def pair_tables(B):
    """The *entangled* tables of the 2-D array B (R, C) for ``accumulate_pairs``: (R * P, 4)
    uint64 with P = ceil(C / 2), row r P + p the table of the pair a = B[r, 2p], b = B[r, 2p + 1]
    (0 past C): entry x is a x | (b x) << 4, in both 128-bit lanes. One shuffle of a vector's low
    (or high) nibbles through it gives a times them in the low nibbles and b times them in the
    high ones: two products for one shuffle. B may be secret (``_table_words``)."""
    R, C = B.shape
    P = (C + 1) // 2
    out = np.empty((R * P, 4), np.uint64)
    for r in range(R):
        for p in range(P):
            b = B[r, 2 * p + 1] if 2 * p + 1 < C else 0      # (public positions)
            low, high = _table_words((np.int64(B[r, 2 * p]) & 15) | ((np.int64(b) & 15) << 4))
            out[r * P + p, 0] = low
            out[r * P + p, 1] = high
            out[r * P + p, 2] = low
            out[r * P + p, 3] = high
    return out


_LOW_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)


def accumulate_pairs(tmp, src, s, step, shrink, count, tables, j0, pairs, chunks):
    """tmp += sum_{q < count} src[s_q ..] (x) row j0 + q of B, in the entangled form: for each
    pair p of B's columns, slot 2p collects the shuffles of the low nibbles through the pair's
    table, slot 2p + 1 those of the high nibbles (``flush_pairs`` turns them into products).
    Source offsets as ``gfni.row_accumulate`` (s, then growing by step - q shrink); slots of
    W = ``slot_words(chunks)`` words, of which the first len(chunks) 16-byte chunks are summed.
    Compiled: each source block is loaded and split into nibbles once for all of B's columns,
    then one shuffle a product. This twin selects table entries by masks (the nibbles may be
    secret)."""
    W, n = slot_words(chunks), 2 * len(chunks)
    offset = s
    for q in range(count):
        x = src[offset:offset + n] if src.dtype == np.uint64 else src[offset:offset + 8 * n].view(np.uint64)
        b = np.ascontiguousarray(x).view(np.uint8)
        for p in range(pairs):
            table = np.asarray(tables[(j0 + q) * pairs + p], np.uint64).view(np.uint8)
            for half, nibbles in ((0, b & 15), (1, b >> 4)):
                out = np.zeros_like(b)
                for entry in range(16):
                    out |= (nibbles == entry) * table[entry]
                tmp[(2 * p + half) * W:(2 * p + half) * W + n] ^= out.view(np.uint64)
        offset += step - q * shrink


def flush_pairs(dst, d, dcol, tmp, cols, chunks):
    """dst[d + c dcol ..] ^= the product slots for c < cols (their first len(chunks) 16-byte
    chunks) from the entangled sums in tmp (``accumulate_pairs``), and tmp cleared. Slots 2p
    (a x_lo | b x_lo << 4) and 2p + 1 (a x_hi | b x_hi << 4) exchange nibbles: a x = low nibbles
    of the first and of the second moved up, b x = high nibbles of the first moved down and of
    the second. Compiled a block at a time (``blocks.widths``); public positions only."""
    W, n = slot_words(chunks), 2 * len(chunks)
    for p in range((cols + 1) // 2):
        lo = tmp[2 * p * W:2 * p * W + n].copy()
        hi = tmp[(2 * p + 1) * W:(2 * p + 1) * W + n].copy()
        t = (hi ^ (lo >> np.uint64(4))) & _LOW_NIBBLES
        dst[d + 2 * p * dcol:d + 2 * p * dcol + n] ^= lo ^ (t << np.uint64(4))
        if 2 * p + 1 < cols:
            dst[d + (2 * p + 1) * dcol:d + (2 * p + 1) * dcol + n] ^= hi ^ t
        tmp[2 * p * W:(2 * p + 2) * W] = 0


def _pairs_at_once(chunks: int) -> int:
    """Pairs of B's columns whose sums one pass over the terms keeps in registers, for vectors of
    ``chunks`` 16-byte chunks: each pair holds two sums of a vector, beside the source vector
    split into its two halves and one table, in AVX2's 16 registers of 32 bytes or NEON's 32 of
    16 (MAYO-1: 2 pairs on x86-64, 4 on aarch64); at least 1."""
    if architecture() == "aarch64":
        registers, per_vector = 32, chunks
    else:
        registers, per_vector = 16, len(widths(chunks))
    return max(1, (registers - 2 * per_vector - 1) // (2 * per_vector))


@intrinsic
def _accumulate_pairs(typingctx, tmp, src, s, step, shrink, count, tables, j0, pairs, chunks):
    """The compiled ``accumulate_pairs``: the pairs taken G at a time (``_pairs_at_once``), their
    sums held in registers over all terms; per term the source blocks (``blocks.widths``)
    loaded and split once, then per pair one table load and one shuffle a product. The last
    pairs (fewer than G) run in a pass of their own size. No bounds check."""
    if not (arrays_ok(tmp, src) and tmp.dtype == types.uint64 and isinstance(chunks, types.UniTuple)
            and isinstance(tables, types.Array) and tables.dtype == types.uint64 and tables.ndim == 2
            and tables.layout == "C"):
        return None
    kinds = [octets(width) for width in widths(chunks.count)]
    blocks = len(kinds)
    sstep = 256 // src.dtype.bitwidth
    W = 4 * blocks
    G = _pairs_at_once(chunks.count)
    sig = types.void(tmp, src, s, step, shrink, count, tables, j0, pairs, chunks)

    def codegen(context, builder, signature, args):
        g = Codegen(context, builder)
        types_ = signature.args
        i64 = ir.IntType(64)
        tmp_data, src_data = g.data(types_[0], args[0]), g.data(types_[1], args[1])
        table_data = g.data(types_[6], args[6])
        s_, step_, shrink_, count_, j0_, pairs_ = (g.index(args[i], types_[i]) for i in (2, 3, 4, 5, 7, 8))

        def run(size, p0):
            """Pairs p0 .. p0 + size - 1 over all terms (pair i, half h, block b: sums[(2i + h) blocks + b])."""
            starts = [builder.add(builder.mul(builder.add(p0, i64(i)), i64(2 * W)), i64(half * W + 4 * b))
                      for i in range(size) for half in range(2) for b in range(blocks)]

            # the term's source offset and its tables' row, carried from term to term
            source, next_source = g.term_cursor(s_, step_, shrink_)
            tables_at, next_tables = g.term_cursor(builder.mul(builder.add(builder.mul(j0_, pairs_), p0), i64(4)),
                                                   builder.mul(pairs_, i64(4)), i64(0))

            def term(q, sums):
                xs = g.blocks_at(src_data, source(), sstep, kinds)
                halves = ([builder.and_(x, splat(x.type, 15)) for x in xs],
                          [builder.and_(builder.lshr(x, splat(x.type, 4)), splat(x.type, 15)) for x in xs])
                row = tables_at()
                for i in range(size):
                    table = g.blocks_at(table_data, builder.add(row, i64(4 * i)), 0, [octets(32)])[0]
                    for half in range(2):
                        for b in range(blocks):
                            acc = sums[(2 * i + half) * blocks + b]
                            builder.store(builder.xor(builder.load(acc), g.look_up(table, halves[half][b])),
                                          acc)
                next_source()
                next_tables()
            g.sums_over_terms(tmp_data, starts, kinds * (2 * size), count_, term)

        g.in_chunks(pairs_, G, run)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _flush_pairs(typingctx, dst, d, dcol, tmp, cols, chunks):
    """The compiled ``flush_pairs``, on the blocks of ``blocks.widths``. No bounds check."""
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

        def xor_into(index, value):
            at = g.block(dst_data, index, value.type)
            g.store(builder.xor(g.load(at), value), at)

        with cgutils.for_range(builder, builder.udiv(builder.add(cols_, i64(1)), i64(2))) as loop:
            p = loop.index
            first = builder.add(d_, builder.mul(builder.mul(p, i64(2)), dcol_))
            second = builder.add(first, dcol_)
            for b, kind in enumerate(kinds):
                mask, four = splat(kind, int(_LOW_NIBBLES)), splat(kind, 4)
                lo_at = g.block(tmp_data, builder.add(builder.mul(p, i64(2 * W)), i64(4 * b)), kind)
                hi_at = g.block(tmp_data, builder.add(builder.mul(p, i64(2 * W)), i64(W + 4 * b)), kind)
                lo, hi = g.load(lo_at), g.load(hi_at)
                t = builder.and_(builder.xor(hi, builder.lshr(lo, four)), mask)
                xor_into(builder.add(first, i64(4 * b)), builder.xor(lo, builder.shl(t, four)))
                with builder.if_then(builder.icmp_unsigned("<", builder.add(builder.mul(p, i64(2)), i64(1)), cols_)):
                    xor_into(builder.add(second, i64(4 * b)), builder.xor(hi, t))
                g.store(splat(kind, 0), lo_at)
                g.store(splat(kind, 0), hi_at)
        return context.get_dummy_value()
    return sig, codegen


@overload(flush_pairs, inline="always")
def _flush_pairs_compiled(dst, d, dcol, tmp, cols, chunks):
    if not isinstance(chunks, types.UniTuple):
        return None

    def impl(dst, d, dcol, tmp, cols, chunks):
        _flush_pairs(dst, d, dcol, tmp, cols, chunks)
    return impl


@overload(accumulate_pairs, inline="always")
def _accumulate_pairs_compiled(tmp, src, s, step, shrink, count, tables, j0, pairs, chunks):
    if not isinstance(chunks, types.UniTuple):
        return None

    def impl(tmp, src, s, step, shrink, count, tables, j0, pairs, chunks):
        _accumulate_pairs(tmp, src, s, step, shrink, count, tables, j0, pairs, chunks)
    return impl
