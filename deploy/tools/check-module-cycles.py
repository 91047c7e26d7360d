#!/usr/bin/env python3
"""No module of a crate imports one that imports it back (a step of `just test`).

For each crate under crates/*/src and each of its roots (lib.rs, main.rs, src/bin/*.rs), the
module files are found by following `mod name;` from the root, and each file is read for the
paths that name another module of the same crate: `use crate::...`, `use super::...`,
`use self::...`, and `crate::x::` / `super::x::` written in code. A path is charged to the
top-level module it lands in (a module's submodules count as the module; `crate::Name` re-exported
by the root counts as the module it comes from). A parent declaring its children (`mod x;`) is
not an import. Comments, doc links and string literals are not read.

Any cycle among a crate's top-level modules is printed on stdout, each step with the line that
makes it, and the exit status is 1. Python 3.11, standard library only.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text: str) -> str:
    """The code with comments, string and char literals blanked (newlines kept, so that
    offsets still give line numbers)."""
    out = list(text)
    i, n = 0, len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif m := re.match(r'b?r(#*)"', text[i : i + 300]) if c in "br" and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ) else None:
            close = '"' + m.group(1)
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            blank(i, end)
            i = end
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the first is text.
            if text.startswith("\\", i + 1):
                end = text.find("'", i + 2)
                end = n if end < 0 else end + 1
                blank(i, end)
                i = end
            elif i + 2 < n and text[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def split_top(group: str) -> list[str]:
    """The items of a use group's inside, split at its top-level commas."""
    items, depth, start = [], 0, 0
    for k, c in enumerate(group):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(group[start:k])
            start = k + 1
    items.append(group[start:])
    return [i.strip() for i in items if i.strip()]


def expand_use(tree: str) -> list[tuple[list[str], str]]:
    """The paths of a use tree, each with the name it binds: `a::{b, c::d as e}` gives
    (['a','b'],'b') and (['a','c','d'],'e')."""
    tree = re.sub(r"\s*(::|\{|\}|,)\s*", r"\1", tree.strip()).removeprefix("::")
    brace = tree.find("{")
    if brace < 0:
        path, _, alias = (part.strip() for part in tree.partition(" as "))
        segments = [s for s in path.split("::") if s]
        return [(segments, alias or segments[-1])] if segments else []
    prefix = [s for s in tree[:brace].split("::") if s]
    out = []
    for item in split_top(tree[brace + 1 : tree.rfind("}")]):
        for segments, alias in expand_use(item):
            if segments[:1] == ["self"]:
                out.append((prefix + segments[1:], prefix[-1] if alias == "self" and prefix else alias))
            else:
                out.append((prefix + segments, alias))
    return out


@dataclass
class ModuleFile:
    path: Path
    module: list[str]  # e.g. ['db', 'pool']; [] for the root


@dataclass
class Edge:
    source: str
    target: str
    where: str  # file:line
    code: str


@dataclass
class CrateTree:
    name: str
    root: Path
    files: list[ModuleFile] = field(default_factory=list)
    top: set[str] = field(default_factory=set)
    reexports: dict[str, str] = field(default_factory=dict)  # root `use` name -> top module


MOD_DECL = re.compile(rf"(?:\bpub(?:\s*\([^)]*\))?\s+)?\bmod\s+({IDENT})\s*;")


def find_modules(root: Path) -> list[ModuleFile]:
    """The files of the crate whose root is `root`, each with its module path."""
    files, todo = [], [(root, [])]
    while todo:
        path, module = todo.pop()
        files.append(ModuleFile(path, module))
        code = strip(path.read_text(encoding="utf-8"))
        # A file's children live beside it (lib.rs, main.rs, mod.rs) or in a folder of its name.
        if not module or path.name == "mod.rs":
            folder = path.parent
        else:
            folder = path.parent / path.stem
        for m in MOD_DECL.finditer(code):
            name = m.group(1)
            for candidate in (folder / f"{name}.rs", folder / name / "mod.rs"):
                if candidate.is_file():
                    todo.append((candidate, module + [name]))
                    break
            else:
                print(f"warning: {path}: mod {name}; has no file", file=sys.stderr)
    return files


# `crate::`, `super::` (repeated), `self::` where a path starts (not `$crate`, not `a::self`).
PATH_START = re.compile(r"(?<![\w$:])(crate|self|(?:super\s*::\s*)*super)\s*::\s*")
INLINE_MOD = re.compile(rf"\bmod\s+({IDENT})\s*\{{")


def first_segments(code: str, pos: int) -> list[str]:
    """The first segment of each path that continues at `pos` (a `{...}` group gives many)."""
    if pos < len(code) and code[pos] == "{":
        depth, k = 0, pos
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        return [
            re.sub(r"\s+", "", item).split("::")[0]
            for item in split_top(code[pos + 1 : k])
        ]
    m = re.compile(IDENT).match(code, pos)
    return [m.group(0)] if m else []


def edges_of(tree: CrateTree, file: ModuleFile, base_dir: Path) -> list[Edge]:
    text = file.path.read_text(encoding="utf-8")
    code = strip(text)
    lines = text.splitlines()
    # Inline modules (`mod tests { ... }`): (name, open brace, close brace).
    inline: list[tuple[str, int, int]] = []
    stack: list[tuple[str, int, int]] = []  # (name, depth inside it, open brace)
    depth = 0
    opens = {m.end() - 1: m.group(1) for m in INLINE_MOD.finditer(code)}
    for k, c in enumerate(code):
        if c == "{":
            depth += 1
            if k in opens:
                stack.append((opens[k], depth, k))
        elif c == "}":
            if stack and stack[-1][1] == depth:
                name, _, start = stack.pop()
                inline.append((name, start, k))
            depth -= 1

    def module_at(pos: int) -> list[str]:
        # Nested inline modules open in order, so sorting by their open brace nests them.
        return file.module + [name for name, s, e in sorted(inline, key=lambda i: i[1]) if s < pos < e]

    found = []
    for m in PATH_START.finditer(code):
        keyword = m.group(1)
        here = module_at(m.start())
        if keyword == "crate":
            base: list[str] = []
        elif keyword == "self":
            base = here
        else:
            ups = keyword.count("super")
            if ups > len(here):
                continue  # not a path this check understands; rustc refuses it anyway
            base = here[: len(here) - ups]
        if base:
            targets = [base[0]]
        else:
            targets = []
            for segment in first_segments(code, m.end()):
                if segment in ("self", "*", ""):
                    continue
                if segment in tree.top:
                    targets.append(segment)
                elif segment in tree.reexports:
                    targets.append(tree.reexports[segment])
                # else: an item of the root itself; the root is not one of the modules.
        source = file.module[0] if file.module else None
        if source is None:
            continue  # the root declares and re-exports its modules: not an import
        line = code.count("\n", 0, m.start())
        for target in targets:
            if target != source:
                found.append(
                    Edge(
                        source,
                        target,
                        f"{file.path.relative_to(base_dir)}:{line + 1}",
                        lines[line].strip(),
                    )
                )
    return found


def root_reexports(tree: CrateTree) -> dict[str, str]:
    """Names the root's `use` statements bind, mapped to the top-level module they come from."""
    code = strip(tree.root.read_text(encoding="utf-8"))
    out = {}
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        for segments, alias in expand_use(m.group(1)):
            if segments and segments[0] in ("crate", "self"):
                segments = segments[1:]
            if len(segments) >= 2 and segments[0] in tree.top and alias not in tree.top:
                out[alias] = segments[0]
    return out


def cycle_in(nodes: set[str], graph: dict[str, dict[str, Edge]]) -> list[str]:
    """A shortest cycle through the first of the strongly connected `nodes`, its first node
    repeated last."""
    start = min(nodes)
    parent: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(graph.get(node, {})):
            if nxt == start:
                path = [node]
                while (up := parent[path[-1]]) is not None:
                    path.append(up)
                return path[::-1] + [start]
            if nxt in nodes and nxt not in parent:
                parent[nxt] = node
                todo.append(nxt)
    return [start]


def components(graph: dict[str, dict[str, Edge]]) -> list[set[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = [0]
    nodes = set(graph) | {t for edges in graph.values() for t in edges}

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check(workspace: Path) -> list[str]:
    reports = []
    for src in sorted(workspace.glob("crates/*/src")):
        roots = [src / "lib.rs", src / "main.rs", *sorted((src / "bin").glob("*.rs"))]
        for root in (r for r in roots if r.is_file()):
            tree = CrateTree(f"{src.parent.name} ({root.relative_to(src)})", root)
            tree.files = find_modules(root)
            tree.top = {f.module[0] for f in tree.files if f.module}
            tree.reexports = root_reexports(tree)
            graph: dict[str, dict[str, Edge]] = {}
            for file in tree.files:
                for edge in edges_of(tree, file, workspace):
                    graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
            for comp in components(graph):
                cycle = cycle_in(comp, graph)
                lines = [f"{tree.name}: import cycle {' -> '.join(cycle)}"]
                for a, b in zip(cycle, cycle[1:]):
                    e = graph[a][b]
                    lines.append(f"  {a} -> {b}: {e.where}: {e.code}")
                reports.append("\n".join(lines))
    return reports


def main() -> int:
    workspace = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    reports = check(workspace)
    for report in reports:
        print(report)
    if reports:
        print(f"{len(reports)} import cycle(s) among top-level modules")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
