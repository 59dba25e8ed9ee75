"""Command line: ``python -m lineage verify`` and ``python -m lineage bench [ops|decode] [--json PATH]``."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lineage", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="max error of every mechanism and mode against its reference (fp64)")
    v.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("bench", help="time recurrent vs chunk vs parallel forms and the decode step")
    b.add_argument(
        "what",
        nargs="?",
        choices=("ops", "decode"),
        default="ops",
        help="ops: every mechanism's forms and the decode step (default); decode: decode time vs context",
    )
    b.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    b.add_argument("--T", type=int, default=None, help="sequence length for 'ops' (default 4096)")
    args = parser.parse_args(argv)

    if args.command == "verify":
        from lineage.verify import format_checks, run_verify

        checks = run_verify(args.seed)
        print(format_checks(checks))
        return 0 if all(c.ok for c in checks) else 1

    if args.what == "decode":
        from lineage.bench_decode import format_table, run_decode_benchmark, to_json

        result = run_decode_benchmark(progress=lambda frac, msg: print(f"[{frac:4.0%}] {msg}", file=sys.stderr))
        print(format_table(result))
        payload = to_json(result)
    else:
        from lineage.bench import BenchConfig, format_result, run_bench

        cfg = BenchConfig() if args.T is None else BenchConfig(T=args.T)
        result = run_bench(cfg, progress=lambda msg: print(f"... {msg}", file=sys.stderr))
        print(format_result(result))
        payload = result.to_json()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
