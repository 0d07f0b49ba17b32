"""NIST known-answer-test files (.rsp): reading, writing and regeneration from the CTR_DRBG.

Text format: entries of ``key = value`` lines (byte strings in upper-case hex), entries separated
by one blank line. ``entries_text`` renders entries exactly that way (LF line ends, no ``#``
header, a final newline), which is the form whose SHA-256 the published hashes cover.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

Entry = dict[str, Any]
"""One KAT entry: ints for count/mlen/smlen, bytes for the hex fields."""

from .drbg import NistCtrDrbg
from .errors import InvalidInput

_INT_FIELDS = {"count", "mlen", "smlen"}


def _entry(lines: list[str]) -> Entry:
    entry: Entry = {}
    for line in lines:
        key, sep, value = line.partition(" = ")
        try:
            if not sep:
                raise ValueError("expected 'key = value'")
            entry[key] = int(value) if key in _INT_FIELDS else bytes.fromhex(value)
        except ValueError as exc:
            raise InvalidInput(f"malformed KAT line {line[:40]!r}: {str(exc)[:80]}") from None
    return entry


def _entries(lines: Iterable[str]) -> Iterator[Entry]:
    """The entries of an .rsp text given line by line: lines are stripped, ``#`` lines skipped,
    and blank lines end an entry."""
    block: list[str] = []
    for line in lines:
        line = line.strip()
        if line:
            if not line.startswith("#"):
                block.append(line)
        elif block:
            yield _entry(block)
            block = []
    if block:
        yield _entry(block)


def parse_rsp(text: str) -> list[Entry]:
    """Entries of an .rsp text as dicts (ints for count/mlen/smlen, bytes for hex fields);
    InvalidInput for a malformed line."""
    return list(_entries(io.StringIO(text, newline=None)))      # line ends as a file read as text has them


def read_rsp(path: str | Path) -> list[Entry]:
    """Parse an .rsp file (plain or .gz)."""
    return list(iter_rsp(path))


def iter_rsp(path: str | Path) -> Iterator[Entry]:
    """The entries of an .rsp file (plain or .gz, UTF-8) one at a time, as ``parse_rsp`` reads
    them: only one entry's text is held at once, however long the file. InvalidInput for a
    malformed line, a corrupt .gz file or a text that is not UTF-8."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        try:
            yield from _entries(f)
        except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
            raise InvalidInput(f"{path} is not a readable .rsp file: {exc}") from None


def entry_text(entry: Entry) -> str:
    lines = []
    for key, value in entry.items():
        lines.append(f"{key} = {value}" if isinstance(value, int) else f"{key} = {value.hex().upper()}")
    return "\n".join(lines) + "\n"


def entries_text(entries: Iterable[Entry]) -> str:
    return "\n".join(entry_text(e) for e in entries)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def kat_seeds(count: int) -> list[bytes]:
    """The per-entry 48-byte seeds of NIST's KAT generators (DRBG seeded with bytes 0..47)."""
    drbg = NistCtrDrbg(bytes(range(48)))
    return [drbg(48) for _ in range(count)]


def signature_kat_entries(alg: Any, count: int) -> Iterator[Entry]:
    """Regenerate the entries of PQCgenKAT_sign for a signature algorithm object.

    ``alg`` provides ``keypair(rng) -> (pk, sk)`` and ``sign_nist(sk, msg, rng) -> sm``.
    """
    drbg = NistCtrDrbg(bytes(range(48)))
    for i in range(count):
        # NIST's generator draws every seed and message before the first entry; the draws come in
        # the same order here, one entry at a time, so that memory does not grow with ``count``
        seed = drbg(48)
        mlen = 33 * (i + 1)
        msg = drbg(mlen)
        rng = NistCtrDrbg(seed)
        pk, sk = alg.keypair(rng=rng)
        sm = alg.sign_nist(sk, msg, rng=rng)
        yield {"count": i, "seed": seed, "mlen": mlen, "msg": msg, "pk": pk, "sk": sk,
               "smlen": len(sm), "sm": sm}


def kem_kat_entries(alg: Any, count: int) -> Iterator[Entry]:
    """Regenerate the entries of PQCgenKAT_kem for a KEM algorithm object.

    ``alg`` provides ``keypair(rng) -> (pk, sk)``, ``encapsulate(pk, rng) -> (ct, ss)`` and
    ``decapsulate(sk, ct) -> ss``; a decapsulation that disagrees raises.
    """
    drbg = NistCtrDrbg(bytes(range(48)))       # the seeds of ``kat_seeds``, one at a time
    for i in range(count):
        seed = drbg(48)
        rng = NistCtrDrbg(seed)
        pk, sk = alg.keypair(rng=rng)
        ct, ss = alg.encapsulate(pk, rng=rng)
        if alg.decapsulate(sk, ct) != ss:
            raise AssertionError(f"{alg.name} KAT entry {i}: decapsulation disagrees with encapsulation")
        yield {"count": i, "seed": seed, "pk": pk, "sk": sk, "ct": ct, "ss": ss}


def kat_entries(alg: Any, count: int) -> Iterator[Entry]:
    gen: Callable[[Any, int], Iterator[Entry]] = signature_kat_entries if alg.kind == "signature" else kem_kat_entries
    return gen(alg, count)
