"""The project's file I/O: JSON and JSON Lines read and written, outputs written atomically.

Every file doit writes goes through ``atomic_path`` (a temp file in the same folder, renamed
over the target once complete; ``atomic_write_text``, ``write_json`` and ``write_jsonl`` are
built on it) and every output directory through ``atomic_output_dir`` (built beside the
target, swapped in whole), so a killed run leaves the previous output intact and never a
half-written file. ``read_json``, ``read_jsonl`` and ``read_yaml`` (which refuses a key given
twice in a mapping) are the readers; ``inside`` checks a path
built from names read from a file before anything is written or deleted there.

``check_output`` is the one output rule of every command that writes a path the user names
(never an input or a folder holding one, never the current directory, an existing target only
when it is the same kind's output or ``--overwrite``); each command names its inputs and its
`OutputKind`. The writers and their kinds: README.md, "Where outputs may go".
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path beside ``path`` (same suffix, so writers that read it still work);
    once the body returns it is renamed over ``path``; if the body raises, it is removed.
    Temp files a killed writer left for the same target are removed first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}."
    for stale in path.parent.glob(f"{glob.escape(prefix)}*.tmp{glob.escape(path.suffix)}"):
        if _writer_gone(stale.name[len(prefix) :].split(".")[0]):
            with contextlib.suppress(OSError):
                stale.unlink()
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.", suffix=f".tmp{path.suffix}", dir=path.parent
    )
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the usual file mode
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _writer_gone(pid: str) -> bool:
    """Whether process ``pid`` (the writer named in a temp file's name) no longer runs."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return False


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder, fsync and a rename. An
    OSError (a full disk) names ``path``; the temp file is removed."""
    try:
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from None
    return Path(path)


def atomic_write_gzip_text(path: str | os.PathLike, text: str) -> Path:
    """``text`` gzip-compressed to ``path`` (atomically, as `atomic_path`), its header without
    a name or a time: the same text gives the same bytes (tables committed beside a study)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        with gzip.GzipFile(filename="", fileobj=fh, mode="wb", mtime=0) as f:
            f.write(text.encode("utf-8"))
    return Path(path)


def dumps_jsonl(records: Iterable[dict[str, Any]]) -> str:
    """JSON Lines text, UTF-8 kept readable (no \\u escapes), keys in record order."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_jsonl(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> Path:
    return atomic_write_text(path, dumps_jsonl(records))


def os_error_message(e: OSError) -> str:
    """One line for an OSError, naming the path (the first failure of a ``shutil`` copy)."""
    if isinstance(e, shutil.Error) and e.args and isinstance(e.args[0], list) and e.args[0]:
        src, dst, why = e.args[0][0]
        more = len(e.args[0]) - 1
        return f"{dst}: {why}" + (f" (and {more} more files)" if more else "")
    if e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    return str(e)


class EncodingError(ValueError):
    """A file that is not UTF-8 text; the message names ``path:line`` of the first bad byte."""

    def __init__(self, path, line: int, msg: str):
        super().__init__(f"{path}:{line}: not UTF-8 text: {msg}")
        self.path, self.line, self.msg = str(path), line, msg


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of ``path`` (a byte-order mark dropped); EncodingError naming the line
    of the first byte that is not UTF-8."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise EncodingError(path, line, f"byte {raw[e.start]:#04x} ({e.reason})") from None


class JsonError(ValueError):
    """A JSON or JSON Lines file that does not parse; the message names ``path:line``."""

    def __init__(self, path, line: int, msg: str):
        super().__init__(f"{path}:{line}: json: invalid JSON: {msg}")
        self.path, self.line, self.msg = str(path), line, msg


def read_jsonl(path: str | os.PathLike, on_error: str = "raise") -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, record)`` for every non-blank line of a JSON Lines file.

    The one JSONL reader of doit. Records are split on ``"\\n"`` only: ``write_jsonl``
    keeps U+2028, U+2029 and U+0085 raw inside strings, and ``str.splitlines`` would break
    a record at them. A UTF-8 byte-order mark is dropped. A line that is not JSON raises
    ``JsonError`` (``on_error="raise"``), is yielded as a ``JsonError`` in place of the
    record (``"yield"``, so a validator can report every bad line) or is passed over
    (``"skip"``, for append-only logs whose last line a killed run may have cut).
    """
    if on_error not in ("raise", "yield", "skip"):
        raise ValueError(f"on_error must be raise, yield or skip, not {on_error!r}")
    text = read_text(path)
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as e:
            err = JsonError(path, lineno, f"{e.msg} (column {e.colno})")
            if on_error == "raise":
                raise err from None
            if on_error == "yield":
                yield lineno, err


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; a file that is not JSON raises ``JsonError`` naming
    ``path:line``."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonError(path, e.lineno, f"{e.msg} (column {e.colno})") from None


class YamlError(ValueError):
    """A YAML file that does not parse, or repeats a key; the message names ``path:line``."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives a key twice (plain YAML keeps the
    last silently: ``learning_rate`` written twice would train at the second value)."""

    def construct_mapping(self, node, deep=False):
        first: dict = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first given at line {first[key]})",
                    key_node.start_mark,
                )
            first[key] = line
        return super().construct_mapping(node, deep)


def parse_yaml(text: str, where: str) -> Any:
    """The YAML document ``text`` (from ``where``, a path or a flag), or YamlError naming
    ``where:line`` (a syntax error, or a key repeated in a mapping)."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise YamlError(f"{where}{line}: yaml: {problem}") from None


def read_yaml(path: str | os.PathLike) -> Any:
    """The YAML document in ``path`` (`parse_yaml`); the one YAML reader of doit."""
    return parse_yaml(read_text(path), str(path))


class OutputError(ValueError):
    """An output target doit refuses to write (it would replace what it was not asked to)."""


def inside(folder: str | os.PathLike, path: str | os.PathLike) -> Path:
    """``path``, once checked to lie inside ``folder`` (below it, not ``folder`` itself), or
    OutputError. For writers and deleters whose paths hold names read from a file: ``..``
    and absolute parts are resolved lexically (symlinks are left alone: a folder may be one)."""
    root, target = os.path.abspath(folder), os.path.abspath(path)
    if os.path.commonpath([root, target]) != root or target == root:
        raise OutputError(f"{path}: outside {folder}; refused (a name in it leaves the folder)")
    return Path(path)


MANIFEST = "manifest.json"  # a doit output folder's record of itself: {"kind": ..., ...}


def output_kind(path: Path) -> str | None:
    """The ``kind`` a doit output folder's manifest records, or None (not a doit output)."""
    manifest = Path(path) / MANIFEST
    try:
        return read_json(manifest).get("kind") if manifest.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None


def mark_output(folder: str | os.PathLike, kind: str) -> Path:
    """Record in ``folder``'s manifest.json that it is a doit output of ``kind`` (for the
    writers whose outputs have no manifest of their own: analysis, curriculum, ladder)."""
    return write_json(Path(folder) / MANIFEST, {"kind": kind})


@dataclass(frozen=True)
class OutputKind:
    """A kind of output a command writes: a folder or a file (``expect``), and how an existing
    target is known to be one (``holds``; default: a folder whose manifest.json records
    ``kind: name``). ``marker`` says what an existing target lacks when it is not one."""

    name: str
    expect: str = "dir"  # "dir" or "file"
    holds: Callable[[Path], bool] | None = None
    marker: str = ""

    def held_by(self, path: Path) -> bool:
        return self.holds(path) if self.holds else output_kind(path) == self.name

    @property
    def missing(self) -> str:
        return self.marker or f"no {MANIFEST} of kind {self.name!r}"

    @property
    def noun(self) -> str:
        return "folder" if self.expect == "dir" else "file"


def marked_or_holding(kind: str, *names: str) -> Callable[[Path], bool]:
    """An `OutputKind.holds` for a folder kind marked by its manifest (`mark_output`), that
    also knows a folder written before the mark by every one of ``names`` it always writes."""

    def holds(path: Path) -> bool:
        return output_kind(path) == kind or all((path / n).is_file() for n in names)

    return holds


def json_holding(*keys: str) -> Callable[[Path], bool]:
    """An `OutputKind.holds` for a JSON file kind: a file whose object has every one of ``keys``."""

    def holds(path: Path) -> bool:
        try:
            doc = read_json(path)
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and all(k in doc for k in keys)

    return holds


def as_output_kind(kind: OutputKind | str | None) -> OutputKind:
    """A data command's manifest kind (or None: a kind no existing target holds) as a kind."""
    if isinstance(kind, OutputKind):
        return kind
    return OutputKind(kind or "output", holds=None if kind else (lambda path: False))


def check_output(
    path,
    kind: OutputKind | str | None,
    *,
    inputs: dict | None = None,
    overwrite: bool = False,
    flag: str = "--out",
    overwrite_flag: str | None = "--overwrite",
) -> Path:
    """The one output rule of every doit writer; returns ``path`` resolved, or OutputError
    (one line naming ``flag``) before anything is written.

    Never an input (``inputs``: what each is called -> its path; None, and paths that do
    not exist such as a hub model id, are skipped), a folder holding one, the current
    directory or a folder holding it; never a folder where a file is expected or the
    reverse, nor a place this process cannot write. An existing target only when it is
    ``kind``'s output (`OutputKind.holds`), an empty folder, or ``overwrite`` (and never,
    even then, a file or folder inside an input). Each command calls it once per output,
    naming its inputs and its kind, before it reads, loads or computes anything.
    """
    kind = as_output_kind(kind)
    target = Path(os.path.abspath(path))
    given = {k: Path(os.path.abspath(v)) for k, v in (inputs or {}).items() if v}
    named = {k: v for k, v in given.items() if os.path.lexists(v)}  # a hub id is no folder
    _refuse_inputs(path, target, {**named, "the current directory": Path.cwd()}, flag, kind)
    _refuse_unwritable(path, target, flag)
    if not os.path.lexists(target):
        return target
    if target.is_dir() != (kind.expect == "dir"):
        what = "a folder" if target.is_dir() else "a file"
        raise OutputError(f"{flag}: {path} is {what}; a {kind.noun} is expected")
    if kind.held_by(target) or kind.expect == "dir" and not any(target.iterdir()):
        return target
    holder = next((k for k, v in named.items() if v in target.parents), None)
    if holder is not None:
        raise OutputError(
            f"{flag}: {path} is part of {holder} ({named[holder]}) and not a doit "
            f"{kind.name} {kind.noun}; give another {kind.noun}"
        )
    if overwrite:
        return target
    hint = f", or {overwrite_flag} to replace it" if overwrite_flag else ""
    raise OutputError(
        f"{flag}: {path} exists and is not a doit {kind.name} {kind.noun} ({kind.missing}); "
        f"give another {kind.noun}{hint}"
    )


def _refuse_inputs(path, target: Path, named: dict, flag: str, kind: OutputKind) -> None:
    for what, source in named.items():
        source = Path(os.path.realpath(source)) if source.exists() else source
        real = Path(os.path.realpath(target)) if target.exists() else target
        if real == source or target == source:
            raise OutputError(f"{flag}: {path} is {what}; give another {kind.noun}")
        if real in source.parents or target in source.parents:
            raise OutputError(
                f"{flag}: {path} contains {what} ({source}); give another {kind.noun}"
            )


def _refuse_unwritable(path, target: Path, flag: str) -> None:
    """A target whose nearest existing folder is a file, or that this process cannot write:
    its nearest existing folder (where a new file or a swapped-in folder goes) and, when it
    is an existing folder, the folder itself."""
    folder = target.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise OutputError(f"{flag}: {path}: {folder} is a file, not a folder")
    for place in (folder, *([target] if target.is_dir() else [])):
        if not os.access(place, os.W_OK | os.X_OK):
            raise OutputError(f"{flag}: {path}: cannot write in {place} (permission denied)")


@contextlib.contextmanager
def atomic_output_dir(
    path,
    *,
    kind: OutputKind | str | None = None,
    overwrite: bool = False,
    sources=(),
    flag: str = "--out",
    overwrite_flag: str | None = "--overwrite",
) -> Iterator[Path]:
    """Yield a fresh temp directory beside ``path``; on success swap it in for ``path``.

    ``path`` is checked first (`check_output`): never a source or a folder holding it, and
    an existing target only when it is a doit output of ``kind`` or ``overwrite``.
    If the body raises, the previous ``path`` is untouched and the temp directory removed;
    one a killed writer left is removed by the next writer of the same target.
    """
    inputs = {"the source" if i == 0 else f"the source #{i + 1}": s for i, s in enumerate(sources)}
    path = check_output(
        path, kind, inputs=inputs, overwrite=overwrite, flag=flag, overwrite_flag=overwrite_flag
    ).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}."
    for stale in path.parent.glob(f"{glob.escape(prefix)}*.tmp-*"):
        if stale.is_dir() and _writer_gone(stale.name[len(prefix) :].split(".")[0]):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}.tmp-", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_UMASK)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists() or path.is_symlink():
        old = path.parent / f"{prefix}{os.getpid()}.old"
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
