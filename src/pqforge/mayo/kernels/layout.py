"""Between layouts: bit planes and element arrays, and the specification's nibble strings at the
byte boundary of signing and verification (each kernel says which of its data is secret)."""

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from ...gf16.blocks import Codegen, arrays_ok, octets, slot_words
from ...gf16.kernels import bitslice_stream
from ...jit.cache import JIT_CACHE

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads


@nb.njit(**_JIT, inline="always")
def put(dst, at, src):
    """dst[at:at + len(src)] = src, element by element: a slice assignment between arrays compiles
    numba's shape-mismatch message, seconds of a first use. Secret-safe (public positions)."""
    for i in range(src.shape[0]):
        dst[at + i] = src[i]


@nb.njit(**_JIT)
def unbitslice_into(words, length, out):
    """Elements of a bitsliced vector: out[e] = element e (e < length). Secret-safe (shifts only).

    The loop runs limb by limb over bit positions, so each step is a variable shift of the four
    plane words (vectorised)."""
    limbs = words.shape[0] // 4
    one = np.uint64(1)
    for w in range(limbs):
        p0, p1, p2, p3 = words[w], words[limbs + w], words[2 * limbs + w], words[3 * limbs + w]
        base = 64 * w
        for b in range(min(64, length - base)):
            sb = np.uint64(b)
            out[base + b] = ((p0 >> sb) & one) | (((p1 >> sb) & one) << one) \
                | (((p2 >> sb) & one) << np.uint64(2)) | (((p3 >> sb) & one) << np.uint64(3))


@nb.njit(**_JIT)
def encode_upper_into(X, m, out):
    """out = Encode(Upper(X)) for a dense square matrix X of bitsliced m-vectors: for i <= j in
    row order, X[i, j] + X[j, i] (X[i, i] on the diagonal), each as ceil(m/2) nibble-packed
    bytes. Shifts and masks at public positions only: safe on secret data (key generation
    computes X from the oil matrix)."""
    size, W = X.shape[0], X.shape[2]
    mb = (m + 1) // 2
    vec = np.empty(W, np.uint64)
    elements = np.zeros(2 * mb, np.uint8)          # an odd m leaves the last high nibble zero
    at = 0
    for i in range(size):
        for j in range(i, size):
            for w in range(W):
                vec[w] = X[i, j, w] ^ X[j, i, w] if j != i else X[i, j, w]
            unbitslice_into(vec, m, elements)
            for b in range(mb):
                out[at + b] = elements[2 * b] | (elements[2 * b + 1] << 4)
            at += mb


@nb.njit(**_JIT)
def bitslice_into(elements, length, out):
    """out ^= the bitsliced vector of ``length`` elements (out's words are 4 planes of limbs).
    Secret-safe (shifts only)."""
    limbs = out.shape[0] // 4
    one = np.uint64(1)
    for e in range(length):
        v = np.uint64(elements[e])
        w = e >> 6
        b = np.uint64(e & 63)
        for p in range(4):
            out[p * limbs + w] ^= ((v >> np.uint64(p)) & one) << b


@nb.njit(**_JIT)
def slots_to_bitsliced(slots, out):
    """m-vectors from their encoding in W-word slots (``ExpandedPublicKey.nibbles``) to bit
    planes, out (count, W): each slot read as a vector of 16 W nibbles, zero past m. Shifts and
    masks at public positions (``bitslice_stream``): safe on secret data (the expanded secret
    key and signing's products on the GFNI path)."""
    count, W = slots.shape
    stream = np.zeros(count * W + 4, np.uint64)   # the spare word bitslice_stream wants
    for i in range(count):
        for w in range(W):
            stream[i * W + w] = slots[i, w]
    bitslice_stream(stream, 16 * W, out)


@nb.njit(**_JIT)
def decode_nibbles_into(data, out):
    """out (any shape, C order) = the first elements of the nibble string ``data`` (uint8, low
    nibble first). data may be secret (the vinegar bytes in signing): shifts at public positions."""
    flat = out.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = (data[i >> 1] >> (4 * (i & 1))) & 15


@nb.njit(**_JIT)
def encode_nibbles_into(elements, out):
    """out (uint8) = the elements (1-D) two a byte, low nibble first, an odd count padded with 0.
    Public data (a signature's elements)."""
    for b in range(out.shape[0]):
        low = elements[2 * b]
        high = elements[2 * b + 1] if 2 * b + 1 < elements.shape[0] else 0
        out[b] = low | (high << 4)


@nb.njit(**_JIT)
def equals_nibbles(y, data):
    """Whether the elements y equal the first len(y) elements of the nibble string ``data``.
    Public data only (verification's last comparison)."""
    differ = 0
    for i in range(y.shape[0]):
        differ |= y[i] ^ ((data[i >> 1] >> (4 * (i & 1))) & 15)
    return differ == 0


def rows_to_slots(stream, count, row_bytes, chunks, slots):
    """Each of the ``count`` rows of ``stream`` (uint8, row_bytes bytes a row, back to back) at
    the start of its slot in ``slots`` (flat uint64, slots of ``slot_words(chunks)`` words, at
    most 16 len(chunks) bytes a row), zero after it: the keystream of P1 || P2 laid out for the
    encoded kernels. Compiled, a row is copied 16 bytes at a time, the last 16 masked, so
    ``stream`` must have 15 readable bytes after its last row. Public data (the public matrices)."""
    W = slot_words(chunks)
    out = slots.view(np.uint8)
    for r in range(count):
        out[8 * W * r:8 * W * (r + 1)] = 0
        out[8 * W * r:8 * W * r + row_bytes] = stream[r * row_bytes:(r + 1) * row_bytes]


@intrinsic
def _rows_to_slots(typingctx, stream, count, row_bytes, chunks, slots):
    """The compiled ``rows_to_slots``: per row, one unaligned 16-byte load, mask and store a
    chunk, and zero stores for the rest of the slot. No bounds check."""
    if not (arrays_ok(stream, slots) and stream.dtype == types.uint8 and slots.dtype == types.uint64
            and isinstance(chunks, types.UniTuple)):
        return None
    pieces = 2 * ((chunks.count + 1) // 2)          # 16-byte pieces a slot
    sig = types.void(stream, count, row_bytes, chunks, slots)

    def codegen(context, builder, signature, args):
        g = Codegen(context, builder)
        kinds = signature.args
        i64, kind = ir.IntType(64), octets(16)
        src, dst = g.data(kinds[0], args[0]), g.data(kinds[4], args[4])
        dst = builder.bitcast(dst, ir.IntType(8).as_pointer())
        count_, row_ = g.index(args[1], kinds[1]), g.index(args[2], kinds[2])
        # byte j of chunk c is kept where 16 c + j < row_bytes
        masks = []
        for c in range(chunks.count):
            wide = ir.VectorType(i64, 16)
            inside = builder.icmp_unsigned("<", ir.Constant(wide, [16 * c + j for j in range(16)]), g.broadcast(row_, wide))
            masks.append(builder.sext(inside, kind))
        with cgutils.for_range(builder, count_) as rows:
            r = rows.index
            source, target = builder.mul(r, row_), builder.mul(r, i64(16 * pieces))
            for c in range(pieces):
                to = g.block(dst, builder.add(target, i64(16 * c)), kind)
                if c < chunks.count:
                    piece = g.load(g.block(src, builder.add(source, i64(16 * c)), kind))
                    g.store(builder.and_(piece, masks[c]), to)
                else:
                    g.store(ir.Constant(kind, [0] * 16), to)
        return context.get_dummy_value()
    return sig, codegen


@overload(rows_to_slots, inline="always")
def _rows_to_slots_compiled(stream, count, row_bytes, chunks, slots):
    if not isinstance(chunks, types.UniTuple):
        return None

    def impl(stream, count, row_bytes, chunks, slots):
        _rows_to_slots(stream, count, row_bytes, chunks, slots)
    return impl


@nb.njit(**_JIT)
def keystream_to_slots(stream, count, row_bytes, chunks, slots):
    """``rows_to_slots``, compiled, for callers in Python."""
    rows_to_slots(stream, count, row_bytes, chunks, slots)

