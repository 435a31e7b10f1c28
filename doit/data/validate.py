"""Validation of a file or a DoIT directory, optionally against an expected layout.

``validate_path`` reads every record of every file, collects all problems (errors
and warnings, each ``path:line: field: message``), and with ``expect`` checks the
expected files and record counts from ``data/<name>/expected.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from doit.data import abilities as ab
from doit.data.layout import SPLIT_DIRS, all_record_files, is_record_file, missing_abilities
from doit.data.load import read_files
from doit.data.schema import ERROR, WARNING, Problem
from doit.io import MANIFEST, output_kind, read_json, read_yaml

REPO_DATA = Path(__file__).resolve().parents[2] / "data"
ROLE_PLAY_NOTE = (
    "role_play valid/test choices were corrected upstream on 2023-12-01 and code files "
    "re-uploaded on 2023-11-07: record which revision you downloaded (--revision)"
)


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    n_files: int = 0
    n_items: int = 0

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.level == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors


def load_expectation(expect: str) -> tuple[Path, dict]:
    """``expect`` is a YAML path or a name under the repo's ``data/<name>/expected.yaml``."""
    path = Path(expect)
    if not path.is_file():
        path = REPO_DATA / expect / "expected.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no expectation {expect!r}: neither a file nor {path}")
    spec = read_yaml(path)
    if not isinstance(spec, dict) or not isinstance(spec.get("files"), list):
        raise ValueError(
            f"{path}: files: expected a list of {{path, count|min_count|count_by_ability}}"
        )
    return path, spec


def _expand(entry: dict) -> list[tuple[str, str, int | None, int | None]]:
    """(relative path, ability, exact count, minimum count) for one expected-files entry."""
    pattern = entry["path"]
    if "{ability}" in pattern:
        keys, slot = ab.ABILITY_KEYS, "{ability}"
    elif "{ood}" in pattern:
        keys, slot = ab.OOD_KEYS, "{ood}"
    else:
        return [(pattern, "", entry.get("count"), entry.get("min_count"))]
    by_key = entry.get("count_by_ability", {})
    return [
        (pattern.replace(slot, k), k, by_key.get(k, entry.get("count")), entry.get("min_count"))
        for k in keys
    ]


def _find(root: Path, rel: str, key: str) -> Path | None:
    for candidate in (rel, rel.replace(key, key.replace("_", "-")) if key else rel):
        if (root / candidate).exists():
            return root / candidate
    return None


def check_expected(root: Path, spec: dict, counts: dict[str, int]) -> list[Problem]:
    problems = []
    for entry in spec["files"]:
        for rel, key, exact, minimum in _expand(entry):
            path = _find(root, rel, key)
            if path is None:
                problems.append(
                    Problem(str(root / rel), 0, "file", "missing (expected by the layout)")
                )
                continue
            n = counts.get(str(path.relative_to(root)), 0)
            if exact is not None and n != exact:
                problems.append(
                    Problem(str(path), 0, "records", f"expected {exact} records, found {n}")
                )
            if minimum is not None and n < minimum:
                problems.append(
                    Problem(str(path), 0, "records", f"expected at least {minimum}, found {n}")
                )
    return problems


def validate_path(path, expect: str | None = None) -> Report:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    is_dir = path.is_dir() and not is_record_file(path)
    files = all_record_files(path) if is_dir else [path]
    if is_dir and not files:
        return Report(
            [Problem(str(path), 0, "layout", "no record files under curated/ or synthetic/")]
        )
    report = Report(n_files=len(files))
    counts: dict[str, int] = {}
    for f in files:
        items, problems = read_files([f])
        # every record is either an item or the line of at least one error: no second read
        failed = {p.line for p in problems if p.level == ERROR}
        counts[str(f.relative_to(path)) if is_dir else f.name] = len(items) + len(failed)
        report.problems += problems
        report.n_items += len(items)
    report.problems += [
        Problem(str(path / rel if is_dir else path), 0, "records", "empty: no items", WARNING)
        for rel, n in counts.items()
        if n == 0 and report.n_items
    ]
    if is_dir:
        report.problems += layout_problems(path, report.n_items)
    if expect:
        if not is_dir:
            raise ValueError("--expect checks a directory, not a single file")
        report.problems += check_expected(path, load_expectation(expect)[1], counts)
    return report


def layout_problems(root: Path, n_items: int) -> list[Problem]:
    """A corpus without items, and split folders missing an ability's file: errors, except
    in a cell whose manifest says it draws some abilities only (a mix, a leave-one-out or an
    --abilities subset), where a train file it did not draw is a warning."""
    if n_items == 0:
        return [Problem(str(root), 0, "items", "no items: every record file is empty")]
    drawn = _drawn_abilities(root)
    out = [
        Problem(str(root / SPLIT_DIRS[split]), 0, "missing", f"no {split} split", WARNING)
        for split in ("valid", "test")
        if any((root / SPLIT_DIRS[p]).is_dir() for p in ("1000", "full", "train"))
        and not (root / SPLIT_DIRS[split]).is_dir()
    ]
    for rel, lacking in missing_abilities(root).items():
        for key in lacking:
            deliberate = drawn is not None and rel == SPLIT_DIRS["train"] and key not in drawn
            out.append(
                Problem(
                    str(root / rel / f"{key}_{Path(rel).name}.json"),
                    0,
                    "file",
                    "missing: the cell did not draw this ability"
                    if deliberate
                    else f"missing: {rel}/ has no file for {key}",
                    WARNING if deliberate else ERROR,
                )
            )
    return out


def _drawn_abilities(root: Path) -> set[str] | None:
    """The abilities a subset or mix cell's manifest says it drew (None: not such a cell)."""
    kind = output_kind(root)
    if kind not in ("subset", "mix"):
        return None
    counts = read_json(root / MANIFEST).get("counts", {}).get("train", {})
    return set(counts)
