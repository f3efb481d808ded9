"""`verirl dataset build|calibrate`."""
from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("dataset", help="build and calibrate curriculum rungs of proof tasks")
    sub = parser.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")

    b = sub.add_parser("build", help="generate a rung, certify every gold, freeze the split, write data/")
    b.add_argument("--rung", required=True, help="m0 … m5")
    b.add_argument("--lang", default="rocq", help="rocq or lean (default rocq)")
    b.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    b.add_argument("--n", type=int, default=240, help="tasks to generate, a multiple of the family count (default 240)")
    b.add_argument("--jobs", type=int, default=2, help="golds certified at once (default 2)")
    b.add_argument("--heldout", type=int, default=5, help="held-out tasks per family (default 5)")
    b.add_argument("--out", type=Path, default=None, help="data root (default: VERIRL_DATA_DIR, i.e. data/)")
    b.add_argument("--no-certify", action="store_true", help="skip certification (tasks get certified: null)")
    b.set_defaults(handler=build_cmd)

    c = sub.add_parser("calibrate", help="print how often cheap strategies solve each family")
    c.add_argument("--rung", required=True, help="m0 … m5")
    c.add_argument("--lang", default="rocq", help="rocq or lean (default rocq)")
    c.add_argument("--per-family", type=int, default=5, help="tasks sampled per family (default 5)")
    c.add_argument("--all", action="store_true", help="every task instead of a sample")
    c.add_argument("--jobs", type=int, default=2, help="answers graded at once (default 2)")
    c.add_argument("--data", type=Path, default=None, help="data root (default: VERIRL_DATA_DIR, i.e. data/)")
    c.set_defaults(handler=calibrate_cmd)


def _check_rung_lang(args: argparse.Namespace) -> None:
    from services.cli import UsageError
    from shared.factory import LANGS, RUNG_NAMES

    if args.rung not in RUNG_NAMES:
        raise UsageError(f"unknown rung {args.rung!r}; choose one of {', '.join(RUNG_NAMES)}")
    if args.lang not in LANGS:
        raise UsageError(f"unknown language {args.lang!r}; choose rocq or lean")
    if getattr(args, "jobs", 1) < 1:
        raise UsageError("--jobs must be at least 1")


def build_cmd(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from shared.factory.build import build
    from shared.settings import get_settings

    _check_rung_lang(args)
    out = args.out or get_settings().data_dir
    try:
        result = build(args.rung, args.lang, seed=args.seed, n=args.n, jobs=args.jobs,
                       heldout_per_family=args.heldout, out_root=out,
                       certify_golds=False if args.no_certify else None)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    m, t = result.manifest, result.timing
    print(f"{args.rung}/{args.lang}: {m['counts']['total']} tasks ({m['counts']['train']} train, "
          f"{m['counts']['heldout']} held out) -> {result.out_dir}")
    for name, fam in m["families"].items():
        print(f"  {name:16} tier {fam['tier']}  train {fam['train']:3}  heldout {fam['heldout']}")
    if m["certified"]:
        print(f"certified by {m['checker_version']}: {len(result.tasks)}/{m['n_candidates']} golds in "
              f"{t['certify_s']:.1f} s with {t['jobs']} jobs ({t['verdicts_per_s']:.2f} verdicts/s)")
    else:
        print(f"NOT certified (no {m['checker']} here): tasks carry certified: null")
    for tid, feedback in result.rejected:
        print(f"  rejected {tid}: {feedback.splitlines()[0] if feedback else ''}")
    return 0 if not result.rejected else 1


def calibrate_cmd(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from shared.factory.build import checker_available
    from shared.factory.calibrate import calibrate, sample, table
    from shared.tasks import dataset_dir, load_tasks

    _check_rung_lang(args)
    if args.per_family < 1 and not args.all:
        raise UsageError("--per-family must be at least 1")
    if not checker_available(args.lang):
        raise UsageError(f"no {args.lang} checker on this host")
    path = dataset_dir(args.rung, args.lang, args.data) / "tasks.jsonl"
    try:
        tasks = load_tasks(path)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(f"{exc} (build it with: verirl dataset build --rung {args.rung} --lang {args.lang})") from None
    chosen = sample(tasks, None if args.all else args.per_family)
    rows = calibrate(chosen, jobs=args.jobs)
    print(f"{args.rung}/{args.lang}: cheap strategies on {len(chosen)} tasks")
    print(table(rows, args.lang))
    return 0
