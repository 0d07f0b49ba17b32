"""Classic McEliece, every parameter set, through the public API: ``decapsulate`` with malformed
ciphertexts and private keys, the key constructors and ``encapsulate`` with malformed keys.

The input picks a parameter set and what to change; the change is made to a valid key pair and
ciphertext of that set (``common.patched``), since the keys are far larger than a fuzzer input.

What must hold:
- Only PQForgeError and its subclasses are raised; nothing else, no hang.
- Implicit rejection: a ciphertext of the wrong length is an InvalidInput (so are nonzero padding
  bits, which only 6960119's 1547-bit ciphertext has); any other changed ciphertext gives the
  specification's rejection key SHAKE256(0 | s | C), never an exception, unless the change only
  moved error positions (C = He, H = [I | T]: a changed bit of C flips that bit of e) and e kept
  weight t, when it decodes to SHAKE256(1 | e' | C). The unchanged ciphertext gives the shared
  secret. The key object and the functional layer agree.
- A private key is refused (InvalidKey) by its constructor exactly when ``decapsulate`` refuses
  it: the constructor's checks (length, pivot field, Goppa encoding) are those of the compiled
  decapsulation. A key changed only in delta or s (which decoding does not use) still gives the
  valid ciphertext's shared secret.
- A public key is refused (InvalidKey: its length, or padding bits for 6960119) by its
  constructor exactly when ``encapsulate`` refuses it; the valid key's encapsulation decapsulates
  to its shared secret.

The length and padding checks are in Python; the pivot field and Goppa encoding checks of a
private key, the decoding and the public key's padding check inside ``encapsulate`` are compiled,
which is why the harness compares each with its Python-side counterpart.
"""

import hashlib

import atheris

import common

with common.instrumented():
    from pqforge import InvalidInput, InvalidKey
    from pqforge import mceliece
    from pqforge.drbg import NistCtrDrbg
    from pqforge.mceliece import scheme


class _Set:
    """A parameter set's valid key pair, ciphertext and shared secret, and its key objects."""

    def __init__(self, alg):
        self.alg = alg
        self.pk, self.sk = alg.keypair(rng=NistCtrDrbg(bytes(48)))
        self.ct, self.ss = alg.encapsulate(self.pk, rng=NistCtrDrbg(bytes(range(48))))
        self.key = alg.private_key_from_bytes(self.sk)
        assert self.key.decapsulate(self.ct) == self.ss
        # the error vector e of that encapsulation (the same draws), an n-bit integer
        positions = scheme.fixed_weight(alg.params, NistCtrDrbg(bytes(range(48))))
        self.e = sum(1 << int(i) for i in positions)
        assert self.confirmed(self.e, self.ct) == self.ss

    def confirmed(self, e: int, ct: bytes) -> bytes:
        """SHAKE256(1 | e | C): the shared secret of a ciphertext that decodes to e."""
        return hashlib.shake_256(b"\1" + e.to_bytes(self.alg.params.n // 8, "little") + ct).digest(32)

    def rejection(self, sk: bytes, ct: bytes) -> bytes:
        """SHAKE256(0 | s | C), s being the private key's last n/8 bytes."""
        s = sk[len(sk) - self.alg.params.n // 8:]
        return hashlib.shake_256(b"\0" + s + ct).digest(32)


SETS = [_Set(alg) for alg in mceliece.ALGORITHMS.values()]


def _padding_ok(s, ct: bytes) -> bool:
    spare = s.alg.params.mt % 8
    return not spare or ct[-1] >> spare == 0


def _takes(constructor, key: bytes) -> bool:
    """Whether a key constructor takes ``key`` (InvalidKey is its refusal)."""
    try:
        constructor(key)
    except InvalidKey:
        return False
    return True


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    s = SETS[fdp.ConsumeIntInRange(0, len(SETS) - 1)]
    alg = s.alg
    mode = fdp.ConsumeIntInRange(0, 2)

    if mode == 0:           # a changed ciphertext
        ct = common.patched(s.ct, fdp)
        try:
            ss = s.key.decapsulate(ct)
        except InvalidInput:
            assert len(ct) != alg.ciphertext_size or not _padding_ok(s, ct), "a valid ciphertext refused"
            return
        assert len(ct) == alg.ciphertext_size and _padding_ok(s, ct), "a malformed ciphertext taken"
        assert alg.decapsulate(s.sk, ct) == ss, "key object and functional layer disagree"
        # C = He with H = [I | T]: changing bit i of C moves e's bit i, so the changed ciphertext
        # decodes to e' = e ^ change when that has weight t (then uniquely: the code corrects t
        # errors) and is rejected otherwise (beyond t errors it could decode only by a codeword
        # at distance 2t + 1 or more, a negligible chance)
        e = s.e ^ int.from_bytes(ct, "little") ^ int.from_bytes(s.ct, "little")
        if e.bit_count() == alg.params.t:
            assert ss == s.confirmed(e, ct), "a changed ciphertext of weight t does not decode"
        else:
            assert ss == s.rejection(s.sk, ct), "a changed ciphertext is not implicitly rejected"
    elif mode == 1:         # a changed private key
        sk = common.patched(s.sk, fdp)
        taken = _takes(alg.private_key_from_bytes, sk)
        try:
            ss = alg.decapsulate(sk, s.ct)
        except InvalidKey:
            assert not taken, "decapsulate refuses a private key its constructor takes"
            return
        assert taken, "decapsulate takes a private key its constructor refuses"
        # decoding uses neither delta (the first 32 bytes) nor s (the last n/8, used only to reject)
        kept = slice(32, len(s.sk) - alg.params.n // 8)
        if len(sk) == len(s.sk) and sk[kept] == s.sk[kept]:
            assert ss == s.ss, "a private key changed only in delta or s decapsulates otherwise"
    else:                   # a changed public key
        pk = common.patched(s.pk, fdp)
        taken = _takes(alg.public_key_from_bytes, pk)
        try:
            ct, ss = alg.encapsulate(pk, rng=NistCtrDrbg(bytes(range(48))))
        except InvalidKey:
            assert not taken, "encapsulate refuses a public key its constructor takes"
            return
        assert taken, "encapsulate takes a public key its constructor refuses"
        if pk == s.pk:
            assert (ct, ss) == (s.ct, s.ss)


if __name__ == "__main__":
    common.main(test_one_input)
