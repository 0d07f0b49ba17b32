"""GF(16) products with AVX2 byte shuffles, on the nibble encoding, for CPUs without GFNI.

The product c * a of a fixed scalar c with every element a of a byte string is a lookup of each
nibble in c's 16-entry table, and ``vpshufb`` looks up 32 bytes at once in a table held in a
register. A byte holds two elements, so one product is two shuffles: the low nibbles in
T_lo[x] = c x, the high nibbles in T_hi[x] = (c x) << 4, their results ORed. The kernels keep the
layout of ``gf16.gfni`` (m-vectors in W-word slots, bytes in, bytes out) and the same sums; a
scalar's *form* is its pair of tables, one row of four uint64 words (T_lo, then T_hi, 16 bytes
each), where GFNI's form is one bit matrix.

Constant time: a table is computed from its scalar with shifts and masks (``scalar_table``),
never looked up in memory; the shuffle indexes a register, not memory, and its timing does not
depend on its operands; loop bounds and memory positions follow public sizes only. So both the
scalars and the vectors may be secret.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .._compile_cache import JIT_CACHE
from .blocks import Codegen, arrays_ok

_JIT = dict(cache=JIT_CACHE, nogil=True)

_ODD = np.uint64(0xFF00FF00FF00FF00)        # bytes 1, 3, 5, 7: entries x with bit 0 set
_PAIRS = np.uint64(0xFFFF0000FFFF0000)      # entries with bit 1 set
_HIGH = np.uint64(0xFFFFFFFF00000000)       # entries with bit 2 set
_SPREAD = np.uint64(0x0101010101010101)


@nb.njit(**_JIT, inline="always")
def _times_x(a):
    """x * a for an element a (0..15): shift up, fold bit 4 back as x + 1."""
    return ((a << 1) & 15) ^ (((a >> 3) & 1) * 3)


@nb.njit(**_JIT)
def scalar_table(c, out, at):
    """c's form into out[at : at + 4] (uint64): T_lo (entries 0..7, then 8..15, one byte each)
    and T_hi = T_lo << 4. T[x] is the sum of c x^k over the set bits k of x, each c x^k spread to
    every byte and masked to the entries with bit k: shifts and masks only, c may be secret."""
    p0 = np.int64(c) & 15
    p1 = _times_x(p0)
    p2 = _times_x(p1)
    p3 = _times_x(p2)
    low = ((np.uint64(p0) * _SPREAD) & _ODD) ^ ((np.uint64(p1) * _SPREAD) & _PAIRS) \
        ^ ((np.uint64(p2) * _SPREAD) & _HIGH)
    high = low ^ (np.uint64(p3) * _SPREAD)      # entries 8..15 have bit 3
    out[at] = low
    out[at + 1] = high
    out[at + 2] = low << np.uint64(4)           # entries are below 16: no byte overflows
    out[at + 3] = high << np.uint64(4)


@nb.njit(**_JIT)
def scalar_tables(B):
    """The forms of every element of the 2-D array B, (B.size, 4) uint64, element (r, c) at row
    r * C + c. B may be secret."""
    R, C = B.shape
    out = np.empty((R * C, 4), np.uint64)
    flat = out.reshape(R * C * 4)
    for r in range(R):
        for c in range(C):
            scalar_table(B[r, c], flat, 4 * (r * C + c))
    return out


def multiply_bytes(x: np.ndarray, form: np.ndarray) -> np.ndarray:
    """c * x for the uint64 words x (16 elements each) and c's form (4 words), for the Python
    twins. A shuffle reads a register, not memory, so the twin selects every table entry by
    masks instead of indexing the table with the (secret) nibbles."""
    tables = np.asarray(form, np.uint64).view(np.uint8)
    b = x.view(np.uint8)
    low, high = b & 15, b >> 4
    out = np.zeros_like(b)
    for entry in range(16):
        out |= ((low == entry) * tables[entry]) | ((high == entry) * tables[16 + entry])
    return out.view(np.uint64)


@intrinsic
def dot_add_tables(typingctx, dst, d, src, s, step, shrink, forms, t, tstep, count, limbs):
    """``gfni._dot_add`` with shuffle tables: dst[d..] ^= sum_q c_q src[s_q ..] for q < count,
    c_q's form at row t + q tstep of ``forms`` (2-D uint64, four words a row), source offsets
    from s growing by step - q shrink. One slot of len(limbs) 32-byte blocks accumulated in
    registers; each term's tables are loaded once and broadcast to both 128-bit lanes, each
    source block split into nibbles once. No bounds check."""
    if not (arrays_ok(dst, src) and isinstance(limbs, types.UniTuple) and isinstance(forms, types.Array)
            and forms.dtype == types.uint64 and forms.ndim == 2 and forms.layout == "C"):
        return None
    blocks = limbs.count
    dstep, sstep = 256 // dst.dtype.bitwidth, 256 // src.dtype.bitwidth
    sig = types.void(dst, d, src, s, step, shrink, forms, t, tstep, count, limbs)

    def codegen(context, builder, signature, args):
        g = Codegen(context, builder)
        kinds = signature.args
        i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        half = ir.VectorType(i8, 16)
        octets = g.octets
        shuffle = builder.module.declare_intrinsic("llvm.x86.avx2.pshuf.b", fnty=ir.FunctionType(octets, [octets, octets]))
        both_lanes = ir.Constant(ir.VectorType(i32, 32), [i % 16 for i in range(32)])
        nibble = ir.Constant(octets, [15] * 32)
        four = ir.Constant(octets, [4] * 32)
        dst_data, src_data = g.data(kinds[0], args[0]), g.data(kinds[2], args[2])
        form_data = g.data(kinds[6], args[6])
        d_, s_, step_, shrink_, t_, tstep_, count_ = (g.index(args[i], kinds[i]) for i in (1, 3, 4, 5, 7, 8, 9))

        def table(row, word):
            ptr = builder.bitcast(builder.gep(form_data, [builder.add(builder.mul(row, i64(4)), i64(word))]),
                                  half.as_pointer())
            value = builder.load(ptr)
            value.align = 8
            return builder.shuffle_vector(value, value, both_lanes)

        slots = []
        for b in range(blocks):
            at = g.block(dst_data, builder.add(d_, i64(dstep * b)))
            acc = cgutils.alloca_once(builder, octets)       # promoted to a register by LLVM
            builder.store(builder.bitcast(g.load(at), octets), acc)
            slots.append((at, acc))
        with cgutils.for_range(builder, count_) as loop:
            q = loop.index
            row = builder.add(t_, builder.mul(q, tstep_))
            low, high = table(row, 0), table(row, 2)
            base = builder.sub(builder.add(s_, builder.mul(q, step_)),
                               builder.mul(shrink_, builder.lshr(builder.mul(q, builder.sub(q, i64(1))), i64(1))))
            for b, (_, acc) in enumerate(slots):
                x = builder.bitcast(g.load(g.block(src_data, builder.add(base, i64(sstep * b)))), octets)
                lo = builder.and_(x, nibble)
                hi = builder.and_(builder.lshr(x, four), nibble)
                product = builder.or_(builder.call(shuffle, [low, lo]), builder.call(shuffle, [high, hi]))
                builder.store(builder.xor(builder.load(acc), product), acc)
        for at, acc in slots:
            builder.store(builder.bitcast(builder.load(acc), g.lanes), at).align = 1
        return context.get_dummy_value()
    return sig, codegen
