"""``python -m doit.data``: validate, stats, split, curate, subset, mix, micro.

Exit codes: 0 success, 2 invalid data or arguments (every problem printed as
``path:line: field: message``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from doit.data.layout import TRAIN_POOLS
from doit.data.schema import DataError
from doit.flags import ArgumentParser, at_least


def _ints(text: str) -> list[int]:
    """Comma-separated integers >= 1 (item counts)."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def local_tokenizer(path: str):
    """The tokenizer in the local folder ``path`` (``--tokenizer``): doit never downloads one,
    so a name that is not a folder is an error, before the hub is asked."""
    if not Path(path).is_dir():
        raise ValueError(f"--tokenizer: {path}: no such folder (a local tokenizer directory)")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def cmd_validate(a) -> int:
    from doit.data.validate import ROLE_PLAY_NOTE, validate_path

    report = validate_path(a.path, expect=a.expect)
    for p in report.problems:
        print(p, file=sys.stderr if p.level == "error" else sys.stdout)
    verdict = "valid" if report.ok else "INVALID"
    print(
        f"{a.path}: {verdict}: {report.n_files} files, {report.n_items} items, "
        f"{len(report.errors)} errors, {len(report.warnings)} warnings"
    )
    if a.expect and report.ok:
        from doit.data.manifest import write_manifest

        if a.revision is None:
            print("warning: no --revision given; the manifest records revision 'unknown'")
        print(f"note: {ROLE_PLAY_NOTE}")
        write_manifest(
            a.path,
            kind="download",
            seed=None,
            synthetic_data=False,
            args={"expect": a.expect},
            revision=a.revision or "unknown",
            notes=[ROLE_PLAY_NOTE],
        )
    return 0 if report.ok else 2


def cmd_stats(a) -> int:
    from doit.data.stats import LENGTH_PLOT, load_all, plot_lengths, stats_table
    from doit.io import check_output

    if a.plot:  # before the corpus is read: a bad --plot is refused at once
        inputs = {"the corpus": a.path, "the tokenizer (--tokenizer)": a.tokenizer}
        check_output(a.plot, LENGTH_PLOT, inputs=inputs, overwrite=a.overwrite, flag="--plot")
    splits = load_all(Path(a.path))
    tok = local_tokenizer(a.tokenizer) if a.tokenizer else None
    table = stats_table(splits, tok)
    print(table.to_string(index=False))
    if a.plot:
        print(f"wrote {plot_lengths(splits, Path(a.plot))}")
    return 0


def cmd_split(a) -> int:
    from doit.data.split import build_split

    m = build_split(
        a.input, a.out, seed=a.seed, n_valid=a.valid, n_test=a.test, overwrite=a.overwrite
    )
    print(json.dumps(m["counts"], ensure_ascii=False))
    dup = m["duplicates"]["identical_records_kept_once"]
    if dup:
        print(f"{dup} identical records kept once: {json.dumps(m['duplicates']['by_ability'])}")
    for rel in m["carried"]:
        print(f"carried through unsplit: {rel}")
    missing = [s for s, n in (("valid", a.valid), ("test", a.test)) if n == 0]
    if missing:
        print(f"warning: no {' and no '.join(missing)} split (--{'/--'.join(missing)} 0)")
    return 0


def _raw_records(path: Path, files: list[Path]) -> tuple[list[dict], list[tuple[str, int]]]:
    from doit.data.layout import read_records
    from doit.data.schema import Problem

    records, origins, problems = [], [], []
    for f in files:
        for line, rec in read_records(f):
            if isinstance(rec, Problem):
                problems.append(rec)
            else:
                records.append(rec)
                origins.append((str(f.relative_to(path)) if f != path else f.name, line))
    if problems:
        raise DataError(problems)
    return records, origins


def cmd_curate(a) -> int:
    from doit.data.cells import source_is_synthetic
    from doit.data.curate import DEFAULT_THRESHOLD, curate, write_report
    from doit.data.layout import split_files
    from doit.data.manifest import write_manifest
    from doit.data.split import input_files
    from doit.io import atomic_output_dir, check_output, write_jsonl

    src = Path(a.input)
    sources = [src, *([a.against] if a.against else [])]
    inputs = {
        "the source" if i == 0 else "the source (--against)": s for i, s in enumerate(sources)
    }
    check_output(a.out, "curate", inputs=inputs, overwrite=a.overwrite)  # before reading anything
    records, origins = _raw_records(src, input_files(src))
    against, against_origins = [], []
    if a.against:
        ref = Path(a.against)
        files = (
            [f for s in ("valid", "test") for f in split_files(ref, s)] if ref.is_dir() else [ref]
        )
        against, against_origins = _raw_records(ref, files or input_files(ref))
    tok = local_tokenizer(a.tokenizer) if a.tokenizer else None
    result = curate(
        records,
        against=against or None,
        tokenizer=tok,
        max_tokens=a.max_tokens,
        near_threshold=a.near_threshold or DEFAULT_THRESHOLD,
        origins=origins,
        against_origins=against_origins or None,
    )
    by_file: dict[str, list[dict]] = {}
    for rec, i in zip(result.kept, result.kept_index):
        by_file.setdefault(origins[i][0], []).append(rec)
    with atomic_output_dir(a.out, kind="curate", overwrite=a.overwrite, sources=sources) as tmp:
        for rel, recs in sorted(by_file.items()):
            write_jsonl(tmp / rel, recs)
        write_report(result, tmp / "curate_report.json")
        write_manifest(
            tmp,
            kind="curate",
            seed=None,
            synthetic_data=source_is_synthetic(src),
            args={"input": str(src), "against": a.against, "max_tokens": a.max_tokens},
        )
    counts = result.report["counts"]
    print(
        f"{a.out}: kept {counts['kept']} of {counts['input']} records; report: {Path(a.out) / 'curate_report.json'}"
    )
    return 0


def cmd_subset(a) -> int:
    from doit.data.subsets import build_subsets, build_synthetic_subsets

    if a.synthetic:
        manifests = build_synthetic_subsets(a.path, a.out, a.totals, a.seed, a.overwrite)
    else:
        manifests = build_subsets(
            a.path, a.out, a.per_ability, a.pool, a.seed, a.abilities, a.overwrite
        )
    for name, m in manifests.items():
        print(f"{Path(a.out) / name}: {sum(m['train_counts'].values())} train items")
    return 0


def cmd_mix(a) -> int:
    from doit.data.mixes import build_mix, load_mix

    m = build_mix(a.path, load_mix(a.mix), a.out, overwrite=a.overwrite)
    print(f"{a.out}: {sum(m['train_counts'].values())} train items {json.dumps(m['train_counts'])}")
    if m["shortfall"]:
        print(f"short of fill.total (allow_short): {json.dumps(m['shortfall'])}")
    return 0


def cmd_micro(a) -> int:
    from doit.data.micro import write_corpus

    print("building the micro DoIT corpus: SYNTHETIC data from a seeded fictional world")
    held_out = {} if a.held_out is None else {"held_out": a.held_out}
    summary = write_corpus(a.out, a.seed, a.practice_fraction, a.overwrite, **held_out)
    print(json.dumps(summary, ensure_ascii=False, indent=1)[:2000])
    print(
        f"{a.out}: synthetic micro DoIT written (tokenizer/, pretrain/, ground_truth.json, manifest.json)"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m doit.data", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check a file or DoIT directory; exit 2 if invalid")
    v.add_argument("path")
    v.add_argument(
        "--expect", help="check files and counts against data/<NAME>/expected.yaml (e.g. doit)"
    )
    v.add_argument("--revision", help="dataset revision you downloaded, recorded in manifest.json")
    v.set_defaults(func=cmd_validate)
    s = sub.add_parser("stats", help="per-ability counts, kinds, turns and lengths")
    s.add_argument("path")
    s.add_argument("--tokenizer", help="tokenizer directory: adds token-length percentiles")
    s.add_argument("--plot", help="write a per-ability length histogram grid (PNG)")
    s.add_argument(
        "--overwrite", action="store_true", help="replace a --plot file stats did not write"
    )
    s.set_defaults(func=cmd_stats)
    sp = sub.add_parser("split", help="deterministic stratified train/valid/test split")
    sp.add_argument("input")
    sp.add_argument("--out", required=True)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument(
        "--valid", type=at_least(0), default=100, help="valid items per ability (default 100)"
    )
    sp.add_argument(
        "--test", type=at_least(0), default=100, help="test items per ability (default 100)"
    )
    sp.set_defaults(func=cmd_split)
    c = sub.add_parser("curate", help="normalise, dedup, near-dedup, length-filter, decontaminate")
    c.add_argument("input")
    c.add_argument("--out", required=True)
    c.add_argument("--against", help="DoIT dir or file (valid/test) to decontaminate against")
    c.add_argument("--tokenizer", help="tokenizer directory for the length filter")
    c.add_argument("--max-tokens", type=at_least(1), default=2048)
    c.add_argument(
        "--near-threshold",
        type=float,
        default=None,
        help="Jaccard of 3-character shingles (default 0.6; see doit/data/curate.py)",
    )
    c.set_defaults(func=cmd_curate)
    su = sub.add_parser("subset", help="nested quantity subsets (one DoIT dir per cell)")
    su.add_argument("path")
    su.add_argument("--out", required=True)
    su.add_argument("--per-ability", type=_ints, default=[1, 4, 16, 64, 256, 1000])
    su.add_argument("--pool", choices=TRAIN_POOLS, default="1000")
    su.add_argument("--abilities", help="comma-separated ability keys (default: all ten)")
    su.add_argument(
        "--synthetic", action="store_true", help="synthetic-only cells of --totals items"
    )
    su.add_argument("--totals", type=_ints, default=[10, 40, 160, 640, 2560, 10000, 40960])
    su.add_argument(
        "--sample-seed",
        "--seed",
        type=int,
        default=0,
        dest="seed",
        help="seed of the data draw (the recipe's and the grid's sample_seed; "
        "--seed is its older name)",
    )
    su.set_defaults(func=cmd_subset)
    m = sub.add_parser("mix", help="build a data mix from a mix YAML")
    m.add_argument("path")
    m.add_argument("--mix", required=True, help="mix YAML (see recipes/mixes/README.md)")
    m.add_argument("--out", required=True)
    m.set_defaults(func=cmd_mix)
    mi = sub.add_parser("micro", help="generate the SYNTHETIC micro DoIT corpus + tokenizer")
    mi.add_argument("--out", required=True)
    mi.add_argument("--seed", type=int, default=0)
    mi.add_argument(
        "--practice-fraction",
        type=float,
        default=0.0,
        help="exam practice on train-split facts added to the pretraining text, as a "
        "fraction of the prose (doit/data/micro/practice.py); default 0: none",
    )
    mi.add_argument(
        "--held-out",
        type=at_least(1),
        default=None,
        metavar="N",
        help="valid and test items per ability (default: doit.data.micro.build.N_HELD_OUT, 400); "
        "the train items and the "
        "pretraining text are the same for every N, and a smaller N's items are the first of "
        "a larger one's (doit/data/micro/README.md)",
    )
    mi.set_defaults(func=cmd_micro)
    for writer in (sp, c, su, m, mi):
        writer.add_argument(
            "--overwrite",
            action="store_true",
            help="replace an existing --out that is not this command's own "
            "earlier output (never the source, nor a folder holding it)",
        )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DataError as e:
        print(e, file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk, a permission: the path named, nothing half-written
        from doit.io import os_error_message

        print(f"error: {os_error_message(e)}", file=sys.stderr)
        return 2
