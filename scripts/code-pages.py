#!/usr/bin/python3
"""Where a process's resident memory is, mapping by mapping (BENCHMARKS.md, "Memory at 1,000
nodes: the split"): runs COMMAND (a benchmark; its own output goes to stderr), watches the
process that runs BIN, and prints, for the last look before it exited, each mapping's resident
KiB (Rss) and, with --clear-refs-after, the KiB touched since then (Referenced: the pages it
used in its steady state).

  scripts/code-pages.py [--cold] [--clear-refs-after S] [--arg A] BIN -- COMMAND...

  --cold    the pages it touched, not those the kernel mapped around them: for the run, every
            block device's read_ahead_kb is 0 (restored after) and the page cache is dropped
            once, so a fault maps only pages that were read, and only the faulting page is read
  --clear-refs-after S
            S seconds after BIN starts, its pages' referenced bits are cleared
            (/proc/PID/clear_refs)
  --arg A   the process running BIN with A among its arguments (`--arg operator`: not the
            `create manifests` that a benchmark runs first)

e.g. CCM_BENCH_NODES=1000 scripts/code-pages.py --clear-refs-after 6 \\
       target/release/openstack-cloud-controller-manager -- \\
       cargo bench -q -p openstack-cloud-controller-manager --bench scale

Root: it reads another process's /proc and, with --cold, writes /sys and /proc/sys. Referenced
counts a shared file's page when any process touched it (libc), so read it for the binary's own
mappings only.
"""
import glob
import os
import subprocess
import sys
import time


def find(binary, arg, child):
    """The PID of a process running `binary` (with `arg` among its arguments, if given), waited
    for while `child` runs."""
    while child.poll() is None:
        for entry in os.listdir('/proc'):
            if entry.isdigit():
                try:
                    if os.readlink(f'/proc/{entry}/exe') != binary:
                        continue
                    with open(f'/proc/{entry}/cmdline', 'rb') as f:
                        args = f.read().split(b'\0')
                    if arg is None or arg.encode() in args:
                        return int(entry)
                except OSError:
                    pass
        time.sleep(0.01)
    sys.exit(f'code-pages: {binary} never ran')


def mappings(pid):
    """(path or [anon], permissions) -> [Rss KiB, Referenced KiB], summed over the process's
    mappings of it."""
    out, key = {}, None
    with open(f'/proc/{pid}/smaps') as f:
        for line in f:
            fields = line.split()
            if '-' in fields[0] and len(fields) >= 5:
                key = (fields[5] if len(fields) > 5 else '[anon]', fields[1])
                out.setdefault(key, [0, 0])
            elif fields[0] == 'Rss:':
                out[key][0] += int(fields[1])
            elif fields[0] == 'Referenced:':
                out[key][1] += int(fields[1])
    return out


def main():
    args = sys.argv[1:]
    cold, clear_after, arg = False, None, None
    while args[:1] in (['--cold'], ['--clear-refs-after'], ['--arg']):  # options before BIN only
        if args[0] == '--cold':
            cold, args = True, args[1:]
        elif len(args) < 2:
            sys.exit(__doc__)
        elif args[0] == '--arg':
            arg, args = args[1], args[2:]
        else:
            clear_after, args = float(args[1]), args[2:]
    if len(args) < 3 or args[1] != '--':
        sys.exit(__doc__)
    binary, command = os.path.realpath(args[0]), args[2:]

    saved = {}
    if cold:
        for path in glob.glob('/sys/block/*/queue/read_ahead_kb'):
            with open(path) as f:
                saved[path] = f.read().strip()
            with open(path, 'w') as f:
                f.write('0')
        os.sync()
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('1')
    try:
        child = subprocess.Popen(command, stdout=sys.stderr)
        pid = find(binary, arg, child)
        started, cleared, last = time.monotonic(), clear_after is None, None
        while True:
            try:
                if not cleared and time.monotonic() - started >= clear_after:
                    with open(f'/proc/{pid}/clear_refs', 'w') as f:
                        f.write('1')
                    cleared = True
                now = mappings(pid)
            except (OSError, KeyError):
                break  # gone
            if not now:
                break  # exited, not yet waited for: a zombie has no mappings
            last = now
            time.sleep(0.5)
        child.wait()
    finally:
        for path, value in saved.items():
            with open(path, 'w') as f:
                f.write(value)
    if last is None:
        sys.exit(f'code-pages: {binary} (PID {pid}) exited before its mappings could be read')
    print('| mapping | permissions | Rss KiB | Referenced KiB |')
    print('|---|---|---|---|')
    total = 0
    for (path, perms), (rss, ref) in sorted(last.items(), key=lambda kv: -kv[1][0]):
        total += rss
        if rss >= 64:
            print(f'| {path} | {perms} | {rss:,} | {ref:,} |')
    print(f'| all | | {total:,} | |')
    sys.exit(child.returncode)


if __name__ == '__main__':
    main()
