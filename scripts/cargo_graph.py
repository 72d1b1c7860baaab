"""What cargo links into each binary of a release build: the normal-dependency graph of the
packages scripts/release builds together for one target (features unified exactly as in that
build), and the crates reachable from one of them. Shared by scripts/sbom (the SPDX SBOMs) and
scripts/third-party-notices (the notices in each archive), so both list the same crates.
"""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def resolve(target, packages):
    """The normal-dependency graph of `packages` built together for `target`, from cargo tree.

    Returns (edges, proc_macros): edges maps (name, version) to the set of its direct normal
    dependencies; proc_macros is the set of crates marked (proc-macro)."""
    args = ["cargo", "tree", "--locked", "-e", "normal", "--target", target, "--prefix", "depth",
            "--format", "{p}"]
    for p in packages:
        args += ["-p", p]
    edges, proc_macros, stack = {}, set(), []
    for line in subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"^(\d+)(\S+) v(\S+)(.*)$", line)
        if not m:
            continue
        depth, key, rest = int(m.group(1)), (m.group(2), m.group(3)), m.group(4)
        del stack[depth:]
        if len(stack) != depth:
            sys.exit(f"cargo_graph: cannot follow cargo tree's output at: {line}")
        edges.setdefault(key, set())
        if stack:
            edges[stack[-1]].add(key)
        if "(proc-macro)" in rest:
            proc_macros.add(key)
        stack.append(key)
    return edges, proc_macros


def closure(edges, start, through):
    """Everything reachable from `start`, entering only nodes for which through(node) holds."""
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        todo.extend(d for d in edges.get(node, ()) if through(d))
    return seen
