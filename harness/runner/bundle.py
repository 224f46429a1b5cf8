"""The working tree as it is, packed for the remote containers, and where it came from.

What is sent: every file git would see (tracked, and untracked but not ignored) as it is on disk now,
uncommitted edits included, so that an edited kernel is what gets timed. Left out: .git, .nox, virtual
environments (any folder holding a pyvenv.cfg, whatever its name), results/, dist/ and caches. Without
git (a copy of the tree), every file under the root minus the same folders.

Provenance: the commit, whether the tree differs from it (a dirty flag that counts untracked files
too, since they are sent), and a SHA-256 of that difference (`git diff HEAD --binary` plus each untracked
file sent, name and bytes), so that a result can be tied to the exact code that ran.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

EXCLUDED_DIRS = frozenset({".git", ".nox", ".venv", "venv", "env", "results", "dist", "build", "__pycache__",
                           ".pytest_cache", ".ruff_cache", ".dsl", ".direnv", "node_modules"})


@dataclass(frozen=True)
class Provenance:
    commit: str | None
    dirty: bool | None
    diff_sha256: str | None  # None when the tree is the commit


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=60)


def _is_git(repo: Path) -> bool:
    try:
        return _git(repo, "rev-parse", "--is-inside-work-tree").returncode == 0
    except OSError:
        return False


def _excluded(rel: Path, repo: Path) -> bool:
    parts = rel.parts[:-1]
    if any(p in EXCLUDED_DIRS or p.endswith(".egg-info") for p in parts):
        return True
    # a virtual environment under any name
    return any((repo.joinpath(*parts[:i]) / "pyvenv.cfg").is_file() for i in range(1, len(parts) + 1))


def tree_files(repo: Path) -> list[Path]:
    """The files to send, relative to repo, sorted."""
    if _is_git(repo):
        out = _git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout.decode()
        names = {Path(n) for n in out.split("\0") if n}
    else:
        names = set()
        for root, dirs, files in os.walk(repo):
            dirs[:] = [d for d in dirs if d not in EXCLUDED_DIRS]
            names |= {(Path(root) / f).relative_to(repo) for f in files}
    return sorted(n for n in names if (repo / n).is_file() and not (repo / n).is_symlink() and not _excluded(n, repo))


def provenance(repo: Path) -> Provenance:
    if not _is_git(repo):
        return Provenance(None, None, None)
    commit = _git(repo, "rev-parse", "--short=12", "HEAD").stdout.decode().strip() or None
    diff = _git(repo, "diff", "HEAD", "--binary").stdout
    untracked = _git(repo, "ls-files", "-z", "--others", "--exclude-standard").stdout.decode().split("\0")
    sent = [Path(n) for n in sorted(untracked) if n and (repo / n).is_file() and not _excluded(Path(n), repo)]
    if not diff and not sent:
        return Provenance(commit, False, None)
    h = hashlib.sha256(diff)
    for rel in sent:
        h.update(b"\0untracked\0" + str(rel).encode() + b"\0" + (repo / rel).read_bytes())
    return Provenance(commit, True, h.hexdigest())


def pack(repo: Path) -> bytes:
    """A gzipped tar of tree_files(repo); the same tree gives the same bytes (sorted, no times, no owners)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for rel in tree_files(repo):
            path = repo / rel
            info = tarfile.TarInfo(str(rel))
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with path.open("rb") as f:
                tar.addfile(info, f)
    return buf.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    """Extract a pack() archive: regular files under dest only."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            target = (dest / member.name).resolve()
            if not member.isfile() or not target.is_relative_to(dest.resolve()):
                raise ValueError(f"bundle: refusing {member.name!r} (not a regular file under the tree)")
        # extraction filters exist from Python 3.11.4 on (Debian 12 has 3.11.2): checked above either way
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)
