"""pqforge's armoured key files: ``keyfile.decode`` on the input as text and ``keyfile.read`` on
the input as a file.

What must hold:
- ``decode`` and ``read`` return or raise ``InvalidKey``/``UnknownAlgorithm`` (PQForgeError);
  nothing else, no hang.
- They agree: of the files in pqforge's armour, ``read`` accepts exactly the ASCII texts that
  ``decode`` accepts with the key type asked for, and returns the same key.
- An accepted key has the size of its algorithm and key type; a file without the checksum line
  is accepted only with the ``MissingChecksum`` warning, one with it never warns.
- Round trip: ``encode`` of a decoded key is decoded to the same key, and is ``encode``'s own
  fixed point. It equals the input whenever the input has the layout ``encode`` writes (checksum
  line, the algorithm's own name, 64-column lines, final newline; CRLF line ends aside): what
  ``decode`` tolerates beyond that is a file without the checksum line (pqforge 0.1.0), other
  spellings of the name, other line breaks in the body and CRLF.
"""

import os
import warnings

import common

with common.instrumented():
    from pqforge import PQForgeError, keyfile

_DIR = common.scratch("keyfile")
_PATH = os.path.join(_DIR, "key")


def _decode(text):
    """(key or None, whether MissingChecksum was warned)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            key = keyfile.decode(text)
        except PQForgeError:
            key = None
    return key, any(issubclass(w.category, keyfile.MissingChecksum) for w in seen)


def _as_written(text: str, name: str) -> bool:
    """Whether ``text`` (LF line ends) has the layout ``encode`` writes."""
    lines = text.split("\n")
    body = lines[2:-2]
    return (text.endswith("\n") and lines[1].startswith("Checksum: ") and f" {name} " in lines[0]
            and bool(body) and all(len(line) == 64 for line in body[:-1]) and 0 < len(body[-1]) <= 64)


def test_one_input(data: bytes) -> None:
    ascii_text = data.isascii()
    text = data.decode("latin-1")       # every byte a character: non-ASCII must be refused too
    key, warned = _decode(text)

    with open(_PATH, "wb") as f:
        f.write(data)
    for kind in keyfile.KINDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", keyfile.MissingChecksum)
            try:
                read = keyfile.read(_PATH, kind)
            except PQForgeError:
                read = None
        if key is not None and ascii_text and key[1] == kind:
            assert read is not None and read[0] is key[0] and read[1] == key[2], "read refused what decode accepts"
        elif data.lstrip().startswith(b"-----BEGIN PQFORGE "):    # (other key formats have harnesses of their own)
            assert read is None, "read accepted what decode refuses"

    if key is None:
        return
    alg, kind, raw = key
    assert ascii_text, "decode accepted a non-ASCII text"
    assert len(raw) == (alg.public_key_size if kind == "PUBLIC" else alg.private_key_size)
    normal = text.replace("\r\n", "\n")
    assert warned == (not normal.split("\n")[1].startswith("Checksum: ")), "MissingChecksum warned wrongly"

    again = keyfile.encode(alg.name, kind, raw)
    key2, warned2 = _decode(again)
    assert key2 == (alg, kind, raw) and not warned2, "encode's output does not decode to the same key"
    assert keyfile.encode(alg.name, kind, key2[2]) == again
    if _as_written(normal, alg.name):
        assert normal == again, "a key file in encode's layout is not encode's output"


if __name__ == "__main__":
    common.main(test_one_input)
