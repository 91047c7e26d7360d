#!/usr/bin/env python3
"""Builds one folder of links to the tools a new machine of this kind has, and nothing else.

usage: hermetic_path.py FARM FRESH_LIST [--hide NAME ...]

Every executable on PATH is linked into FARM (first one on PATH wins, as PATH would pick it),
except those that a new machine would not have:
- files of Debian packages that are not in FRESH_LIST (installed by hand, by an earlier
  session, or by deploy/tools/env.sh itself);
- console scripts of Python distributions that are not in FRESH_LIST (`pip install` by hand);
- anything in ~/.cargo/bin but rustup's own proxies (`cargo install` by hand);
- the names given with --hide.
deploy/tools/env.sh puts its declared tools in front of FARM, so a recipe that calls a tool
nobody declared fails here exactly as it would on a new machine, instead of passing on a
machine where someone once installed it.
"""

import importlib.metadata
import os
import subprocess
import sys

# What rustup puts in ~/.cargo/bin on a new machine (cargo-nextest comes with the image).
RUSTUP_PROXIES = {
    "cargo", "cargo-clippy", "cargo-fmt", "cargo-miri", "clippy-driver", "rls", "rust-analyzer",
    "rust-gdb", "rust-gdbgui", "rust-lldb", "rustc", "rustdoc", "rustfmt", "rustup",
    "cargo-nextest",
}


def fresh_names(path):
    apt, pip = set(), set()
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            kind, name = line.split()
            (apt if kind == "apt" else pip).add(normalise(name) if kind == "pip" else name)
    return apt, pip


def normalise(dist):
    return dist.lower().replace("_", "-").replace(".", "-")


def hidden_debian_files(fresh_apt):
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${db:Status-Status}\n"],
        capture_output=True, text=True, check=True,
    ).stdout
    extra = sorted({p for p, s in (l.split("\t") for l in out.splitlines()) if s == "installed"}
                   - fresh_apt)
    if not extra:
        return set()
    listed = subprocess.run(["dpkg", "-L", *extra], capture_output=True, text=True).stdout
    return {l for l in listed.splitlines() if l.startswith("/")}


def hidden_console_scripts(fresh_pip):
    names = set()
    for dist in importlib.metadata.distributions():
        if normalise(dist.metadata["Name"] or "") in fresh_pip:
            continue
        names.update(ep.name for ep in dist.entry_points if ep.group == "console_scripts")
    return names


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    farm, fresh_list, rest = args[0], args[1], args[2:]
    hide = {rest[i + 1] for i in range(len(rest) - 1) if rest[i] == "--hide"}
    fresh_apt, fresh_pip = fresh_names(fresh_list)
    deb_files = hidden_debian_files(fresh_apt)
    scripts = hidden_console_scripts(fresh_pip)
    cargo_bin = os.path.realpath(os.path.expanduser("~/.cargo/bin"))

    os.makedirs(farm, exist_ok=True)
    for old in os.listdir(farm):
        os.unlink(os.path.join(farm, old))
    seen, linked, masked = set(), 0, []
    for d in os.environ.get("PATH", "").split(":"):
        if not d or not os.path.isdir(d) or os.path.realpath(d) == os.path.realpath(farm):
            continue
        real_d = os.path.realpath(d)
        python_dir = "pyenv" in real_d or os.path.exists(os.path.join(real_d, "activate"))
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if name in seen or not os.access(path, os.X_OK) or os.path.isdir(path):
                continue
            seen.add(name)
            if (
                name in hide
                or (real_d == cargo_bin and name not in RUSTUP_PROXIES)
                or (python_dir and name in scripts)
                or path in deb_files
                or os.path.join(real_d, name) in deb_files
                or os.path.realpath(path) in deb_files
            ):
                masked.append(name)
                continue
            os.symlink(path, os.path.join(farm, name))
            linked += 1
    print(f"{linked} {len(masked)}")


if __name__ == "__main__":
    main()
