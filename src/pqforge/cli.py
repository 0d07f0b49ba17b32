"""The ``pqforge`` command: keys, signatures, KEM, known-answer tests, benchmarks.

Exit status: 0 success (or a valid signature), 1 an invalid signature, 2 a usage or input error
(with a one-line reason on stderr).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from . import algorithms, keyfile
from .errors import PQForgeError


class _UsageError(Exception):
    pass


def _progress_bar(total: int, label: str):
    """A minimal stderr progress bar; silent when stderr is not a terminal, except the final line."""
    tty = sys.stderr.isatty()

    def update(done: int):
        if tty or done == total:
            width = 30
            filled = width * done // max(total, 1)
            sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()
    return update


def _read_input(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror}") from None


def _write_output(path: str, data: bytes, force: bool, mode: int = 0o644) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise _UsageError(f"{path} exists; use --force to overwrite") from None
    except OSError as exc:
        raise _UsageError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _read_key(path: str, kind: str):
    try:
        return keyfile.read(path, kind)
    except OSError as exc:
        raise _UsageError(f"cannot read key {path}: {exc.strerror}") from None


# -- signature commands -------------------------------------------------------------------------

def cmd_keygen(args) -> int:
    alg = algorithms.get(args.alg)
    prefix = Path(args.out)
    pk_path, sk_path = prefix.with_name(prefix.name + ".pk"), prefix.with_name(prefix.name + ".sk")
    if not args.force:
        for p in (pk_path, sk_path):
            if p.exists():
                raise _UsageError(f"{p} exists; use --force to overwrite")
    pk, sk = alg.keypair()
    try:
        keyfile.write(sk_path, alg.name, "PRIVATE", sk, force=args.force)
        keyfile.write(pk_path, alg.name, "PUBLIC", pk, force=args.force)
    except FileExistsError as exc:
        raise _UsageError(f"{exc.filename} exists; use --force to overwrite") from None
    print(f"wrote {pk_path} and {sk_path} ({alg.name})")
    return 0


def _signature_key(path: str, kind: str):
    alg, key = _read_key(path, kind)
    if alg.kind != "signature":
        raise _UsageError(f"{alg.name} is a KEM, not a signature algorithm")
    return alg, key


def cmd_sign(args) -> int:
    alg, sk = _signature_key(args.key, "PRIVATE")
    msg = _read_input(args.file)
    out = args.output or (args.file + ".sig" if args.file != "-" else None)
    if out is None:
        raise _UsageError("signing standard input needs -o FILE for the signature")
    sig = alg.sign(sk, msg)
    _write_output(out, sig, args.force)
    print(f"wrote {out} ({alg.name}, {len(sig)} bytes)")
    return 0


def cmd_verify(args) -> int:
    alg, pk = _signature_key(args.key, "PUBLIC")
    msg = _read_input(args.file)
    sig = _read_input(args.signature)
    if len(sig) != alg.signature_size:
        raise _UsageError(f"{args.signature}: a {alg.name} signature is {alg.signature_size} bytes, got {len(sig)}")
    if alg.verify(pk, msg, sig):
        print("valid")
        return 0
    print(f"invalid: the signature does not match {args.file} under this key")
    return 1


# -- KEM commands ---------------------------------------------------------------------------------

def _kem_alg(alg):
    if alg.kind != "kem":
        raise _UsageError(f"{alg.name} is a signature algorithm, not a KEM")
    return alg


def cmd_kem_keygen(args) -> int:
    _kem_alg(algorithms.get(args.alg))
    return cmd_keygen(args)


def cmd_kem_encap(args) -> int:
    alg, pk = _read_key(args.key, "PUBLIC")
    _kem_alg(alg)
    ct, ss = alg.encapsulate(pk)
    _write_output(args.ciphertext, ct, args.force)
    _write_output(args.secret, ss, args.force, mode=0o600)
    print(f"wrote {args.ciphertext} ({len(ct)} bytes) and {args.secret} ({alg.name})")
    return 0


def cmd_kem_decap(args) -> int:
    alg, sk = _read_key(args.key, "PRIVATE")
    _kem_alg(alg)
    ct = _read_input(args.ciphertext)
    if len(ct) != alg.ciphertext_size:
        raise _UsageError(f"{args.ciphertext}: a {alg.name} ciphertext is {alg.ciphertext_size} bytes, got {len(ct)}")
    ss = alg.decapsulate(sk, ct)
    _write_output(args.secret, ss, args.force, mode=0o600)
    print(f"wrote {args.secret} ({alg.name})")
    return 0


# -- evidence commands ----------------------------------------------------------------------------

def cmd_kat(args) -> int:
    from . import kat
    alg = algorithms.get(args.alg)
    official = algorithms.official_kat_hashes(alg.name)
    count = args.count if args.count is not None else official["all_count"]
    bar = _progress_bar(count, f"{alg.name} KAT")
    entries = []
    bar(0)
    for entry in kat.kat_entries(alg, count):
        entries.append(entry)
        bar(len(entries))
    text = kat.entries_text(entries)
    if args.out:
        # the official signature files open with "# MAYO_2"-style headers; KEM files have none
        header = f"# {alg.name.replace('-', '_')}\n\n" if alg.kind == "signature" else ""
        _write_output(args.out, (header + text).encode(), args.force)
    digest = kat.sha256_text(text)
    expected = {1: official["single"], official["all_count"]: official["all"]}.get(count)
    mismatches = []
    if args.reference:
        ref = kat.read_rsp(args.reference)
        mismatches = [e["count"] for e, r in zip(entries, ref) if e != r]
        print(f"compared {min(len(ref), count)} entries with {args.reference}: "
              f"{'all match' if not mismatches else f'{len(mismatches)} differ, first count {mismatches[0]}'}")
    print(f"sha256 {digest}")
    if expected is None:
        print(f"no official hash for {count} entries (official: 1 and {official['all_count']})")
        return 1 if mismatches else 0
    ok = digest == expected and not mismatches
    print(f"{'MATCH' if ok else 'MISMATCH'}: official {alg.name} KAT ({count} entries)")
    return 0 if ok else 1


def cmd_bench(args) -> int:
    from . import bench
    if args.steps:
        from .bench import mayo_steps
        from .mayo import get as get_mayo
        res = {n: mayo_steps.steps(get_mayo(n).params) for n in (args.alg or ["MAYO-1", "MAYO-2", "MAYO-3", "MAYO-5"])}
        print(json.dumps(res, indent=1) if args.json else mayo_steps.table(res))
        return 0
    if args.startup:
        from .bench import startup
        for name in args.alg or ["MAYO-2"]:
            res = startup.measure(algorithms.get(name).name)
            if args.json:
                print(json.dumps({"alg": name, **res}))
            else:
                for label, r in res.items():
                    print(f"{name} {label} start: import {r['import_s'] * 1000:.0f} ms, "
                          f"first keygen+sign+verify {r['first_ops_s'] * 1000:.0f} ms")
        return 0
    algs = [algorithms.get(a) for a in args.alg] if args.alg else [algorithms.get(n) for n in algorithms.names()
                                                                    if n.startswith("MAYO")]
    rows = bench.run(algs, min_seconds=args.seconds,
                     progress=None if args.json else (lambda s: print(f"  {s}", file=sys.stderr)))
    if args.json:
        print(json.dumps({"machine": bench.machine(), "results": rows}, indent=1))
    else:
        m = bench.machine()
        print(f"{m['date']}, {m['processor']}, {m['cpus']} CPUs, Python {m['python']}; median µs, warm, one thread")
        print(bench.table(rows))
    return 0


def cmd_precompile(args) -> int:
    """Compile (and cache) every kernel by running each algorithm once, e.g. in a container build."""
    import time
    for name in args.alg or algorithms.names():
        alg = algorithms.get(name)
        t0 = time.perf_counter()
        alg.warm_up()
        print(f"{alg.name}: ready ({time.perf_counter() - t0:.1f} s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pqforge", description="Post-quantum signatures and KEMs (MAYO, Classic McEliece)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("keygen", help="generate a key pair: PREFIX.pk and PREFIX.sk")
    s.add_argument("--alg", required=True, help="algorithm name, e.g. MAYO-2")
    s.add_argument("--out", required=True, help="path prefix of the two key files")
    s.add_argument("--force", action="store_true", help="overwrite existing key files")
    s.set_defaults(func=cmd_keygen)

    s = sub.add_parser("sign", help="sign a file")
    s.add_argument("--key", required=True, help="private key file")
    s.add_argument("file", help="file to sign ('-' for standard input)")
    s.add_argument("-o", "--output", help="signature file (default FILE.sig)")
    s.add_argument("--force", action="store_true", help="overwrite an existing signature file")
    s.set_defaults(func=cmd_sign)

    s = sub.add_parser("verify", help="verify a signature (exit 0 valid, 1 invalid, 2 error)")
    s.add_argument("--key", required=True, help="public key file")
    s.add_argument("file", help="signed file ('-' for standard input)")
    s.add_argument("signature", help="signature file")
    s.set_defaults(func=cmd_verify)

    kem = sub.add_parser("kem", help="key encapsulation").add_subparsers(dest="kem_command", required=True)
    s = kem.add_parser("keygen", help="generate a KEM key pair: PREFIX.pk and PREFIX.sk")
    s.add_argument("--alg", required=True, help="e.g. Classic-McEliece-348864")
    s.add_argument("--out", required=True, help="path prefix of the two key files")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kem_keygen)
    s = kem.add_parser("encap", help="encapsulate to a public key: writes a ciphertext and the shared secret")
    s.add_argument("--key", required=True, help="public key file")
    s.add_argument("-o", "--ciphertext", required=True, help="ciphertext output file")
    s.add_argument("--secret", required=True, help="shared-secret output file (mode 0600)")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kem_encap)
    s = kem.add_parser("decap", help="decapsulate a ciphertext: writes the shared secret")
    s.add_argument("--key", required=True, help="private key file")
    s.add_argument("ciphertext", help="ciphertext file")
    s.add_argument("--secret", required=True, help="shared-secret output file (mode 0600)")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kem_decap)

    s = sub.add_parser("kat", help="regenerate known-answer tests and compare with the official ones")
    s.add_argument("--alg", required=True)
    s.add_argument("--count", type=int, help="number of entries (default: as many as the official hash covers)")
    s.add_argument("--out", help="write the regenerated .rsp here")
    s.add_argument("--reference", help="an official .rsp (or .rsp.gz) to compare entry by entry")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_kat)

    s = sub.add_parser("bench", help="median time per operation")
    s.add_argument("--alg", action="append", help="algorithm (repeatable; default: all MAYO sets)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--seconds", type=float, default=0.5, help="minimum measuring time per operation")
    s.add_argument("--steps", action="store_true", help="MAYO: time each step of expansion, signing and verification")
    s.add_argument("--startup", action="store_true",
                   help="measure import and first-call time of a cold (empty numba cache) and a warm start")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("precompile", help="compile and cache all kernels now (first use is otherwise slow)")
    s.add_argument("--alg", action="append", help="algorithm (repeatable; default: all)")
    s.set_defaults(func=cmd_precompile)

    for module in ("pqforge.ct.cli", "pqforge.bench.batch", "pqforge.service.cli"):  # command groups in their own modules
        try:
            importlib.import_module(module).add_parser(sub)
        except ModuleNotFoundError as exc:
            if exc.name not in (module, module.rsplit(".", 1)[0]):
                raise
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "count", None) is not None and args.count < 1:
        parser.error("--count must be at least 1")
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into a reader that stopped (e.g. head)
        sys.stderr.close()
        return 0
    except (_UsageError, PQForgeError, OSError) as exc:
        print(f"pqforge: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
