"""Output files that are either written whole or not at all.

    outputs = [Output("msg.ct"), Output("ss.bin", secret=True)]
    check_outputs(outputs, force=False)      # before any work: paths usable, nothing overwritten
    ...                                      # the work
    write_outputs(outputs, [ct, ss], force=False)

Every file is first written to a temporary file in its own directory and renamed into place only
when all of them are complete, so a failure leaves no half-written or unmatched output (no
ciphertext whose shared secret was lost). A secret output is created with mode 0600, also when
it replaces an existing file: the rename puts a new file there, it does not reuse the old one's
mode. ``-`` is standard output.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .errors import InvalidInput

STDOUT = "-"


@dataclass(frozen=True)
class Output:
    path: str
    secret: bool = False


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same file where both exist (links included), else
    the same path once resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def check_outputs(outputs: list[Output], force: bool, inputs: dict[str, str] | None = None) -> None:
    """InvalidInput naming the first output that cannot be written (or would be overwritten
    without ``force``), or that is also one of ``inputs`` (what it is -> its path; ``-`` is
    standard input): ``force`` never lets an output replace a file it is made from. Nothing is
    created."""
    seen: list[str] = []
    for out in outputs:
        if out.path == "":
            raise InvalidInput("an output path is empty")
        if out.path == STDOUT and STDOUT in seen:
            raise InvalidInput("only one output can go to standard output ('-')")
        if out.path != STDOUT and any(p != STDOUT and same_file(p, out.path) for p in seen):
            raise InvalidInput(f"{out.path} is given for two outputs")
        seen.append(out.path)
        if out.path == STDOUT:
            continue
        for what, source in (inputs or {}).items():
            if source not in (None, STDOUT) and same_file(source, out.path):
                raise InvalidInput(f"{out.path} is also the {what} (input); writing it would replace it: "
                                   "choose another output path")
        path = Path(out.path)
        if path.is_dir():
            raise InvalidInput(f"{path} is a directory; expected a file path")
        if path.exists() and not force:
            raise InvalidInput(f"{path} exists; use --force to overwrite")
        folder = path.parent
        if not folder.is_dir():
            raise InvalidInput(f"cannot write {path}: directory {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InvalidInput(f"cannot write {path}: directory {folder} is not writable")


def _public_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o644 & ~mask


def write_outputs(outputs: list[Output], contents: list[bytes], force: bool) -> None:
    """Write ``contents[i]`` to ``outputs[i]``: all files complete in temporary files first, then
    renamed into place; standard output last."""
    temps: list[tuple[str, Output]] = []
    placed: list[str] = []
    try:
        for out, data in zip(outputs, contents):
            if out.path == STDOUT:
                continue
            fd, temp = tempfile.mkstemp(dir=Path(out.path).parent, prefix=f".{Path(out.path).name}.", suffix=".tmp")
            temps.append((temp, out))
            with os.fdopen(fd, "wb") as f:   # mkstemp creates the file with mode 0600
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if not out.secret:
                os.chmod(temp, _public_mode())
        while temps:
            temp, out = temps[0]
            _rename(temp, out.path, force)
            temps.pop(0)
            placed.append(out.path)
    except BaseException:
        for path in placed:     # neither: an output whose partner failed is taken back
            os.unlink(path)
        raise
    finally:
        for temp, _ in temps:
            os.unlink(temp)
    for out, data in zip(outputs, contents):
        if out.path == STDOUT:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()


@contextmanager
def streamed_output(out: Output, force: bool) -> Iterator[BinaryIO]:
    """A binary file for one output written piece by piece (so that it need not be held whole):
    a temporary file renamed into place when the block ends without an error, removed when it
    ends with one; standard output is written as it comes."""
    if out.path == STDOUT:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    fd, temp = tempfile.mkstemp(dir=Path(out.path).parent, prefix=f".{Path(out.path).name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:   # mkstemp creates the file with mode 0600
            yield f
            f.flush()
            os.fsync(f.fileno())
        if not out.secret:
            os.chmod(temp, _public_mode())
        _rename(temp, out.path, force)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _rename(temp: str, path: str, force: bool) -> None:
    if force:
        os.replace(temp, path)
        return
    try:                       # a hard link never replaces a file that appeared since the check
        os.link(temp, path)
    except FileExistsError:
        raise InvalidInput(f"{path} exists; use --force to overwrite") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.exists(path):   # no hard links on this file system
            raise InvalidInput(f"{path} exists; use --force to overwrite") from None
        os.replace(temp, path)
        return
    os.unlink(temp)
