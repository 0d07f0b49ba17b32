"""MAYO-1/2/3/5 verification through the public API with malformed signatures, messages, public
keys (compact and expanded), NIST signed messages, and keys constructed from bytes.

The input picks a parameter set and what to change; the change is made to a valid key pair,
message and signature of that set (``common.patched``: a few bytes overwritten, maybe cut or
extended), since a fuzzer input is smaller than most MAYO keys.

What must hold:
- Only PQForgeError and its subclasses are raised (``InvalidSignature``, which is pyca's too,
  ``InvalidKey``, ``InvalidType``); nothing else, no hang.
- Never a wrong accept: a changed signature, message or signed message does not verify.
- The functional layer (``mayo.verify``: False for a signature of the wrong length), the key
  object (``verify``: None or InvalidSignature) and the NIST API (``open_nist``) give the same
  verdict; bytes, bytearray and memoryview give the same verdict; a str is an InvalidType.
- A public key of the wrong length is an InvalidKey, in the constructor and in ``mayo.verify``
  (which takes the compact or the expanded length); any bytes of the compact length are a key,
  and verify as they do in expanded form (``expand_pk``).
- A private key from any seed of the right length (others: InvalidKey) signs, and its
  signature verifies under its public key.

Every byte string of a length MAYO accepts decodes (seed, packed nibbles, salt), so the Python
checks before the compiled kernels are the length and type checks this harness reaches.
"""

import atheris

import common

with common.instrumented():
    from pqforge import InvalidKey, InvalidSignature, InvalidType
    from pqforge import mayo
    from pqforge.drbg import NistCtrDrbg

MESSAGE = b"pqforge fuzz message"


def _object_verdict(key, sig, msg) -> bool:
    try:
        key.verify(sig, msg)
        return True
    except InvalidSignature:
        return False


class _Set:
    """A parameter set's valid key pair, message and signature, and a key object in steady use."""

    def __init__(self, alg):
        self.alg = alg
        sk = alg.generate_private_key(rng=NistCtrDrbg(bytes(48)))
        self.pk = sk.public_key().public_bytes_raw()
        self.sig = sk.sign(MESSAGE, rng=NistCtrDrbg(bytes(range(48))))
        self.epk = mayo.expand_pk(alg, self.pk)
        self.key = alg.public_key_from_bytes(self.pk)
        assert self.verdict(self.pk, MESSAGE, self.sig)

    def verdict(self, pk, msg, sig) -> bool:
        """The functional layer's verdict, which the key object (for a public key of the compact
        length) must share."""
        verdict = mayo.verify(self.alg, pk, msg, sig)
        if len(pk) == self.alg.public_key_size:
            key = self.key if pk == self.pk else self.alg.public_key_from_bytes(pk)
            assert _object_verdict(key, sig, msg) == verdict, "key object and mayo.verify disagree"
        return verdict


SETS = [_Set(alg) for alg in mayo.ALGORITHMS.values()]


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    s = SETS[fdp.ConsumeIntInRange(0, len(SETS) - 1)]
    alg = s.alg
    mode = fdp.ConsumeIntInRange(0, 5)

    if mode == 0:           # a changed signature, in some bytes-like type
        sig = common.patched(s.sig, fdp)
        verdict = s.verdict(s.pk, MESSAGE, sig)
        assert verdict == (sig == s.sig), "a changed signature verifies" if verdict else "the signature is refused"
        wrap = fdp.ConsumeIntInRange(0, 2)
        other = bytearray(sig) if wrap == 0 else memoryview(sig) if wrap == 1 else sig.decode("latin-1")
        try:
            assert mayo.verify(alg, s.pk, MESSAGE, other) == verdict, "bytearray or memoryview verify otherwise"
            assert wrap != 2, "a str signature was taken"
        except InvalidType:
            assert wrap == 2, "bytearray or memoryview refused"
    elif mode == 1:         # a changed message
        msg = common.patched(MESSAGE, fdp) if fdp.ConsumeBool() else fdp.ConsumeBytes(fdp.remaining_bytes())
        verdict = s.verdict(s.pk, msg, s.sig)
        assert verdict == (msg == MESSAGE), "a changed message verifies" if verdict else "the message is refused"
    elif mode == 2:         # a changed compact public key
        pk = common.patched(s.pk, fdp)
        try:
            alg.public_key_from_bytes(pk)
            assert len(pk) == alg.public_key_size
        except InvalidKey:
            assert len(pk) != alg.public_key_size, "a public key of the right length refused"
        try:
            verdict = s.verdict(pk, MESSAGE, s.sig)
        except InvalidKey:
            assert len(pk) not in (alg.public_key_size, alg.params.epk_bytes), "a key of a valid length refused"
            return
        if len(pk) == alg.public_key_size:
            assert mayo.verify(alg, mayo.expand_pk(alg, pk), MESSAGE, s.sig) == verdict, \
                "compact and expanded keys disagree"
            if pk == s.pk:
                assert verdict
    elif mode == 3:         # a changed expanded public key
        epk = common.patched(s.epk, fdp)
        try:
            verdict = mayo.verify(alg, epk, MESSAGE, s.sig)
        except InvalidKey:
            assert len(epk) not in (alg.public_key_size, alg.params.epk_bytes), "a key of a valid length refused"
            return
        if epk == s.epk:
            assert verdict, "the expanded key refuses its signature"
    elif mode == 4:         # a changed NIST signed message
        sm = common.patched(s.sig + MESSAGE, fdp)
        try:
            opened = mayo.open_nist(alg, s.pk, sm)
        except InvalidSignature:
            assert sm != s.sig + MESSAGE, "the signed message is refused"
            return
        assert sm == s.sig + MESSAGE and opened == MESSAGE, "a changed signed message opens"
    else:                   # a private key from any bytes
        seed = fdp.ConsumeBytes(alg.private_key_size + fdp.ConsumeIntInRange(-2, 2))
        try:
            sk = alg.private_key_from_bytes(seed)
        except InvalidKey:
            assert len(seed) != alg.private_key_size, "a seed of the right length refused"
            return
        sig = sk.sign(MESSAGE, rng=NistCtrDrbg(bytes(48)))
        sk.public_key().verify(sig, MESSAGE)


if __name__ == "__main__":
    common.main(test_one_input)
