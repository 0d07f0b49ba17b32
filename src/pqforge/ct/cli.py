"""``pqforge ct``: list targets, run a timing campaign, the trace check, the memcheck check.

Exit status of ``ct run``: 0 no leak detected (at the stated power), 1 leak detected,
3 inconclusive; of ``ct trace``: 0 all identical, 1 a difference; of ``ct memcheck``: 0 clean,
1 a secret-dependent site; 2 is a usage error as elsewhere.
"""

from __future__ import annotations

import sys

from ..algorithms import name_key
from ..cli import progress_bar, positive_float, positive_int
from ..errors import InvalidInput

EXIT_LEAK = 1
EXIT_INCONCLUSIVE = 3


def cmd_list(args) -> int:
    from . import registry
    targets = registry.all_targets()
    if not targets:
        print("no constant-time targets registered (the scheme packages are not built yet)")
        return 0
    for t in targets:
        algs = ", ".join(t.algs) or "-"
        secret = ", ".join(map(str, t.secret_args)) or "none"
        trace = "trace-checked" if t.traceable else "timing only"
        print(f"{t.name}\n    {t.description}\n    {t.kind}; algorithms: {algs}; secret: {secret}; "
              f"classes: {t.classes[0]} vs {t.classes[1]}; {trace}")
    return 0


def cmd_run(args) -> int:
    from . import harness, registry, report
    target = registry.get(args.target)
    alg, _ = target.resolve_params(args.alg)
    step = harness.progress_bar(harness.expected_calls(args.measurements, args.repeats),
                                f"{target.name}" + (f" {alg}" if alg else ""))
    camp = harness.run_campaign(target, alg, measurements=args.measurements, repeats=args.repeats,
                                threshold=args.threshold, shift_ns=args.shift_ns,
                                dispersion=args.dispersion, resamples=args.resamples, seed=args.seed,
                                progress=step)
    paths = report.write(camp, args.out)
    pw = camp.power
    print(f"{target.name}{' ' + alg if alg else ''}: {camp.verdict}")
    for reason in camp.reasons:
        print(f"  {reason}")
    print(f"  power: {pw['shift']['resampled']['power']:.2f} for a {camp.shift_ns:.1f} ns shift, "
          f"{pw['dispersion']['resampled']['power']:.2f} for a {camp.dispersion:g}-fold dispersion change; "
          f"null runs over threshold: {sum(r.max_t > camp.threshold for r in camp.null())} of "
          f"{len(camp.null())}")
    print(f"  report: {paths['markdown']}")
    return {"leak detected": EXIT_LEAK, "no leak detected": 0}.get(camp.verdict, EXIT_INCONCLUSIVE)


def cmd_trace(args) -> int:
    from . import registry, trace
    targets = [registry.get(n) for n in args.target] if args.target else registry.traceable()
    if args.alg and not args.target:  # all targets of that algorithm
        targets = [t for t in targets if not t.algs or name_key(args.alg) in (name_key(a) for a in t.algs)]
    if not targets:
        print("no trace-checkable targets registered")
        return 0
    failed = 0
    for t in targets:
        if not t.traceable:
            raise InvalidInput(f"{t.name} is not trace-checkable (needs a kernel, secret arguments "
                               f"and a Python twin)")
        bar = progress_bar(None, t.name, unit=" steps")     # a kernel of full size takes minutes
        try:
            result = trace.check_target(t, args.alg, pairs=args.pairs, seed=args.seed, opcodes=args.opcodes,
                                        indices=not args.no_indices, progress=bar.update)
        finally:
            bar.close()
        ok = result.strict_ok if args.strict else result.ok
        failed += not ok
        print(("ok    " if ok else "FAIL  ") + result.summary())
    print(f"{len(targets) - failed} of {len(targets)} targets passed", file=sys.stderr)
    return 1 if failed else 0


def cmd_memcheck(args) -> int:
    from . import memcheck, registry
    if args.target:
        targets = [registry.get(n) for n in args.target]
    else:       # every target with secrets, of the algorithm asked for (else each one's first)
        targets = [t for t in registry.all_targets() if t.secret_args and (
            not args.alg or not t.algs or name_key(args.alg) in (name_key(a) for a in t.algs))]
    if not targets:
        print("no constant-time targets with secret arguments registered")
        return 0
    results = memcheck.check(targets, args.alg, kernels=args.kernels,
                             log=lambda text: print(f"pqforge ct memcheck: {text}", file=sys.stderr))
    failed = 0
    for r in results:
        failed += not r.ok and not r.skipped
        print(("skip  " if r.skipped else "ok    " if r.ok else "FAIL  ") + r.summary())
    checked = sum(1 for r in results if not r.skipped)
    print(f"{checked - failed} of {checked} targets clean, {len(results) - checked} skipped", file=sys.stderr)
    return 1 if failed else 0


def add_parser(sub) -> None:
    ct = sub.add_parser("ct", help="constant-time evidence: timing campaigns, trace and memcheck checks")
    cts = ct.add_subparsers(dest="ct_command", required=True)

    s = cts.add_parser("list", help="the registered targets and their secret arguments")
    s.set_defaults(func=cmd_list)

    s = cts.add_parser("run", help="timing campaign on one target (exit 0 none, 1 leak, 3 inconclusive)")
    s.add_argument("--target", required=True, help="a registered name, or package.module:ATTRIBUTE")
    s.add_argument("--alg", help="algorithm, e.g. MAYO-2 (default: the target's first)")
    s.add_argument("--measurements", type=positive_int, default=20000,
                   help="measurements per run, both classes together (default 20000)")
    s.add_argument("--repeats", type=positive_int, default=3,
                   help="real runs, and as many matched null runs (default 3)")
    s.add_argument("--out", default="ct-report", help="report directory (default ./ct-report)")
    s.add_argument("--threshold", type=positive_float, default=4.5, help="|t| threshold (default 4.5)")
    s.add_argument("--shift-ns", type=positive_float, help="shift whose power is reported (default 1%% of the median)")
    s.add_argument("--dispersion", type=positive_float, default=2.0,
                   help="dispersion factor whose power is reported (default 2)")
    s.add_argument("--resamples", type=positive_int, default=100, help="relabellings per power estimate")
    s.add_argument("--seed", type=int, help="seed of labels and inputs (default random, recorded)")
    s.set_defaults(func=cmd_run)

    s = cts.add_parser("trace", help="deterministic check: identical control flow for two secrets")
    s.add_argument("--target", action="append", help="target (repeatable; default all trace-checkable)")
    s.add_argument("--alg", help="algorithm (default: each target's first); without --target, only the "
                   "targets of that algorithm")
    s.add_argument("--pairs", type=positive_int, default=2, help="secret pairs per target (default 2)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--opcodes", action="store_true",
                   help="compare bytecode offsets, not lines (sees one-line conditionals; slower)")
    s.add_argument("--no-indices", action="store_true", help="skip the array-index trace")
    s.add_argument("--strict", action="store_true", help="also require identical array indices")
    s.set_defaults(func=cmd_trace)

    s = cts.add_parser("memcheck", help="machine-code check: the compiled kernels under valgrind's memcheck, "
                       "secrets marked undefined (exit 0 clean, 1 a secret-dependent branch, index or store)")
    s.add_argument("--target", action="append", help="target (repeatable; default every target with secrets)")
    s.add_argument("--alg", help="algorithm (default: each target's first); without --target, only the "
                   "targets of that algorithm")
    s.add_argument("--kernels", choices=("avx2", "portable"),
                   help="kernel set of the whole operations (default avx2; valgrind cannot run the gfni set)")
    s.set_defaults(func=cmd_memcheck)
