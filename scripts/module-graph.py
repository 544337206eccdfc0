#!/usr/bin/env python3
"""The import graph of each crate's modules, and a check that it has no cycle.

Cargo keeps the crates' own arrows (a crate cannot import one above it);
within a crate, modules may name each other freely, and this checks that
they still point one way. Each crate of the workspace (`src/` and
`crates/*/src/`) is checked on its own. Each file under a crate's src/ is a node (its module path: `relay::streamable`). A file
depends on another when its code names an item of that module: a `use`
(groups included), or a path such as `crate::live::Live` or `super::Finisher`
anywhere in the code. The deepest module a path reaches is the one depended
on; a module does not depend on its own children by declaring them (`mod x;`),
only by naming their items. Test code (`#[cfg(test)] mod tests { .. }` and
`tests.rs` files, and files under a `tests/` folder) is left out: tests may
reach into any module.

    scripts/module-graph.py            check: exit 1 and list every cycle
    scripts/module-graph.py --dot      the graph in Graphviz dot
    scripts/module-graph.py --edges    one `crate: from -> to` line per dependency
"""

import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Files that are crate roots of their own (binaries), not modules of the library.
BINARIES = {"main.rs"}


def module_of(rel):
    """`relay/streamable.rs` -> ('relay', 'streamable'); `lib.rs` -> ()."""
    parts = rel[:-3].split(os.sep)
    if parts == ["lib"]:
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def strip_comments_and_strings(text):
    """Code without comments, string and char literals (their contents could
    look like paths)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif c == "b" and text.startswith('b"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or text.startswith("'\\u{", i):
            j = text.find("'", i + 1)
            if text.startswith("'\\", i):
                j = text.find("'", i + 2)
            out.append("' '")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_test_modules(code):
    """Code with `#[cfg(test)]` items (a test module, a test-only fn) removed,
    and those under `#[cfg(all(test, ..))]`."""
    out = []
    i = 0
    for m in re.finditer(r"#\[cfg\((?:test|all\(test\b[^\]]*)\)\]", code):
        if m.start() < i:
            continue
        out.append(code[i:m.start()])
        # Skip the item: up to its `;` or its balanced braces.
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j < len(code) and code[j] == "{":
            depth = 0
            while j < len(code):
                if code[j] == "{":
                    depth += 1
                elif code[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
        i = j + 1
    out.append(code[i:])
    return "".join(out)


def use_paths(tree, prefix=""):
    """Expand a use tree (`a::{b, c::{d, e}}`) into full paths."""
    tree = tree.strip()
    depth, start, brace = 0, None, None
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                brace = k
            depth += 1
        elif ch == "}":
            depth -= 1
    if brace is None:
        path = tree.split(" as ")[0].strip()
        return [prefix + path] if path else []
    head = tree[:brace].strip()
    inner = tree[brace + 1:tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if p == "self":
            out.append(prefix + head.rstrip(":").rstrip(":"))
        else:
            out.extend(use_paths(p, prefix + head))
    return out


def crate_roots():
    """(crate directory, its src/) for every crate of the workspace."""
    roots = [("src", os.path.join(TOP, "src"))]
    crates = os.path.join(TOP, "crates")
    for name in sorted(os.listdir(crates)):
        src = os.path.join(crates, name, "src")
        if os.path.isdir(src):
            roots.append((os.path.join("crates", name), src))
    return roots


def graph(ROOT):
    """The modules of the crate whose source is at ROOT, and their edges."""
    files = {}
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
            # Test code: `tests.rs`, and every file of a `tests/` folder.
            if rel in BINARIES or name == "tests.rs" or "tests" in rel.split(os.sep)[:-1]:
                continue
            files[module_of(rel)] = rel
    modules = set(files)

    def resolve(path, here):
        """The deepest known module a path names, from module `here`."""
        segs = [s for s in path.replace(" ", "").split("::") if s]
        if not segs:
            return None
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] == "super":
            base = here
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
        elif segs[0] == "self":
            base, segs = here, segs[1:]
        elif here + (segs[0],) in modules:
            base = here  # a child module named without `self::`
        else:
            return None  # an external crate or a local item
        best = base
        for k in range(1, len(segs) + 1):
            cand = base + tuple(segs[:k])
            if cand in modules:
                best = cand
            else:
                break
        return best

    edges = {m: set() for m in modules}
    for mod, rel in files.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            code = without_test_modules(strip_comments_and_strings(f.read()))
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            paths.extend(use_paths(m.group(1)))
        code_no_use = re.sub(r"\buse\s+[^;]+;", "", code)
        for m in re.finditer(r"\b((?:crate|super|self)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)", code_no_use):
            paths.append(m.group(1))
        # Children named directly (`child::item`), without `self::`.
        for m in re.finditer(r"(?<![A-Za-z0-9_:])([a-z_][a-z0-9_]*)\s*::\s*[A-Za-z_]", code_no_use):
            if mod + (m.group(1),) in modules:
                paths.append("self::" + m.group(0).replace(" ", ""))
        for p in paths:
            target = resolve(p, mod)
            if target is None or target == mod:
                continue
            # A module naming its own ancestor's items (`super::X` to the
            # parent) is a dependency like any other; the crate root is not
            # (it only declares modules).
            if target == ():
                continue
            edges[mod].add(target)
    return modules, edges


def name(m):
    return "::".join(m) or "crate"


def main():
    graphs = [(crate, *graph(src)) for crate, src in crate_roots()]
    if "--edges" in sys.argv:
        for crate, _, edges in graphs:
            for m in sorted(edges):
                for t in sorted(edges[m]):
                    print(f"{crate}: {name(m)} -> {name(t)}")
        return 0
    if "--dot" in sys.argv:
        print("digraph modules {\n  rankdir=LR; node [shape=box, fontname=monospace];")
        for k, (crate, _, edges) in enumerate(graphs):
            print(f'  subgraph cluster_{k} {{ label="{crate}";')
            for m in sorted(edges):
                for t in sorted(edges[m]):
                    print(f'    "{crate}:{name(m)}" -> "{crate}:{name(t)}";')
            print("  }")
        print("}")
        return 0
    failed = 0
    for crate, modules, edges in graphs:
        failed |= check(crate, modules, edges)
        failed |= check_reaching_up(crate, edges)
    return failed


def ancestors(m):
    """`a::b::c` -> [('a',), ('a', 'b')]: the modules `m` lies inside."""
    return [m[:k] for k in range(1, len(m))]


def check_reaching_up(crate, edges):
    """Print each dependency that reaches up (1), or nothing (0).

    A module reaches up when it names a module lying inside another that
    depends on it: `gateway` naming `relay::parked` while `relay` takes the
    gateway. No cycle shows it (the leaf `relay::parked` depends on nothing),
    but the reader of `relay` sees a layer below it reach into it; the leaf
    belongs beside the layers, not inside the one above.
    """
    reach = {}

    def reachable(v):
        if v not in reach:
            seen, todo = set(), [v]
            while todo:
                for w in edges.get(todo.pop(), ()):
                    if w not in seen:
                        seen.add(w)
                        todo.append(w)
            reach[v] = seen
        return reach[v]

    found = []
    for a in sorted(edges):
        mine = set(ancestors(a)) | {a}
        for t in sorted(edges[a]):
            for p in ancestors(t):
                if p in mine:
                    continue
                chain = [m for m in mine if not (m == t[: len(m)])]
                if any(m in reachable(p) for m in chain):
                    found.append((a, t, p))
                    break
    for a, t, p in found:
        print(f"{crate}: {name(a)} reaches up into {name(t)}: {name(p)} depends on {name(a)}")
    return 1 if found else 0


def check(crate, modules, edges):
    """Print the crate's cycles (1) or that it has none (0)."""
    # Tarjan's strongly connected components: a component of more than one
    # module is a cycle.
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
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
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            connect(v)
    cycles = [c for c in comps if len(c) > 1]
    n_edges = sum(len(t) for t in edges.values())
    if not cycles:
        print(f"module graph of {crate}: {len(modules)} modules, {n_edges} dependencies, no cycle")
        return 0
    print(f"module graph of {crate}:")
    for c in cycles:
        members = sorted(c)
        print(f"cycle among {len(members)} modules: {', '.join(name(m) for m in members)}")
        for m in members:
            inside = sorted(t for t in edges[m] if t in c)
            print(f"  {name(m)} -> {', '.join(name(t) for t in inside)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
