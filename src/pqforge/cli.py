"""The ``pqforge`` command: keys, signatures, KEM, known-answer tests, benchmarks.

Exit status: 0 success (or a valid signature), 1 an invalid signature (including one of the
wrong length) or a KAT mismatch, 2 a usage or input error (one line on stderr, no traceback),
130 interrupted (Ctrl-C), 143 terminated (SIGTERM); either ends the command's compile helpers.

Outputs are checked before any work and written whole or not at all (``pqforge.files``);
secret outputs get mode 0600. ``-`` is standard input for inputs and standard output for
outputs; status lines go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib
import itertools
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__, algorithms, keyfile, pkix
from ._memory import retain_freed_heap
from .errors import KernelSetUnavailable, PQForgeError, UnknownAlgorithm
from .files import STDOUT, Output, check_outputs, streamed_output, write_outputs


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error reported as one line (subcommand parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def progress_bar(total: int | None, label: str, unit: str = "it") -> Any:
    """A progress bar on stderr (tqdm): call ``update(n)`` for n more steps and ``close()``;
    without a total, a running count (in thousands, millions). With a total, the rate and the
    time left are measured from the end of the first step on ('?' until a later step is done):
    a first step may compile kernels for seconds where the others take milliseconds. The line
    left at ``close()`` shows the rate over the whole run, first step included (steps per
    second of the command, not of its fast part). A compile notice printed meanwhile goes above
    the bar (``jit.cache._say``)."""
    from tqdm import tqdm

    class AfterFirstStep(tqdm):      # type: ignore[misc]
        first: tuple[int, float] | None = None      # (steps, time) at the end of the first update
        closing = False

        def close(self) -> None:
            self.closing = True
            super().close()

        def update(self, n: float | None = 1) -> bool | None:
            shown: bool | None = super().update(n)
            if self.first is None and self.n > 0:
                self.first = (self.n, self._time())
            return shown

        @property
        def format_dict(self) -> dict[str, Any]:
            meter: dict[str, Any] = super().format_dict
            if self.closing:        # tqdm's rate at close: steps / elapsed, over the whole run
                return meter
            steps, since = (self.n - self.first[0], self._time() - self.first[1]) if self.first else (0, 0.0)
            if steps > 0 and since > 0:
                meter["rate"] = steps / since
            else:
                meter["rate"], meter["initial"] = None, self.n     # tqdm shows '?' (no steps to time)
            return meter

    bar = tqdm if total is None else AfterFirstStep
    return bar(total=total, desc=label, unit=unit, unit_scale=total is None, file=sys.stderr, dynamic_ncols=True)


def _read_input(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror}") from None


PASSPHRASE_ENV = "PQFORGE_PASSPHRASE"
NEW_PASSPHRASE_ENV = "PQFORGE_NEW_PASSPHRASE"


def _passphrase(file: str | None, env: str, option: str) -> bytes | None:
    """The passphrase from ``file`` (its first line, without the line ending, as OpenSSL's
    ``file:`` reads it) or else from the environment variable ``env``; None when neither is set."""
    if file is not None:
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise _UsageError(f"cannot read {option} {file}: {exc.strerror}") from None
        passphrase = data.split(b"\n", 1)[0].removesuffix(b"\r")
        where = f"{option} {file}"
    elif os.environ.get(env) is not None:
        passphrase, where = os.fsencode(os.environ[env]), env
    else:
        return None
    if not passphrase:
        raise _UsageError(f"the passphrase from {where} is empty")
    return passphrase


def _passphrase_for(path: str, args: argparse.Namespace) -> Callable[[], bytes]:
    """What reads an encrypted private key's passphrase: called only when the key is encrypted."""
    def given() -> bytes:
        passphrase = _passphrase(getattr(args, "passphrase_file", None), PASSPHRASE_ENV, "--passphrase-file")
        if passphrase is None:
            raise _UsageError(f"{path} is an encrypted private key: give its passphrase with "
                              f"--passphrase-file FILE or {PASSPHRASE_ENV}")
        return passphrase
    return given


def _load_key(path: str, kind: str | None, args: argparse.Namespace) -> Any:
    """The key object in the key file ``path``, in any format (``pqforge.keyfile.load``)."""
    try:
        data = _read_input(path) if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise _UsageError(f"cannot read key {path}: {exc.strerror}") from None
    return keyfile.load(data, path, kind, _passphrase_for(path, args))


def _read_key(path: str, kind: str, args: argparse.Namespace) -> tuple[Any, bytes]:
    key = _load_key(path, kind, args)
    return key.algorithm, keyfile.raw_bytes(key)


def _status(message: str) -> None:
    """What was done, on stderr: standard output may be carrying a result."""
    print(message, file=sys.stderr)


def _shown(path: str) -> str:
    return "standard output" if path == STDOUT else path


def _int_at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}" if high is None else
                                             f"expected {low} to {high}, got {value}")
        return value
    return parse


def int_between(low: int, high: int) -> Callable[[str], int]:
    """argparse type: a whole number from ``low`` to ``high``."""
    return _int_at_least(low, high)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def positive_float(text: str) -> float:
    value = _number(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


positive_int = _int_at_least(1)


def algorithm_name(name: str, kind: str | None = None) -> str:
    """argparse type: an algorithm name in any accepted spelling, returned in its canonical form;
    a command for one ``kind`` lists only the names of that kind when it does not know one."""
    try:
        return str(algorithms.get(name).name)
    except PQForgeError as exc:
        if isinstance(exc, KernelSetUnavailable):       # the environment, not the argument
            raise _UsageError(str(exc)) from None
        if isinstance(exc, UnknownAlgorithm) and kind is not None:
            what = "signature algorithm" if kind == "signature" else "KEM"
            raise argparse.ArgumentTypeError(f"unknown {what} {name!r}; expected one of: "
                                             f"{', '.join(algorithms.names(kind))}") from None
        raise argparse.ArgumentTypeError(str(exc)) from None


def _signature_algorithm(name: str) -> str:
    return algorithm_name(name, "signature")


def _kem_algorithm(name: str) -> str:
    return algorithm_name(name, "kem")


# -- signature commands -------------------------------------------------------------------------

def _keygen_alg(name: str, kind: str) -> Any:
    """The algorithm ``name`` for the key generation command of ``kind``: one of the other kind
    is a usage error naming the command that makes its keys."""
    alg = algorithms.get(name)
    if alg.kind != kind:
        what, command = (("a KEM", "pqforge kem keygen") if alg.kind == "kem" else
                         ("a signature algorithm", "pqforge keygen"))
        raise _UsageError(f"{alg.name} is {what}: use {command} --alg {alg.name}")
    return alg


def cmd_keygen(args: argparse.Namespace) -> int:
    return _write_key_pair(_keygen_alg(args.alg, "signature"), args)


def _write_key_pair(alg: Any, args: argparse.Namespace) -> int:
    if args.out in ("", STDOUT) or args.out.endswith(("/", os.sep)):
        raise _UsageError(f"--out must be a path prefix for two key files (PREFIX.pk, PREFIX.sk), got {args.out!r}")
    format = getattr(args, "format", None) or keyfile.default_format(alg)
    passphrase = _new_passphrase(getattr(args, "passphrase_file", None), format, "--passphrase-file", PASSPHRASE_ENV,
                                 alg)
    outputs = [Output(args.out + ".pk"), Output(args.out + ".sk", secret=True)]
    check_outputs(outputs, args.force)
    sk = alg.generate_private_key()
    write_outputs(outputs, [keyfile.dump(sk.public_key(), format), keyfile.dump(sk, format, passphrase)], args.force)
    _status(f"wrote {outputs[0].path} and {outputs[1].path} ({alg.name}, {format}"
            f"{', private key encrypted' if passphrase else ''})")
    return 0


def _new_passphrase(file: str | None, format: str, option: str, env: str, alg: Any) -> bytes | None:
    """The passphrase to encrypt a private key of ``alg`` written in ``format`` under, if one is given."""
    passphrase = _passphrase(file, env, option)
    if passphrase is not None and format == "pqforge":
        remedy = ("use --format pem or --format der to encrypt the private key" if alg.name in pkix.OIDS else
                  f"{alg.name} keys have no encrypted format (no object identifier in use for PKCS#8)")
        raise _UsageError(f"a passphrase was given ({option} or {env}) but pqforge key files are not encrypted: {remedy}")
    return passphrase


def _signature_key(path: str, kind: str, args: argparse.Namespace) -> tuple[Any, bytes]:
    alg, key = _read_key(path, kind, args)
    if alg.kind != "signature":
        raise _UsageError(f"{alg.name} is a KEM, not a signature algorithm")
    return alg, key


def cmd_sign(args: argparse.Namespace) -> int:
    out = args.output if args.output is not None else (args.file + ".sig" if args.file != "-" else None)
    if out is None:
        raise _UsageError("signing standard input needs -o FILE (or -o - for standard output) for the signature")
    alg, sk = _signature_key(args.key, "PRIVATE", args)        # the key first: a wrong key is the first thing to fix
    outputs = [Output(out)]
    check_outputs(outputs, args.force, {"message": args.file, "key": args.key})
    msg = _read_input(args.file)
    sig = alg.sign(sk, msg)
    write_outputs(outputs, [sig], args.force)
    _status(f"wrote {_shown(out)} ({alg.name}, {len(sig)} bytes)")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    alg, pk = _signature_key(args.key, "PUBLIC", args)
    msg = _read_input(args.file)
    sig = _read_input(args.signature)
    # a signature of the wrong length is invalid (1), not an error (2): it is the untrusted input
    # whose validity is the question, so a script need not tell the two cases apart
    if len(sig) != alg.signature_size:
        print(f"invalid: a {alg.name} signature is {alg.signature_size} bytes, {args.signature} has {len(sig)}")
        return 1
    if alg.verify(pk, msg, sig):
        print("valid")
        return 0
    print(f"invalid: the signature does not match {args.file} under this key")
    return 1


# -- KEM commands ---------------------------------------------------------------------------------

def _kem_alg(alg: Any) -> Any:
    if alg.kind != "kem":
        raise _UsageError(f"{alg.name} is a signature algorithm, not a KEM")
    return alg


def cmd_kem_keygen(args: argparse.Namespace) -> int:
    return _write_key_pair(_keygen_alg(args.alg, "kem"), args)


def cmd_kem_encap(args: argparse.Namespace) -> int:
    alg, pk = _read_key(args.key, "PUBLIC", args)
    _kem_alg(alg)
    outputs = [Output(args.ciphertext), Output(args.secret, secret=True)]
    check_outputs(outputs, args.force, {"key": args.key})
    ct, ss = alg.encapsulate(pk)
    write_outputs(outputs, [ct, ss], args.force)   # both or neither
    _status(f"wrote {_shown(args.ciphertext)} ({len(ct)} bytes) and {_shown(args.secret)} ({alg.name})")
    return 0


def cmd_kem_decap(args: argparse.Namespace) -> int:
    alg, sk = _read_key(args.key, "PRIVATE", args)
    _kem_alg(alg)
    outputs = [Output(args.secret, secret=True)]
    check_outputs(outputs, args.force, {"key": args.key, "ciphertext": args.ciphertext})
    ct = _read_input(args.ciphertext)
    if len(ct) != alg.ciphertext_size:
        raise _UsageError(f"{args.ciphertext}: a {alg.name} ciphertext is {alg.ciphertext_size} bytes, got {len(ct)}")
    ss = alg.decapsulate(sk, ct)
    write_outputs(outputs, [ss], args.force)
    _status(f"wrote {_shown(args.secret)} ({alg.name})")
    return 0


def cmd_key_convert(args: argparse.Namespace) -> int:
    key = _load_key(args.key, None, args)
    if args.public:
        key = key.public_key() if hasattr(key, "private_bytes_raw") else key
    private = hasattr(key, "private_bytes_raw")
    passphrase = (_new_passphrase(args.new_passphrase_file, args.format, "--new-passphrase-file", NEW_PASSPHRASE_ENV,
                                  key.algorithm)
                  if private else None)
    outputs = [Output(args.output, secret=private)]
    check_outputs(outputs, args.force, {"key": args.key})
    write_outputs(outputs, [keyfile.dump(key, args.format, passphrase)], args.force)
    what = "private key" + (", encrypted" if passphrase else "") if private else "public key"
    _status(f"wrote {_shown(args.output)} ({key.algorithm.name} {what}, {args.format})")
    return 0


# -- evidence commands ----------------------------------------------------------------------------

def _reference_entries(path: str, alg: Any) -> Iterator[dict[str, Any]]:
    """The entries of the reference file, read one at a time; the first is read now, so that a
    file that is no KAT file, or one for another set than ``alg``, is refused before any work."""
    from . import kat

    def entries() -> Iterator[dict[str, Any]]:
        try:
            yield from kat.iter_rsp(path)
        except OSError as exc:
            raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        except (UnicodeDecodeError, EOFError, ValueError) as exc:
            raise _UsageError(f"{path} is not a KAT .rsp file ({exc})") from None
    reading = entries()
    first = next(reading, None)
    if first is None:
        raise _UsageError(f"{path} holds no KAT entries; expected an official .rsp (or .rsp.gz) file")
    fits = _sets_fitting(first)
    if alg.name not in fits:
        sizes = _entry_sizes(first)
        raise _UsageError(f"{path} is a KAT file for {' or '.join(fits)} ({sizes}), not {alg.name}: give --alg "
                          f"{fits[0]}, or a {alg.name} reference" if fits else
                          f"{path} holds entries for no set pqforge knows ({sizes}); expected a {alg.name} KAT file")
    return itertools.chain([first], reading)


def _entry_sizes(entry: dict[str, Any]) -> str:
    if "sm" in entry:
        return (f"a {len(entry.get('pk', b''))}-byte public key, "
                f"{entry.get('smlen', 0) - entry.get('mlen', 0)}-byte signatures")
    return f"a {len(entry.get('pk', b''))}-byte public key, {len(entry.get('ct', b''))}-byte ciphertexts"


def _sets_fitting(entry: dict[str, Any]) -> list[str]:
    """The sets whose public key and signature (or ciphertext) sizes a KAT entry has: one MAYO set,
    or a Classic McEliece set and its f variant (their sizes are the same)."""
    fits = []
    for name in algorithms.names():
        alg = algorithms.get(name)
        if len(entry.get("pk", b"")) != alg.public_key_size:
            continue
        if (alg.kind == "signature" and "sm" in entry and
                entry.get("smlen", 0) - entry.get("mlen", 0) == alg.signature_size) or \
                (alg.kind == "kem" and len(entry.get("ct", b"")) == alg.ciphertext_size):
            fits.append(alg.name)
    return fits


def cmd_kat(args: argparse.Namespace) -> int:
    """Regenerate, compare and write the entries one at a time: memory does not grow with
    ``--count`` (the output is byte for byte what joining all the entries would give)."""
    from . import kat
    alg = algorithms.get(args.alg)
    outputs = [Output(args.out)] if args.out is not None else []
    check_outputs(outputs, args.force, {"reference": args.reference})
    ref = _reference_entries(args.reference, alg) if args.reference else iter(())
    report = sys.stderr if args.out == STDOUT else sys.stdout   # standard output may carry the .rsp
    official = algorithms.official_kat_hashes(alg.name)
    count = args.count if args.count is not None else official["all_count"]
    digest = hashlib.sha256()       # of the entries' text, without the header (what the official hashes cover)
    compared, differ, first_differ = 0, 0, None
    bar = progress_bar(count, f"{alg.name} KAT")
    with streamed_output(outputs[0], args.force) if outputs else contextlib.nullcontext() as out:
        if out is not None and alg.kind == "signature":
            # the official signature files open with "# MAYO_2"-style headers; KEM files have none
            out.write(f"# {alg.name.replace('-', '_')}\n\n".encode())
        for entry in kat.kat_entries(alg, count):
            text = ("\n" if entry["count"] else "") + kat.entry_text(entry)      # entries_text's separator
            digest.update(text.encode())
            if out is not None:
                out.write(text.encode())
            reference = next(ref, None)
            if reference is not None:
                compared += 1
                if reference != entry:
                    differ += 1
                    first_differ = entry["count"] if first_differ is None else first_differ
            bar.update(1)
    bar.close()
    expected = {1: official["single"], official["all_count"]: official["all"]}.get(count)
    if args.reference:
        print(f"compared {compared} entries with {args.reference}: "
              f"{'all match' if not differ else f'{differ} differ, first count {first_differ}'}", file=report)
    print(f"sha256 {digest.hexdigest()}", file=report)
    if expected is None:
        print(f"no official hash for {count} entries (official: 1 and {official['all_count']})", file=report)
        return 1 if differ else 0
    ok = digest.hexdigest() == expected and not differ
    print(f"{'MATCH' if ok else 'MISMATCH'}: official {alg.name} KAT ({count} entries)", file=report)
    return 0 if ok else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench
    if args.steps:
        from .bench import mayo_steps
        from .mayo import get as get_mayo
        res = {n: mayo_steps.steps(get_mayo(n).params) for n in (args.alg or ["MAYO-1", "MAYO-2", "MAYO-3", "MAYO-5"])}
        print(json.dumps(res, indent=1) if args.json else mayo_steps.table(res))
        return 0
    if args.startup:
        from .bench import startup
        for name in args.alg or algorithms.names():
            alg = algorithms.get(name)
            ops = "keygen+sign+verify" if alg.kind == "signature" else "keygen+encap+decap"
            times = startup.measure(alg.name)
            if args.json:
                print(json.dumps({"alg": alg.name, **times}))
            else:
                for label in ("cold", "warm"):
                    r = times[label]
                    print(f"{alg.name} {label}: import {r['import_s'] * 1000:.0f} ms, to the first keygen "
                          f"{r['one_op_s'] * 1000:.0f} ms, first {ops} {r['first_ops_s'] * 1000:.0f} ms", flush=True)
                print(f"{alg.name} numba floor (import and one cached kernel): "
                      f"{times['numba_floor_s'] * 1000:.0f} ms", flush=True)
        return 0
    algs = [algorithms.get(a) for a in args.alg] if args.alg else [algorithms.get(n) for n in algorithms.names()
                                                                    if n.startswith("MAYO")]
    rows = bench.run(algs, min_seconds=args.seconds,
                     progress=None if args.json else (lambda s: print(f"  {s}", file=sys.stderr)))
    if args.json:
        print(json.dumps({"machine": bench.machine(), "results": rows}, indent=1))
    else:
        m = bench.machine()
        print(f"{m['date']}, {m['processor']}, {m['cpus']} CPUs, Python {m['python']}, GF(16) kernels "
              f"{m['gf16_kernels']}; median µs, warm, one thread")
        print(bench.table(rows))
    return 0


def cmd_precompile(args: argparse.Namespace) -> int:
    """Compile (and cache) the kernels of every algorithm, or of those named, by running each
    of its paths once (e.g. in a container build); with ``--prebuilt``, build bundles of
    machine code for other machines instead (``pqforge.jit.prebuilt.build``). With
    ``--serving``, only the paths ``pqforge serve`` needs before it is ready (its helper for them)."""
    from .jit import cache, units
    units.die_with_parent()        # (as a helper of ``pqforge serve``)
    algs = [algorithms.get(name) for name in (args.alg or algorithms.names())]
    if args.prebuilt:
        from .jit import prebuilt
        prebuilt.build(Path(args.prebuilt), [alg.name for alg in algs], args.profile, args.kernels)
        return 0
    cache.NOTICES = False              # the bar says what is being compiled
    bar = progress_bar(len(algs), "compiling")
    for alg in algs:
        bar.set_postfix_str(alg.name)
        (alg.warm_up_serving if args.serving else alg.warm_up)()
        bar.update(1)
    bar.close()
    # every path has run: a helper still running finishes what it took, except with --serving,
    # whose helpers' other entries are for later (the served paths are in the cache by now)
    units.stop_helpers(timeout=0 if args.serving else units.WORKER_SECONDS)
    print(f"compiled {len(algs)} algorithm{'s' * (len(algs) > 1)}; cache: "
          f"{cache.CACHE_DIR or 'none (not writable)'}")
    if args.serving:    # (a helper of ``pqforge serve``, which waits for its exit to load the
        gc.freeze()     # served paths: the exit then skips collecting the compiler's objects, 0.2 s)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pqforge", description="Post-quantum signatures and KEMs (MAYO, Classic McEliece)",
                epilog=f"algorithms: {', '.join(algorithms.names())} (case, hyphens and a leading "
                       "'Classic-' are optional: mayo2, McEliece348864f). Exit status: 0 success or a valid "
                       "signature, 1 an invalid signature or a KAT mismatch, 2 a usage or input error, "
                       "130 interrupted, 143 terminated.")
    p.add_argument("--version", action="version", version=f"pqforge {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("keygen", help="generate a signature key pair: PREFIX.pk and PREFIX.sk "
                                      "(KEM keys: pqforge kem keygen)")
    s.add_argument("--alg", required=True, type=_signature_algorithm,
                   help="signature algorithm, e.g. MAYO-2 (see pqforge --help)")
    s.add_argument("--out", required=True, help="path prefix of the two key files")
    s.add_argument("--format", choices=keyfile.FORMATS,
                   help="key file format: pem or der (PKCS#8 and SubjectPublicKeyInfo, as OpenSSL writes them) or "
                        "pqforge (its own armour); default pem")
    s.add_argument("--passphrase-file", metavar="FILE",
                   help=f"encrypt the private key (pem, der) under the first line of FILE (or ${PASSPHRASE_ENV})")
    s.add_argument("--force", action="store_true", help="overwrite existing key files")
    s.set_defaults(func=cmd_keygen)

    s = sub.add_parser("sign", help="sign a file")
    s.add_argument("--key", required=True, help="private key file (pem, der or pqforge)")
    s.add_argument("--passphrase-file", metavar="FILE",
                   help=f"passphrase of an encrypted private key: the first line of FILE (or ${PASSPHRASE_ENV})")
    s.add_argument("file", help="file to sign ('-' for standard input)")
    s.add_argument("-o", "--output", help="signature file (default FILE.sig; '-' for standard output)")
    s.add_argument("--force", action="store_true", help="overwrite an existing signature file")
    s.set_defaults(func=cmd_sign)

    s = sub.add_parser("verify", help="verify a signature (exit 0 valid, 1 invalid, 2 error)")
    s.add_argument("--key", required=True, help="public key file")
    s.add_argument("file", help="signed file ('-' for standard input)")
    s.add_argument("signature", help="signature file ('-' for standard input)")
    s.set_defaults(func=cmd_verify)

    kem = sub.add_parser("kem", help="key encapsulation: kem keygen, kem encap, kem decap").add_subparsers(dest="kem_command", required=True)
    s = kem.add_parser("keygen", help="generate a KEM key pair: PREFIX.pk and PREFIX.sk")
    s.add_argument("--alg", required=True, type=_kem_algorithm,
                   help="KEM algorithm, e.g. Classic-McEliece-348864 (see pqforge --help)")
    s.add_argument("--out", required=True, help="path prefix of the two key files")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kem_keygen)
    s = kem.add_parser("encap", help="encapsulate to a public key: writes a ciphertext and the shared secret")
    s.add_argument("--key", required=True, help="public key file")
    s.add_argument("-o", "--ciphertext", required=True, help="ciphertext output file ('-' for standard output)")
    s.add_argument("--secret", required=True, help="shared-secret output file (mode 0600; '-' for standard output)")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kem_encap)
    s = kem.add_parser("decap", help="decapsulate a ciphertext: writes the shared secret")
    s.add_argument("--key", required=True, help="private key file")
    s.add_argument("--passphrase-file", metavar="FILE",
                   help=f"passphrase of an encrypted private key: the first line of FILE (or ${PASSPHRASE_ENV})")
    s.add_argument("ciphertext", help="ciphertext file ('-' for standard input)")
    s.add_argument("--secret", required=True, help="shared-secret output file (mode 0600; '-' for standard output)")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kem_decap)

    key = sub.add_parser("key", help="key files: key convert").add_subparsers(dest="key_command", required=True)
    s = key.add_parser("convert", help="write a key file in another format (pem, der, pqforge), or its public key")
    s.add_argument("key", help="key file, public or private, in any format ('-' for standard input)")
    s.add_argument("-o", "--output", required=True, help="output file ('-' for standard output)")
    s.add_argument("--format", required=True, choices=keyfile.FORMATS, help="format to write")
    s.add_argument("--public", action="store_true", help="write the public key of a private key")
    s.add_argument("--passphrase-file", metavar="FILE",
                   help=f"passphrase of an encrypted input key: the first line of FILE (or ${PASSPHRASE_ENV})")
    s.add_argument("--new-passphrase-file", metavar="FILE",
                   help=f"encrypt the private key written (pem, der) under the first line of FILE (or ${NEW_PASSPHRASE_ENV})")
    s.add_argument("--force", action="store_true", help="overwrite an existing output file")
    s.set_defaults(func=cmd_key_convert)

    s = sub.add_parser("kat", help="regenerate known-answer tests and compare with the official ones")
    s.add_argument("--alg", required=True, type=algorithm_name, help="algorithm name (see pqforge --help)")
    s.add_argument("--count", type=positive_int, help="number of entries (default: as many as the official hash covers)")
    s.add_argument("--out", help="write the regenerated .rsp here ('-' for standard output)")
    s.add_argument("--reference", help="an official .rsp (or .rsp.gz) to compare entry by entry")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kat)

    s = sub.add_parser("bench", help="median time per operation")
    s.add_argument("--alg", action="append", type=algorithm_name, help="algorithm (repeatable; default: all MAYO sets)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--seconds", type=positive_float, default=0.5, help="minimum measuring time per operation")
    s.add_argument("--steps", action="store_true", help="MAYO: time each step of expansion, signing and verification")
    s.add_argument("--startup", action="store_true",
                   help="import and first-operation time of a cold (empty numba cache) and a warm start, "
                        "each in a new process, beside numba's own floor (default: every algorithm)")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("precompile", help="compile and cache all kernels now (first use is otherwise slow)")
    s.add_argument("--alg", action="append", type=algorithm_name, help="algorithm (repeatable; default: all)")
    s.add_argument("--prebuilt", metavar="DIR",
                   help="instead, build machine code ahead of time for other machines: one bundle per "
                        "profile this CPU runs (x86-64 or aarch64 levels) and kernel set, into DIR (a release puts them in the package's "
                        "prebuilt directory)")
    s.add_argument("--profile", action="append", help="with --prebuilt: only this profile (repeatable)")
    s.add_argument("--kernels", action="append", help="with --prebuilt: only this MAYO kernel set (repeatable)")
    s.add_argument("--serving", action="store_true",
                   help="only the paths pqforge serve needs before it is ready (key generation, batched sign and verify)")
    s.set_defaults(func=cmd_precompile)

    for module in ("pqforge.ct.cli", "pqforge.bench.batch_cli", "pqforge.service.cli"):  # command groups in their own modules
        try:
            importlib.import_module(module).add_parser(sub)
        except ModuleNotFoundError as exc:
            if exc.name not in (module, module.rsplit(".", 1)[0]):
                raise
    return p


def _mention_helpers() -> None:
    """One line on stderr when compile helpers (``pqforge.jit.units``) started by this command are
    still running: they go on, at low priority, after the command has returned."""
    units = sys.modules.get("pqforge.jit.units")      # (imported only where something was compiled)
    pids = units.running_helpers() if units is not None else []
    if not pids:
        return
    which = (f"a compile helper keeps filling the cache in the background (pid {pids[0]})" if len(pids) == 1 else
             f"{len(pids)} compile helpers keep filling the cache in the background "
             f"(pids {', '.join(map(str, pids))})")
    try:
        print(f"pqforge: {which}", file=sys.stderr, flush=True)
    except (OSError, ValueError):       # stderr closed (a broken pipe)
        pass


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    # the library's own warnings start with "pqforge: " for its Python users; one prefix here
    print(f"pqforge: warning: {str(message).removeprefix('pqforge: ')}", file=sys.stderr)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that the command
    ends its compile helpers on the way out instead of leaving them running."""


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (0, 1, 2, 130 when interrupted, 143 when terminated)."""
    retain_freed_heap()     # the process is pqforge's own: keep freed heap for the next key expansion
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        args = build_parser().parse_args(argv)
        warnings.showwarning = _show_warning
        try:
            return int(args.func(args))
        except (KeyboardInterrupt, _Terminated):
            units = sys.modules.get("pqforge.jit.units")
            if units is not None:       # interrupted: its helpers end with it
                units.stop_helpers()
            raise
        finally:
            _mention_helpers()
    except KeyboardInterrupt:
        return 130
    except _Terminated:
        return 143
    except BrokenPipeError:  # output piped into a reader that stopped (e.g. head)
        sys.stderr.close()
        return 0
    except (_UsageError, PQForgeError, OSError) as exc:
        print(f"pqforge: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: still one line, and the type for the report
        if os.environ.get("PQFORGE_TRACEBACK"):
            raise
        print(f"pqforge: error: unexpected {type(exc).__name__}: {exc} "
              "(set PQFORGE_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
