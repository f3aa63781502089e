"""The opt-in persistent compile cache: generated sources kept on disk between processes.

    TAPEC_CACHE_DIR=~/.cache/tapec python train.py     # read once, at first use
    tapec.codegen.disk_cache.configure(path or None)    # the same from code (tests)

On a miss in memory, `fetch` looks for `<sha256 of repr(key)>.json` in the directory,
`key` renumbered by `Canonical` so that it does not depend on what the process ran
before. Only a regular file of at most MAX_FILE_BYTES is read (`_read_regular`: no
symlink, no blocking on a FIFO). A file is compiled only after every check in
`_validated` passes: it parses; its format,
codegen, tapec and NumPy versions and the fingerprint of tapec's sources are this
process's; the key repr it records equals the requested one exactly (a file written for
another key under the same name is refused); its SHA-256 matches its contents.
Anything else is ignored, rebuilt and overwritten. The hash detects corruption, not
malice: whoever can write the directory can write code tapec runs, so a directory that
others can write is refused.

Writes go to a temporary file in the same directory, then `os.replace`: readers see a
whole old file or a whole new one, and processes racing on one key each write a valid
file (the last replace wins). A directory that cannot be created, or a write that fails
(full disk, read-only directory), costs one warning per process and never an exception:
compilation carries on in memory. See docs/cache.md.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from .._version import __version__

FORMAT_VERSION = 2        # 2: argument positions are canonical (see `Canonical`)
ENV_VAR = "TAPEC_CACHE_DIR"
log = logging.getLogger("tapec.cache")


class DiskCacheWarning(UserWarning):
    """The persistent cache could not be used; tapec compiles in memory instead."""


_lock = threading.Lock()
_configured = False        # False until the environment (or `configure`) has been read
_directory = None          # the usable directory, or None: the disk layer is off
_writable = True           # False after a failed write: stop trying for this process
_warned = False            # one warning per process, whatever went wrong


def configure(path):
    """Use `path` as the cache directory (created with mode 0o700), or None to turn the
    disk layer off. Overrides TAPEC_CACHE_DIR and re-arms the once-per-process warning.
    Returns the directory in use, or None when it was refused (after one warning)."""
    global _configured, _directory, _writable, _warned
    with _lock:
        _warned, _writable = False, True
        _directory = None if path is None else _prepare(Path(path))
        _configured = True
        return _directory


def _reset():
    """Forget the configuration, so the next use reads TAPEC_CACHE_DIR again (tests)."""
    global _configured, _directory, _writable, _warned
    with _lock:
        _configured, _directory, _writable, _warned = False, None, True, False


def directory():
    """The directory in use, or None; reads TAPEC_CACHE_DIR on first use."""
    global _configured, _directory
    if _configured:                  # the common case takes no lock
        return _directory
    with _lock:
        if not _configured:
            value = os.environ.get(ENV_VAR, "")
            _directory = _prepare(Path(value)) if value else None
            _configured = True
        return _directory


def _prepare(path: Path):
    """`path` made absolute and created private, or None after one warning if it cannot
    be created or is not private to this user. Called with `_lock` held."""
    try:
        path = Path(os.path.abspath(os.path.expanduser(path)))
        if not path.is_dir():
            # 0o700 on the leaf (the umask can only remove bits); parents are ordinary.
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(path, 0o700)
        info = os.stat(path)
    except (OSError, ValueError) as exc:     # ValueError: a NUL byte in the path
        _warn_locked(f"tapec: cannot create the compile cache directory {path} ({exc}); "
                     "compiling in memory only")
        return None
    if not stat.S_ISDIR(info.st_mode):
        _warn_locked(f"tapec: the compile cache path {path} is not a directory; "
                     "compiling in memory only")
        return None
    problem = _not_private(info)
    if problem:
        _warn_locked(f"tapec: refusing the compile cache directory {path}: it is {problem}, "
                     "and anyone who can write it can make tapec run their code; use a "
                     "directory only you can write (chmod 700). Compiling in memory only")
        return None
    return path


def _not_private(info) -> str:
    """Why a directory is writable by someone other than this user ('' if it is not).
    POSIX only: elsewhere the mode bits do not describe who may write."""
    if os.name != "posix":
        return ""
    if info.st_uid != os.geteuid():
        return f"owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return ""


def _warn_locked(message):
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(message, DiskCacheWarning, stacklevel=4)


def fetch(key, build):
    """(entry, loaded): the entry for `key` from disk if a valid file holds it, else
    `build()`'s result, written to disk. `loaded` is True for an entry read from disk.
    Only `build` may raise; the disk layer itself never does."""
    path = directory()
    if path is None:
        return build(), False
    canonical = Canonical(key)
    key_repr = _key_repr(canonical.key)
    if key_repr is None:              # not plain data: its repr may not identify it
        return build(), False
    file = path / file_name(key_repr)
    try:
        entry = _load(file, key_repr, canonical)
    except Exception as exc:  # noqa: BLE001  (e.g. JSON nested too deep: never raise)
        log.debug("persistent cache: ignoring %s: %r", file.name, exc)
        entry = None
    if entry is not None:
        return entry, True
    entry = build()
    try:
        _store(file, key_repr, entry, canonical)
    except Exception as exc:  # noqa: BLE001  (the gradient is built; a lost copy is fine)
        log.debug("persistent cache: not written %s: %r", file.name, exc)
    return entry, False


def save(key, entry) -> None:
    """Write `entry` for `key` (a provisional entry's final version); never raises."""
    path = directory()
    if path is None:
        return
    canonical = Canonical(key)
    key_repr = _key_repr(canonical.key)
    if key_repr is None:
        return
    try:
        _store(path / file_name(key_repr), key_repr, entry, canonical)
    except Exception as exc:  # noqa: BLE001  (the entry is built; a lost copy is fine)
        log.debug("persistent cache: not written: %r", exc)


def file_name(key_repr: str) -> str:
    """The name of the file for a key: the SHA-256 of its repr, so names are fixed-length
    and safe whatever the key holds."""
    return hashlib.sha256(key_repr.encode("utf-8", "surrogatepass")).hexdigest() + ".json"


# Types whose repr is deterministic across processes and tells values apart: str, int,
# bool and None (exact types: a subclass may repr differently), float (repr round-trips;
# 0.0 and -0.0 differ, every NaN is `nan` and compiles to the same code) and NumPy
# dtypes (custom_gradient records output dtypes). A set would repr in hash order, an
# object with its address: such keys stay in memory.
_PLAIN = (str, int, float, bool, type(None))


def _key_repr(key):
    """repr(key) if the key is plain data (see `_PLAIN`), else None."""
    stack = [key]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is tuple:
            stack.extend(item)
        elif kind not in _PLAIN and not isinstance(item, np.dtype):
            log.debug("persistent cache: key holds a %s; kept in memory only",
                      kind.__qualname__)
            return None
    return repr(key)


class Canonical:
    """A gradient key (`engine._compiled`: codegen version, mode, simplify mode, rows,
    source positions, target positions, seeds) renumbered so it does not depend on what
    the process ran before.

    A row's position is its tensor's creation order, and leaves can be older than the
    program: a literal such as `* 0.5` is one shared tensor, created by whichever program
    used it first, and a Variable's handle is created with the Variable. Here every leaf
    (a row with no recorded inputs) moves to just before its first reader, in argument
    order; rows with inputs keep their order. Wiring, source and target positions are
    renumbered to match, and so are the argument positions stored with an entry
    (`to_canonical`, `to_local`). Keys of another layout are used as they are."""

    __slots__ = ("key", "_order", "_position")

    def __init__(self, key):
        self.key, self._order, self._position = key, None, None
        if not self._recognized(key):
            return
        rows = key[3]
        leaf = [row[4] is None or row[4] == () for row in rows]
        placed, order = [False] * len(rows), []
        for i, row in enumerate(rows):
            if leaf[i]:
                continue
            for j in row[4]:
                if leaf[j] and not placed[j]:
                    placed[j] = True
                    order.append(j)
            placed[i] = True
            order.append(i)
        order += [i for i in range(len(rows)) if not placed[i]]   # leaves nothing reads
        position = [0] * len(rows)
        for new, old in enumerate(order):
            position[old] = new
        self._order, self._position = order, position
        renumbered = tuple(
            rows[old][:4] + (None if rows[old][4] is None else
                             tuple(position[j] for j in rows[old][4]),)
            for old in order)
        self.key = key[:3] + (renumbered, self._indices(key[4]), self._indices(key[5])) \
            + key[6:]

    @staticmethod
    def _recognized(key) -> bool:
        if type(key) is not tuple or len(key) != 7 or type(key[3]) is not tuple:
            return False
        rows = key[3]

        def index(k, low=0):
            return type(k) is int and low <= k < len(rows)
        if not all(type(r) is tuple and len(r) == 5 and (
                r[4] is None or (type(r[4]) is tuple and all(index(j) for j in r[4])))
                for r in rows):
            return False
        return all(type(part) is tuple and all(index(k, -2) for k in part)
                   for part in (key[4], key[5]))

    def _indices(self, part):
        return tuple(self._position[k] if k >= 0 else k for k in part)

    def _renumber(self, arg_keys, table):
        if table is None:
            return tuple(arg_keys)
        out = []
        for kind, k in arg_keys:
            if kind == "tape":
                if not 0 <= k < len(table):
                    return None
                k = table[k]
            out.append((kind, k))
        return tuple(out)

    def to_canonical(self, arg_keys):
        """This process's argument keys in canonical positions (None: out of range)."""
        return self._renumber(arg_keys, self._position)

    def to_local(self, arg_keys):
        """Stored (canonical) argument keys in this process's positions (None: out of
        range, which a file for this exact key cannot have)."""
        return self._renumber(arg_keys, self._order)


def _versions() -> dict:
    from .compiled import CODEGEN_VERSION
    return {"format": FORMAT_VERSION, "codegen_version": CODEGEN_VERSION,
            "tapec_version": __version__, "numpy_version": np.__version__,
            "tapec_sources": sources_fingerprint()}


_fingerprint = None


def sources_fingerprint() -> str:
    """SHA-256 of tapec's own .py files (paths and contents), computed once per process.

    An edit to the compiler that forgets to bump CODEGEN_VERSION, or an editable install
    moved to another commit, must not be served code generated by the old compiler. The
    whole package is hashed because which modules shape the generated code is not a
    stable list; 55 files take about 1.5 ms. Where the files cannot be read (a zipped
    install) the versions alone decide. Only the package is hashed: the benchmark suite
    lives in benchmarks/ beside it, so editing a benchmark keeps cached gradients."""
    global _fingerprint
    if _fingerprint is None:
        h = hashlib.sha256()
        try:
            root = Path(__file__).resolve().parent.parent
            for path in sorted(root.rglob("*.py")):
                data = path.read_bytes()
                h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
                h.update(data)
            _fingerprint = h.hexdigest()
        except (OSError, ValueError):
            _fingerprint = "unavailable"
    return _fingerprint


def digest(record: dict) -> str:
    """SHA-256 of every field but the digest itself (key repr, source, argument keys,
    title and versions), over a canonical JSON text so field order cannot matter."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def make_record(key_repr: str, source: str, arg_keys, title: str,
                provisional: bool = False) -> dict:
    """The JSON object stored for one entry, digest included. A provisional entry (not
    yet fused) says so; its fused version overwrites it."""
    record = {**_versions(), "key": key_repr, "source": source,
              "arg_keys": [list(k) for k in arg_keys], "title": title}
    if provisional:
        record["provisional"] = True
    record["sha256"] = digest(record)
    return record


def _validated(data: bytes, key_repr: str):
    """(source, arg_keys, title, provisional) of a file that passes every check, else a
    str saying
    which check failed. Nothing here executes the file's contents."""
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "not valid JSON (truncated or corrupt)"
    if type(record) is not dict:
        return "not a JSON object"
    for field, expected in _versions().items():
        if record.get(field) != expected or type(record.get(field)) is not type(expected):
            return f"{field} {record.get(field)!r} is not {expected!r}"
    if record.get("key") != key_repr:
        return "written for another key"
    source, title, recorded = record.get("source"), record.get("title"), record.get("sha256")
    if not (type(source) is str and type(title) is str and type(recorded) is str):
        return "missing source, title or digest"
    arg_keys = record.get("arg_keys")
    if type(arg_keys) is not list or not all(
            type(k) is list and len(k) == 2 and k[0] in ("tape", "seed")
            and type(k[1]) is int and k[1] >= 0 for k in arg_keys):
        return "malformed argument keys"
    if recorded != digest(record):      # a checksum, not a secret: no timing concern
        return "digest mismatch (corrupt)"
    return (source, tuple((kind, k) for kind, k in arg_keys), title,
            record.get("provisional") is True)


MAX_FILE_BYTES = 32 * 2 ** 20     # a larger entry is neither written nor read
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


def _read_regular(file: Path):
    """The bytes of `file` if it is a regular file of at most MAX_FILE_BYTES, else a str
    saying why not. A symlink is refused (O_NOFOLLOW, and lstat where that flag is
    missing), and the open never blocks (O_NONBLOCK: a FIFO opens at once and is then
    refused by type), so an entry replaced by a link to /dev/zero or by a FIFO costs a
    miss, not the process."""
    if not hasattr(os, "O_NOFOLLOW") and stat.S_ISLNK(os.lstat(file).st_mode):
        return "a symbolic link, not a regular file"
    try:
        fd = os.open(file, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:                # O_NOFOLLOW met a symlink
            return "a symbolic link, not a regular file"
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return f"not a regular file (mode {stat.filemode(info.st_mode)})"
        if info.st_size > MAX_FILE_BYTES:
            return f"{info.st_size} bytes, over the limit of {MAX_FILE_BYTES}"
        chunks, total = [], 0
        while total <= MAX_FILE_BYTES:          # the file may grow while it is read
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_FILE_BYTES:
            return f"over the limit of {MAX_FILE_BYTES} bytes"
        return b"".join(chunks)
    finally:
        os.close(fd)


def _load(file: Path, key_repr: str, canonical):
    """The Compiled entry a valid file holds, or None (absent, unreadable or refused).
    `canonical` translates the file's argument positions to this process's."""
    try:
        data = _read_regular(file)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.debug("persistent cache: cannot read %s: %s", file.name, exc)
        return None
    if isinstance(data, str):
        log.debug("persistent cache: ignoring %s: %s", file.name, data)
        return None
    checked = _validated(data, key_repr)
    if isinstance(checked, str):
        log.debug("persistent cache: ignoring %s: %s", file.name, checked)
        return None
    source, arg_keys, title, provisional = checked
    arg_keys = canonical.to_local(arg_keys)
    if arg_keys is None:
        log.debug("persistent cache: ignoring %s: argument positions out of range", file.name)
        return None
    from .compiled import Compiled
    from .emit import compile_function
    try:
        fn = compile_function(source, "function" if "\ndef function(" in source
                              else "gradient")
    except Exception as exc:  # noqa: BLE001  (e.g. written where numexpr was installed)
        log.debug("persistent cache: %s does not compile here: %r", file.name, exc)
        return None
    log.debug("persistent cache: loaded %s", file.name)
    return (Compiled.provisional if provisional else Compiled)(fn, source, arg_keys, title)


def _store(file: Path, key_repr: str, entry, canonical):
    """Write `entry` atomically; a failure stops writes for this process (one warning)."""
    global _writable
    from .compiled import Compiled
    if not _writable or not isinstance(entry, Compiled):
        return
    arg_keys = canonical.to_canonical(entry.arg_keys)
    if arg_keys is None:
        log.debug("persistent cache: not written %s: argument positions out of range",
                  file.name)
        return
    try:
        record = make_record(key_repr, entry.source, arg_keys, entry.title,
                             entry.countdown is not None)
        # One field per line, so `head` shows the versions and the key.
        text = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=True)}"
                                   for k, v in record.items()) + "\n}\n"
    except (TypeError, ValueError) as exc:      # not JSON data: keep it in memory
        log.debug("persistent cache: cannot serialize %s: %s", file.name, exc)
        return
    if len(text) > MAX_FILE_BYTES:              # it would never be read back
        log.debug("persistent cache: not written %s: %d bytes, over the limit of %d",
                  file.name, len(text), MAX_FILE_BYTES)
        return
    temp = None
    try:
        # Same directory, so os.replace is a rename within one filesystem: atomic.
        fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=file.parent)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(text)
        os.replace(temp, file)
        temp = None
    except OSError as exc:
        with _lock:
            _writable = False
            _warn_locked(f"tapec: cannot write the compile cache in {file.parent} ({exc}); "
                         "new compilations stay in memory for the rest of this process")
    finally:
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass
