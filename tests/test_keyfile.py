"""Key files: every single changed character is reported, never decoded into another key."""

import base64
import string

import pytest

from pqforge import keyfile
from pqforge.errors import InvalidKey

B64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"


@pytest.mark.parametrize("alg,kind,size", [("MAYO-2", "PRIVATE", 24), ("MAYO-5", "PRIVATE", 40),
                                           ("Classic-McEliece-348864", "PRIVATE", 6492)])
def test_every_changed_character_is_reported(alg, kind, size):
    raw = bytes((7 * i + 3) % 256 for i in range(size))
    text = keyfile.encode(alg, kind, raw)
    assert keyfile.decode(text)[2] == raw
    first_body = text.index("\n", text.index("Checksum:")) + 1
    step = max(1, (len(text) - first_body) // 200)      # the whole body of small keys, a sample of large ones
    positions = list(range(text.index("Checksum: ") + 10, first_body - 1)) + list(range(first_body, len(text), step))
    for i in positions:
        if text[i] == "\n" or text[i] == "-":
            continue
        alphabet = "0123456789abcdef" if i < first_body else B64
        for c in (alphabet[(alphabet.index(text[i]) + 1) % len(alphabet)] if text[i] in alphabet else "A",
                  alphabet[(alphabet.index(text[i]) + 37) % len(alphabet)] if text[i] in alphabet else "B"):
            changed = text[:i] + c + text[i + 1:]
            with pytest.raises(InvalidKey):
                keyfile.decode(changed)


def test_a_non_canonical_last_character_is_reported():
    raw = bytes(range(24))                  # 24 bytes: 32 characters, no padding; use 23 for one '='
    raw = raw[:23]
    body = base64.b64encode(raw).decode()
    assert body.endswith("=")
    last = body[-2]                        # its low two bits are padding; changing them keeps the bytes
    sibling = B64[B64.index(last) ^ 1]
    assert base64.b64decode(body[:-2] + sibling + "=") == raw
    text = keyfile.encode("MAYO-2", "PUBLIC", raw).replace(body[-4:], body[-4:-2] + sibling + "=")
    with pytest.raises(InvalidKey, match="canonical"):
        keyfile.decode(text)


def test_checksum_covers_the_algorithm_and_key_type():
    raw = bytes(24)
    text = keyfile.encode("MAYO-2", "PRIVATE", raw)
    with pytest.raises(InvalidKey, match="checksum"):
        keyfile.decode(text.replace("MAYO-2", "MAYO-1"))
    assert keyfile.checksum("MAYO-2", "PRIVATE", raw) != keyfile.checksum("MAYO-1", "PRIVATE", raw)
    assert keyfile.checksum("MAYO-2", "PRIVATE", raw) != keyfile.checksum("MAYO-2", "PUBLIC", raw)


def test_file_without_checksum_warns():
    text = keyfile.encode("MAYO-2", "PRIVATE", bytes(24))
    old = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("Checksum"))
    with pytest.warns(keyfile.MissingChecksum, match="no checksum"):
        assert keyfile.decode(old)[2] == bytes(24)


def test_read_takes_the_file_as_decode_takes_text(tmp_path):
    # a lone CR inside the body (found by fuzz/fuzz_keyfile.py): read once turned it into a line
    # break and accepted the file that decode refuses; CRLF line ends are accepted by both
    text = keyfile.encode("MAYO-2", "PRIVATE", bytes(range(24)))
    path = tmp_path / "key"
    body = text.index("\n", text.index("Checksum")) + 1
    stray = text[:body + 8] + "\r" + text[body + 8:]
    for bad in (stray, text.replace("\n", "\r")):
        with pytest.raises(InvalidKey):
            keyfile.decode(bad)
        path.write_bytes(bad.encode())
        with pytest.raises(InvalidKey):
            keyfile.read(path, "PRIVATE")
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert keyfile.read(path, "PRIVATE")[1] == bytes(range(24))
