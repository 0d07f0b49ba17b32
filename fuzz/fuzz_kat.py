"""Known-answer files (.rsp): ``kat.parse_rsp`` on the input as text, ``kat.iter_rsp`` on it as a
plain file, as a gzipped file, and as a .gz file however corrupt.

What must hold:
- Only ``InvalidInput`` (PQForgeError) is raised, for a malformed line, a text that is not UTF-8
  or a corrupt .gz file; nothing else, no hang.
- ``parse_rsp`` and ``iter_rsp`` agree: the same entries from the same text, plain or gzipped,
  or both refuse it.
- Round trip: the text ``entries_text`` writes of the entries parses to the same entries, and
  is its own fixed point (the form whose SHA-256 the published hashes cover).
"""

import gzip
import os

import common

with common.instrumented():
    from pqforge import InvalidInput, kat

_DIR = common.scratch("kat")
_PLAIN = os.path.join(_DIR, "kat.rsp")
_GZIP = os.path.join(_DIR, "kat.rsp.gz")


def _read(path):
    try:
        return kat.read_rsp(path)
    except InvalidInput:
        return None


def test_one_input(data: bytes) -> None:
    with open(_GZIP, "wb") as f:       # the input as a .gz file: corrupt, nearly always
        f.write(data)
    _read(_GZIP)

    with open(_PLAIN, "wb") as f:
        f.write(data)
    with open(_GZIP, "wb") as f:
        f.write(gzip.compress(data, compresslevel=1))
    plain, zipped = _read(_PLAIN), _read(_GZIP)
    assert plain == zipped, "a gzipped file reads differently from the plain one"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        assert plain is None, "iter_rsp read a file that is not UTF-8"
        return
    try:
        parsed = kat.parse_rsp(text)
    except InvalidInput:
        parsed = None
    assert parsed == plain, "parse_rsp and iter_rsp disagree"
    if parsed is None:
        return

    text2 = kat.entries_text(parsed)
    again = kat.parse_rsp(text2)
    assert again == parsed, "entries_text's text parses to other entries"
    assert kat.entries_text(again) == text2


if __name__ == "__main__":
    common.main(test_one_input)
