#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""check-layers.py OBJDIR LAYER...: the library's parts depend one way.

LAYER... are helpers/' folders, lowest first (the Makefile's LAYERS).  A file
of a part may include the headers of, and call into, its own part and the
parts before it, never a part after it; the command (helpers/ibprep*.c) and
the plugin (spank/) sit on top of every part and use neither each other nor
are used by the library.  Within the library no two files call each other in
a loop, directly or around a longer cycle.

What is checked is what the build saw, not what the sources say: the
compiler's dependency files (OBJDIR/**/*.d, from -MMD) for includes, and
`nm` on OBJDIR's objects for calls (an undefined symbol of one object that
another defines).  A public header include/ibprep/X.h belongs to the part
whose folder holds X.c; the few headers without a .c are in HEADER_ONLY.
Exit 0 and one summary line when the arrows hold; otherwise each wrong arrow
on its own line and exit 1.
"""
import os
import re
import subprocess
import sys

HEADER_ONLY = {"deadline": "core", "version": "core"}
TOP = ("cmd", "spank")


def part_of_source(path, layers):
    """The part a source or header path belongs to, or None (system headers)."""
    path = os.path.normpath(path)
    m = re.match(r"helpers/([a-z_]+)/[^/]+$", path)
    if m:
        return m.group(1) if m.group(1) in layers else "?" + m.group(1)
    if re.match(r"helpers/[^/]+$", path):
        return "cmd"
    if path.startswith("spank/"):
        return "spank"
    return None


def header_parts(layers):
    owners = {}
    for layer in layers:
        for f in os.listdir(os.path.join("helpers", layer)):
            if f.endswith(".c"):
                owners[f[:-2]] = layer
    owners.update(HEADER_ONLY)
    return owners


def rank(part, layers):
    return len(layers) if part in TOP else layers.index(part)


def allowed(src, dst, layers):
    if src == dst:
        return True
    if dst in TOP:
        return False  # nothing uses the command or the plugin, and they not each other
    return rank(dst, layers) < rank(src, layers)


def objects(objdir):
    for root, _, files in os.walk(objdir):
        for f in sorted(files):
            if f.endswith(".o"):
                obj = os.path.join(root, f)
                yield obj, os.path.relpath(obj, objdir)[:-2] + ".c"


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: check-layers.py OBJDIR LAYER...\n")
        return 2
    objdir, layers = sys.argv[1], sys.argv[2:]
    owners = header_parts(layers)
    wrong = []

    for d in os.listdir("helpers"):
        if os.path.isdir(os.path.join("helpers", d)) and d not in layers:
            wrong.append(f"helpers/{d}/: a folder that is not a part (add it to the Makefile's LAYERS)")

    srcs = {}
    for obj, src in objects(objdir):
        part = part_of_source(src, layers)
        if part is None:
            continue
        if part.startswith("?"):
            wrong.append(f"{src}: in helpers/{part[1:]}/, which is not a part")
            continue
        srcs[src] = (obj, part)
    if not srcs:
        sys.stderr.write(f"check-layers: no objects under {objdir}: build first\n")
        return 2

    # includes, from the compiler's dependency files
    n_inc = 0
    for src, (obj, part) in srcs.items():
        dep = obj[:-2] + ".d"
        try:
            text = open(dep).read()
        except OSError:
            wrong.append(f"{src}: no dependency file {dep}")
            continue
        # the first rule (OBJ: SRC HEADERS...), its lines joined; -MP's empty rules follow
        first = re.split(r"(?<!\\)\n", text, maxsplit=1)[0].replace("\\\n", " ")
        for h in first.split(":", 1)[1].split():
            h = os.path.normpath(h)
            if h.startswith("include/ibprep/"):
                name = os.path.basename(h)[:-2]
                hp = owners.get(name)
                if hp is None:
                    wrong.append(f"{src} includes {h}: a header of no part (add its .c, or HEADER_ONLY)")
                    continue
            else:
                hp = part_of_source(h, layers)
                if hp is None:
                    continue
            n_inc += 1
            if not allowed(part, hp, layers):
                wrong.append(f"{src} ({part}) includes {h} ({hp})")

    # calls, from the objects' symbols
    defined, needs = {}, {}
    for src, (obj, part) in srcs.items():
        out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] not in "UVvWw":
                defined[f[2]] = src
        out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
        needs[src] = {line.split()[-1] for line in out.splitlines() if line.strip()}
    calls = {}
    for src, syms in needs.items():
        for sym in sorted(syms):
            dst = defined.get(sym)
            if dst is None or dst == src:
                continue
            calls.setdefault(src, {}).setdefault(dst, sym)
            sp, dp = srcs[src][1], srcs[dst][1]
            if not allowed(sp, dp, layers):
                wrong.append(f"{src} ({sp}) calls {sym} in {dst} ({dp})")

    # loops among the library's files (Tarjan's strongly connected components)
    lib = [s for s in sorted(srcs) if srcs[s][1] not in TOP]
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(calls.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in lib:
        if v not in index:
            visit(v)
    loops = []
    for comp in sccs:
        arrows = [f"{a} -> {b} ({calls[a][b]})" for a in comp for b in comp
                  if b in calls.get(a, {})]
        loops.append("a loop of calls: " + "; ".join(arrows))
    wrong += loops

    for w in wrong:
        print("check-layers: " + w)
    n_calls = sum(len(v) for v in calls.values())
    if wrong:
        print(f"check-layers: {len(wrong)} wrong arrow(s) over {len(srcs)} files")
        return 1
    print(f"check-layers: {len(srcs)} files, {n_inc} includes and {n_calls} file-to-file calls "
          f"run one way ({' < '.join(layers)} < {', '.join(TOP)})"
          + ", no loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
