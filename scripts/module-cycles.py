#!/usr/bin/python3
"""Import circles between a crate's modules: prints each set of two or more modules (files)
whose paths (`use crate::…`, `super::…`, `self::…`, in `use` or inline) reach each other,
directly or round a loop, with the arrows that close it. Uses between a module and its own
ancestors do not count (a child naming its parent's items, or a parent its child's, is the
module tree, not a circle); comments, literals and `#[cfg(test)]` modules are left out.
Exit 1 when there is a circle. Paths through a `pub use` re-export count where they point.

  scripts/module-cycles.py [--known FILE] CRATE_SRC_DIR...   e.g. src controller/src crates/*/src

With --known, the circles FILE lists (`src: a, b, c`, one per line) are tolerated, and so is
any circle within one of them; a new circle fails, and so does a listed one that is gone (the
list only shrinks).
"""
import os
import re
import sys


def modules(src):
    """module path (tuple) -> file, for every .rs file under src (lib.rs/main.rs = root)."""
    out = {}
    for root, _dirs, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel in (['lib'], ['main']):
                mod = ()
            elif rel[-1] == 'mod':
                mod = tuple(rel[:-1])
            else:
                mod = tuple(rel)
            if rel == ['main'] and os.path.exists(os.path.join(src, 'lib.rs')):
                continue  # the binary beside a library: it only calls the library
            if rel[0] == 'bin':
                continue
            out[mod] = path
    return out


PATH = re.compile(r'\b((?:crate|super|self)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))*)(?:::\{([^;]*?)\})?')


def strip(text):
    """The code of `text` without comments, string and char literals, and `#[cfg(test)]` modules."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            i = text.find('\n', i)
            i = n if i < 0 else i
        elif text.startswith('/*', i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith('/*', i):
                    depth, i = depth + 1, i + 2
                elif text.startswith('*/', i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == 'r' and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == '_')):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12]):
            i += len(re.match(r"'(\\.[^']*|[^\\'])'", text[i:]).group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    code = ''.join(out)
    return re.sub(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{.*', '', code, flags=re.S)


def resolve(here, parts, known):
    cur = list(here)
    i = 0
    if parts[0] == 'crate':
        cur = []
        i = 1
    while i < len(parts) and parts[i] in ('super', 'self'):
        if parts[i] == 'super':
            cur = cur[:-1]
        i += 1
    # longest known module prefix
    best = tuple(cur)
    for p in parts[i:]:
        cand = best + (p,)
        if cand in known:
            best = cand
        else:
            break
    return best


def edges(mods):
    out = {m: set() for m in mods}
    for m, path in mods.items():
        with open(path) as f:
            text = strip(f.read())
        for match in PATH.finditer(text):
            parts = match.group(1).split('::')
            target = resolve(m, parts, mods)
            targets = [target]
            if match.group(2):
                for item in re.split(r',', match.group(2)):
                    item = item.strip().split(' ')[0]
                    sub = [p for p in item.split('::') if p and p not in ('{', '}')]
                    if sub:
                        t = resolve(target, ['self'] + sub, mods)
                        targets.append(t)
            for t in targets:
                if t != m and t[:len(m)] != m and m[:len(t)] != t:
                    out[m].add(t)
    return out


def sccs(graph):
    index, low, stack, on, result = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
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
                result.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def known_circles(path):
    """`src: a, b, c` lines of a --known file: circles left to undo (`#` starts a comment)."""
    known = []
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                src, names = line.split(':', 1)
                known.append((src.strip(), frozenset(n.strip() for n in names.split(','))))
    return known


def main(args):
    known = None
    if args[:1] == ['--known']:
        known, args = known_circles(args[1]), args[2:]
    failed, seen = 0, set()
    for src in args:
        mods = modules(src)
        graph = edges(mods)
        for comp in sccs(graph):
            names = ['::'.join(c) or 'crate' for c in comp]
            within = [k for k in known or () if k[0] == src and set(names) <= k[1]]
            if within:
                seen.update(within)
                continue
            failed += 1
            print('%s: circle of %d: %s' % (src, len(comp), ', '.join(names)))
            for a in comp:
                for b in sorted(graph[a]):
                    if b in comp:
                        print('    %s -> %s' % ('::'.join(a) or 'crate', '::'.join(b) or 'crate'))
    for src, names in known or ():
        if (src, names) not in seen and src in args:
            failed += 1
            print('%s: gone, drop it from the known circles: %s' % (src, ', '.join(sorted(names))))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
