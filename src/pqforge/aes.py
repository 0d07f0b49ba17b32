"""AES-128-CTR as compiled code with the CPU's AES instructions (AES-NI and VAES on x86-64,
the ARMv8 cryptographic extension on aarch64).

``symmetric.aes128_ctr*`` turns MAYO's public seed into P1 || P2 with it wherever the kernel set
is an encoded one (``gf16.sets.AES_WIDTH``), and with OpenSSL (the ``cryptography`` package)
everywhere else. The cipher itself is the processor's: ``aesenc`` (x86) or ``aese`` + ``aesmc``
(ARM) do a round; x86's ``aeskeygenassist`` a step of the key schedule, for which ARM's ``aese``
on the last word copied to all four columns gives the same substituted word. What is written
here is the counter, the order of the rounds and the schedule's word shifts (FIPS 197, section
5.2). Two reasons: a new OpenSSL cipher context costs about 5 µs, a third of what MAYO-2's
whole verification takes in the C code, and a compiled loop can expand many keys without
returning to the interpreter (which holds the GIL).

Widths: one AES instruction encrypts 1 block (AES-NI, ARMv8), 2 (VAES on 256-bit registers) or
4 (VAES with AVX-512); 8 registers are in flight at a time, which hides the instruction's latency.

Constant time: the AES instructions take the same time for every key and data, there are no
tables, and the loop bounds come from the output's length. MAYO's key is its public seed.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from .jit.cache import JIT_CACHE
from .jit.target import architecture

IN_FLIGHT = 8
"""Registers encrypted side by side in the main loop."""

_SUFFIX = {1: "", 2: ".256", 4: ".512"}
_RCON = (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36)


def _x86_substituted(b, key, rcon):
    """SubWord(RotWord(w3)) ^ rcon in every word, for the last word w3 of ``key`` (<2 x i64>): from
    ``aeskeygenassist``, which gives it in word 3."""
    block, words = ir.VectorType(ir.IntType(64), 2), ir.VectorType(ir.IntType(32), 4)
    assist = b.module.declare_intrinsic("llvm.x86.aesni.aeskeygenassist",
                                        fnty=ir.FunctionType(block, [block, ir.IntType(8)]))
    t = b.bitcast(b.call(assist, [key, ir.Constant(ir.IntType(8), rcon)]), words)
    return b.shuffle_vector(t, t, ir.Constant(words, [3] * 4))


def _arm_substituted(b, key, rcon):
    """The same from ARM's ``aese`` with a zero round key: on w3 in all four columns its
    ShiftRows moves equal bytes, so every word is SubWord(w3); then the rotation (RotWord
    commutes with SubWord) and rcon."""
    i32, words = ir.IntType(32), ir.VectorType(ir.IntType(32), 4)
    octets = ir.VectorType(ir.IntType(8), 16)
    aese = b.module.declare_intrinsic("llvm.aarch64.crypto.aese", fnty=ir.FunctionType(octets, [octets, octets]))
    w = b.bitcast(key, words)
    spread = b.shuffle_vector(w, w, ir.Constant(words, [3] * 4))
    sub = b.call(aese, [b.bitcast(spread, octets), ir.Constant(octets, [0] * 16)])
    word = b.extract_element(b.bitcast(sub, words), i32(0))
    t = b.xor(b.or_(b.lshr(word, i32(8)), b.shl(word, i32(24))), i32(rcon))
    return b.shuffle_vector(b.insert_element(ir.Constant(words, ir.Undefined), t, i32(0)),
                            ir.Constant(words, ir.Undefined), ir.Constant(words, [0] * 4))


def _round_keys(builder, key_ptr):
    """The 11 round keys of AES-128 (<2 x i64> each) from the 16 key bytes at ``key_ptr``:
    w[i] = w[i-1] ^ w[i-4] in words, with SubWord(RotWord(w[i-1])) ^ rcon every fourth word."""
    b = builder
    block, words = ir.VectorType(ir.IntType(64), 2), ir.VectorType(ir.IntType(32), 4)
    substituted = _arm_substituted if architecture() == "aarch64" else _x86_substituted
    zero = ir.Constant(words, [0] * 4)
    key = b.load(b.bitcast(key_ptr, block.as_pointer()))
    key.align = 1
    keys = [key]
    for rcon in _RCON:
        t = substituted(b, key, rcon)
        w = b.bitcast(key, words)
        w = b.xor(w, b.shuffle_vector(zero, w, ir.Constant(words, [0, 4, 5, 6])))   # prefix XOR of
        w = b.xor(w, b.shuffle_vector(zero, w, ir.Constant(words, [0, 1, 4, 5])))   # the four words
        key = b.bitcast(b.xor(w, t), block)
        keys.append(key)
    return keys


def _x86_rounds(b, vec, w):
    """AES-128 on a register of blocks: round key 0, then ``aesenc`` and ``aesenclast``."""
    enc, last = (b.module.declare_intrinsic(f"llvm.x86.aesni.{name}{_SUFFIX[w]}", fnty=ir.FunctionType(vec, [vec, vec]))
                 for name in ("aesenc", "aesenclast"))

    def rounds(x, keys):
        x = b.xor(x, keys[0])
        for k in keys[1:10]:
            x = b.call(enc, [x, k])
        return b.call(last, [x, keys[10]])
    return rounds


def _arm_rounds(b, vec, w):
    """The same with ``aese`` (AddRoundKey, SubBytes, ShiftRows) and ``aesmc`` (MixColumns),
    whose round key comes first: keys 0 to 9 go into ``aese``, key 10 is added at the end."""
    octets = ir.VectorType(ir.IntType(8), 16)
    aese = b.module.declare_intrinsic("llvm.aarch64.crypto.aese", fnty=ir.FunctionType(octets, [octets, octets]))
    aesmc = b.module.declare_intrinsic("llvm.aarch64.crypto.aesmc", fnty=ir.FunctionType(octets, [octets]))

    def rounds(x, keys):
        x = b.bitcast(x, octets)
        for k in keys[:9]:
            x = b.call(aesmc, [b.call(aese, [x, b.bitcast(k, octets)])])
        return b.xor(b.bitcast(b.call(aese, [x, b.bitcast(keys[9], octets)]), vec), keys[10])
    return rounds


@intrinsic
def _keystream(typingctx, out, key, width):
    """out[:] = the AES-128-CTR keystream of ``key`` (16 bytes) from the all-zero counter block,
    ``len(width)`` blocks per instruction. No bounds check on ``key``."""
    if not (isinstance(out, types.Array) and out.dtype == types.uint8 and out.ndim == 1 and out.layout == "C"
            and isinstance(key, types.Array) and key.dtype == types.uint8 and isinstance(width, types.UniTuple)
            and width.count in (_SUFFIX if architecture() == "x86_64" else (1,))):
        return None
    w = width.count

    def codegen(context, builder, signature, args):
        b = builder
        i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        vec = ir.VectorType(i64, 2 * w)
        rounds = (_arm_rounds if architecture() == "aarch64" else _x86_rounds)(b, vec, w)
        bswap = b.module.declare_intrinsic("llvm.bswap", [i64])
        out_arr = context.make_array(signature.args[0])(context, b, args[0])
        key_arr = context.make_array(signature.args[1])(context, b, args[1])
        # every round key in each of the register's w blocks
        spread = ir.Constant(ir.VectorType(i32, 2 * w), [i % 2 for i in range(2 * w)])
        keys = [b.shuffle_vector(k, k, spread) for k in _round_keys(b, key_arr.data)]
        nbytes = out_arr.nitems
        step = 16 * w

        def encrypt(first_block, count):
            """``count`` registers of counter blocks first_block, first_block + 1, ..."""
            regs = []
            for r in range(count):
                x = ir.Constant(vec, [0] * (2 * w))
                for j in range(w):       # the counter, big-endian, in the block's last 8 bytes
                    counter = b.call(bswap, [b.add(first_block, i64(r * w + j))])
                    x = b.insert_element(x, counter, i32(2 * j + 1))
                regs.append(x)
            return [rounds(x, keys) for x in regs]

        def store(x, at):
            st = b.store(x, b.bitcast(b.gep(out_arr.data, [at]), vec.as_pointer()))
            st.align = 1

        groups = b.udiv(nbytes, i64(step * IN_FLIGHT))
        with cgutils.for_range(b, groups) as loop:
            first = b.mul(loop.index, i64(w * IN_FLIGHT))
            for r, x in enumerate(encrypt(first, IN_FLIGHT)):
                store(x, b.mul(b.add(first, i64(r * w)), i64(16)))
        done = b.mul(groups, i64(step * IN_FLIGHT))
        with cgutils.for_range(b, b.udiv(b.sub(nbytes, done), i64(step))) as loop:
            at = b.add(done, b.mul(loop.index, i64(step)))
            store(encrypt(b.udiv(at, i64(16)), 1)[0], at)
        done = b.sub(nbytes, b.urem(nbytes, i64(step)))
        tail = b.sub(nbytes, done)
        with b.if_then(b.icmp_unsigned("!=", tail, i64(0))):     # the last, partial register
            spill = cgutils.alloca_once(b, vec)
            b.store(encrypt(b.udiv(done, i64(16)), 1)[0], spill)
            spill_bytes = b.bitcast(spill, i8.as_pointer())
            with cgutils.for_range(b, tail) as loop:
                b.store(b.load(b.gep(spill_bytes, [loop.index])), b.gep(out_arr.data, [b.add(done, loop.index)]))
        return context.get_dummy_value()
    return types.void(out, key, width), codegen


def keystream(out, key, width):
    """out[:] = the AES-128-CTR keystream of ``key`` from the all-zero counter block: in Python
    (the plain-Python twins of the kernels that call it) by OpenSSL, compiled by ``_keystream``."""
    cipher = Cipher(algorithms.AES(bytes(key)), modes.CTR(bytes(16))).encryptor()
    out[:] = np.frombuffer(cipher.update(bytes(len(out))), np.uint8)


@overload(keystream, inline="always")
def _keystream_compiled(out, key, width):
    if len(width) == 0:         # no AES instructions (``gf16.sets.AES_WIDTH`` 0): OpenSSL expands instead
        def unavailable(out, key, width):
            raise ValueError("this CPU has no AES instructions for the compiled AES-128")
        return unavailable

    def impl(out, key, width):
        _keystream(out, key, width)
    return impl


@nb.njit(cache=JIT_CACHE, nogil=True)
def keystream_into(key, out, width):
    """out[:] = AES-128-CTR(key) from the all-zero counter block (the keystream: ``len(out)``
    bytes), ``len(width)`` blocks per AES instruction (1, 2 or 4, which the CPU must have: see
    ``gf16.sets.AES_WIDTH``). ``key``: 16 bytes (uint8)."""
    if key.shape[0] != 16:
        raise ValueError("AES-128 takes a 16-byte key")
    keystream(out, key, width)
