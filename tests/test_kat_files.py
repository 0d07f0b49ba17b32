"""Reading .rsp files: a malformed file is an InvalidInput, never another exception, and the
text and file readers take the same text to the same entries (cases found by fuzz/fuzz_kat.py)."""

import gzip

import pytest

from pqforge import InvalidInput, kat


@pytest.mark.parametrize("text", ["count = zero\n", "count = 0\npk = 0G\n", "count = " + "9" * 5000 + "\n",
                                  "count = 0\nno separator\n"])
def test_a_malformed_line_is_invalid_input(tmp_path, text):
    path = tmp_path / "kat.rsp"
    path.write_text(text)
    for read in (lambda: kat.parse_rsp(text), lambda: kat.read_rsp(path)):
        with pytest.raises(InvalidInput, match="malformed KAT line"):
            read()


@pytest.mark.parametrize("content", [b"\x1f\x8b\x08\x00garbage", b"count = 0\n", gzip.compress("pk = \xe9\n".encode("latin-1"))])
def test_a_corrupt_gz_file_or_a_text_not_utf8_is_invalid_input(tmp_path, content):
    path = tmp_path / "kat.rsp.gz"
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match="not a readable .rsp file"):
        kat.read_rsp(path)


@pytest.mark.parametrize("text", ["count = 0\n  pk = AB\n", "count = 0\n \ncount = 1\n", "count = 0\rpk = AB\r\rcount = 1\r",
                                  "count = 0\r\npk = AB\r\n\r\ncount = 1\r\n"])
def test_text_and_file_readers_agree(tmp_path, text):
    # indented lines, a blank line of spaces and CR line ends: parse_rsp once read them
    # otherwise than iter_rsp, or refused them
    path = tmp_path / "kat.rsp"
    path.write_bytes(text.encode())
    entries = kat.parse_rsp(text)
    assert entries == kat.read_rsp(path) and entries[0]["count"] == 0
    assert kat.parse_rsp(kat.entries_text(entries)) == entries
