"""Start-up cost: wall time of `import <module>` and the resident memory it adds, for ferrograd and
torch, each measured in fresh interpreters (the median of --repeat runs).

    python benches/import_time.py                 # ferrograd and torch, 7 runs each
    python benches/import_time.py --repeat 15 --modules ferrograd
    python benches/import_time.py --json out.json # also write the numbers

Targets: `import ferrograd` within 0.1 s and 40 MB resident. Time is the import statement
alone (interpreter start-up excluded); "RSS" is the process's resident set after the import (VmRSS),
"added" is that minus the RSS of the bare interpreter measured the same way. `python -X importtime
-c "import ferrograd"` breaks the time down by module.
"""
import argparse
import json
import statistics
import subprocess
import sys

PROBE = r"""
import sys, time
def rss_kb():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0
before = rss_kb()
t0 = time.perf_counter()
if sys.argv[1] != '-':
    __import__(sys.argv[1])
dt = time.perf_counter() - t0
print(dt, before, rss_kb())
"""


def measure(module, repeat):
    times, rss, added = [], [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True)
        if out.returncode != 0:
            return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
        dt, before, after = out.stdout.split()
        times.append(float(dt))
        rss.append(int(after) / 1024)
        added.append((int(after) - int(before)) / 1024)
    return {
        "import_s": statistics.median(times),
        "import_s_min": min(times),
        "rss_mb": statistics.median(rss),
        "added_mb": statistics.median(added),
        "runs": repeat,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--modules", default="ferrograd,torch", help="comma-separated modules to import")
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args(argv)

    results = {"python": measure("-", args.repeat)}
    for m in args.modules.split(","):
        results[m] = measure(m, args.repeat)
    print(f"{'module':<12} {'import (median)':>16} {'min':>9} {'RSS':>9} {'added':>9}")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:<12} n/a ({r['error']})")
            continue
        label = "(bare python)" if name == "python" else name
        print(f"{label:<12} {r['import_s'] * 1000:>13.1f} ms {r['import_s_min'] * 1000:>6.1f} ms"
              f" {r['rss_mb']:>6.1f} MB {r['added_mb']:>6.1f} MB")
    fg = results.get("ferrograd")
    if fg and "error" not in fg:
        ok = fg["import_s"] <= 0.1 and fg["rss_mb"] <= 40
        print(f"\nferrograd target (<= 0.1 s, <= 40 MB resident): {'met' if ok else 'NOT met'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
