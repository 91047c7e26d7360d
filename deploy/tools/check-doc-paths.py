#!/usr/bin/env python3
"""Every repository path that README.md and docs/**/*.md name exists (a step of `just test`).

What is read: inline code spans (`...`) and link targets (`](...)`) outside fenced code
blocks. A span of several words (a command line) is split on whitespace and only its words with
a slash are read: a bare name there is an argument (`lbctl --config f.toml status`). Fenced blocks are shell sessions and output,
whose paths are the reader's, not the repository's.

What counts as a path: a word that ends in a known extension (EXTENSIONS below), or whose first
component is the name of a directory somewhere in the repository (`lua/`, `db/sql/reads/`,
`crates/bench`). Anything else with a slash is not a path here: `text/plain`, `users/{id}`,
`prometheus.io/port`. Not checked either: URLs, absolute paths (`/v1/boards`, `/metrics`),
`~/...`, `key=value` words, and paths git ignores (`target/`, `.local/`, generated files),
which are outputs rather than source. `#anchor`, `?query` and a `:line` suffix are dropped.

Placeholders become wildcards: `*`, `<name>`, `{name}`, `…` and `...` match anything within one
component (`**` across components); `{a,b}` is expanded to each alternative, and each
alternative must exist. A path with a wildcard exists when at least one file matches it.

Where a path is looked for, in order; it is reported only when none has it:
  1. from the repository root (`deploy/compose.yaml`), and for a link, from the doc's folder;
  2. under each `crates/*/src/` and `crates/*/` (`board/mod.rs`, `src/lib.rs`) and under
     `crates/` (`core/src/board/mod.rs`);
  3. as the tail of any repository path, whole components only: the docs name a file relative
     to the folder the section is about (`reads/freshness.sql` under crates/core/src/db/sql/,
     `project.lua` under lua/).

The repository's files are `git ls-files --cached --others --exclude-standard` (tracked plus
new, not ignored), or a walk of the tree when git is not there. Each missing path is printed as
`file:line: path` on stdout and the exit status is 1; a summary goes to stderr.
Python 3.11, standard library only.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]

EXTENSIONS = (
    ".rs", ".sql", ".lua", ".md", ".sh", ".yaml", ".yml", ".toml", ".py", ".json", ".txt",
    ".png", ".svg", ".html", ".css", ".js", ".env",
)

SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
WILDCARD = re.compile(r"\*|\?|\[")


def repo_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "target", ".local"}
        return [
            p.relative_to(ROOT).as_posix()
            for p in ROOT.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
        ]


def ignored(path: str) -> bool:
    """Whether git ignores the path (an output such as target/ or .local/)."""
    try:
        return subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", path],
            cwd=ROOT, stderr=subprocess.DEVNULL,
        ).returncode == 0
    except OSError:
        return path.split("/")[0] in {"target", ".local"}


class Repo:
    def __init__(self, files: list[str]) -> None:
        self.files = set(files)
        self.dirs: set[str] = set()
        for f in files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))
        self.entries = self.files | self.dirs
        self.dir_names = {d.rsplit("/", 1)[-1] for d in self.dirs}
        crates = sorted({d for d in self.dirs if re.fullmatch(r"crates/[^/]+", d)})
        self.bases = [""] + [c + "/src/" for c in crates] + [c + "/" for c in crates] + ["crates/"]

    def exists(self, path: str, doc_dir: str | None) -> bool:
        bases = ([doc_dir + "/"] if doc_dir else []) + self.bases
        wild = bool(WILDCARD.search(path))
        for base in bases:
            full = normalise(base + path)
            if full is None:
                continue
            if wild:
                pattern = full.replace("**", "\0").replace("*", "[!/]*").replace("\0", "*")
                if any(fnmatch.fnmatchcase(e, pattern) for e in self.entries):
                    return True
            elif full in self.entries:
                return True
        tail = normalise(path)
        if tail is None:
            return False
        if wild:
            pattern = tail.replace("**", "\0").replace("*", "[!/]*").replace("\0", "*")
            return any(fnmatch.fnmatchcase(e, "*/" + pattern) for e in self.entries)
        return any(e.endswith("/" + tail) for e in self.entries)


def normalise(path: str) -> str | None:
    """The path with `.` and `..` resolved, or None when it climbs out of the repository."""
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == ".":
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts).rstrip("/")


def expand_braces(word: str) -> list[str]:
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(word[: m.start()] + alt.strip() + word[m.end():]))
    return out


def to_pattern(word: str) -> str:
    word = re.sub(r"<[^<>]*>", "*", word)
    word = re.sub(r"\{[^{},]*\}", "*", word)
    word = word.replace("…", "*").replace("...", "*")
    return re.sub(r"\*{3,}", "**", word)


def candidate(word: str, repo: Repo) -> list[str]:
    """The repository paths a word names (several when it has `{a,b}`), or none."""
    word = word.strip().strip("\"'(),;")
    if not word or "://" in word or "=" in word or word.startswith(("/", "~", "#", "$", "-")):
        return []
    if word.startswith("mailto:"):
        return []
    word = re.split(r"[#?]", word, maxsplit=1)[0]
    word = re.sub(r":\d+(-\d+)?$", "", word)
    if word.startswith("./"):
        word = word[2:]
    if not word:
        return []
    paths = []
    for alt in expand_braces(word):
        pattern = to_pattern(alt)
        first = pattern.split("/")[0]
        by_ext = pattern.rstrip("/").endswith(EXTENSIONS)
        by_dir = "/" in pattern and (first in repo.dir_names or first == "..")
        by_dir = by_dir or (pattern.endswith("/") and pattern.rstrip("/") in repo.dir_names)
        if (by_ext or by_dir) and not WILDCARD.search(first.replace("*", "")):
            paths.append(pattern)
    return paths


def docs() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def main() -> int:
    repo = Repo(repo_files())
    checked = 0
    missing: list[str] = []
    for doc in docs():
        rel = doc.relative_to(ROOT).as_posix()
        doc_dir = str(PurePosixPath(rel).parent)
        in_fence = False
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            words = []
            for span in SPAN.findall(line):
                split = span.split()
                # In a command line a bare file name is an argument (`--config f.toml`).
                words += [(w, None) for w in split if len(split) == 1 or "/" in w]
            words += [(target, doc_dir if doc_dir != "." else "") for target in LINK.findall(line)]
            for word, base in words:
                for path in candidate(word, repo):
                    checked += 1
                    if repo.exists(path, base):
                        continue
                    full = normalise((base + "/" if base else "") + path)
                    if full is None or ignored(full.replace("*", "x")):
                        continue
                    missing.append(f"{rel}:{lineno}: {path}")
    for m in missing:
        print(m)
    print(
        f"check-doc-paths: {checked} paths checked in {len(docs())} files, {len(missing)} missing",
        file=sys.stderr,
    )
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
