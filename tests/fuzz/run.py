"""CLI and batch runner of the differential fuzzer.

    PYTHONPATH=python python tests/fuzz/run.py -n 2000 --seed 0 [--jobs 2] [--json out.json]

Programs run in worker subprocesses, in batches; a worker that dies of a signal (a segfault in the
native code) is attributed to the program it was running (category crash) and the batch goes on in a
fresh worker from the next program; a program that does not answer within --timeout seconds is a hang.
Prints the counts by category and, for each distinct failure signature (category, kind, op), how many
programs hit it and the first one's detail and self-contained reproducer.
"""
import argparse
import json
import os
import selectors
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/, so `fuzz` imports as a package

from fuzz.harness import CATEGORIES, FAILING, classify, run_program  # noqa: E402
from fuzz.programs import generate  # noqa: E402


def _lib():
    if os.environ.get("FG_TEST_AGAINST_TORCH") == "1":
        import torch as lib
    else:
        import ferrograd as lib
    return lib


def worker(seed, start, count):
    """Runs programs start..start+count-1, one JSON line each on stdout ("S i" before each)."""
    import torch
    lib = _lib()
    torch.set_num_threads(1)
    for i in range(start, start + count):
        p = generate(seed, i)
        sys.stdout.write(f"S {i}\n")
        sys.stdout.flush()
        t_out = run_program(p.src, torch)
        f_out = run_program(p.src, lib)
        cat, detail = classify(t_out, f_out, p.tol)
        sys.stdout.write("R " + json.dumps({"i": i, "cat": cat, "detail": detail}) + "\n")
        sys.stdout.flush()


def _run_batch(seed, start, count, timeout, results):
    """Runs one batch in a subprocess, restarting after a crash or hang; fills results[i]."""
    i = start
    end = start + count
    env = dict(os.environ)
    while i < end:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--seed", str(seed), "--start", str(i),
               "--count", str(end - i)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current, last_t = None, time.time()
        hung, buf, eof = False, b"", False
        while not eof:
            if sel.select(timeout=1.0):
                chunk = os.read(proc.stdout.fileno(), 65536)
                eof = not chunk
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    line = line.decode()
                    if line.startswith("S "):
                        current, last_t = int(line[2:]), time.time()
                    elif line.startswith("R "):
                        rec = json.loads(line[2:])
                        results[rec["i"]] = (rec["cat"], rec["detail"])
                        current = None
                        i = rec["i"] + 1
            elif current is not None and time.time() - last_t > timeout:
                hung = True
                proc.kill()
                break
        rc = proc.wait()
        sel.close()
        proc.stdout.close()
        if hung:
            results[current] = ("hang", f"no answer in {timeout} s")
            i = current + 1
        elif i < end:
            at = current if current is not None else i
            results[at] = ("crash", f"worker exited with status {rc}")
            i = at + 1


def run(n, seed=0, jobs=1, batch=1000, timeout=60.0, start=0, max_seconds=None):
    """{index: (category, detail)} for programs start..start+n-1 of this seed (batches not yet started
    after max_seconds are skipped)."""
    from concurrent.futures import ThreadPoolExecutor
    results = {}
    t0 = time.time()
    chunks = [(s, min(batch, start + n - s)) for s in range(start, start + n, batch)]

    def one(c):
        if max_seconds is None or time.time() - t0 < max_seconds:
            _run_batch(seed, c[0], c[1], timeout, results)
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        list(ex.map(one, chunks))
    return results


def signature(seed, i, cat):
    p = generate(seed, i)
    return (cat, p.kind, p.op)


def summarize(results, seed):
    counts = {c: 0 for c in CATEGORIES}
    sigs = {}
    for i in sorted(results):
        cat, detail = results[i]
        counts[cat] = counts.get(cat, 0) + 1
        if cat in FAILING:
            sig = signature(seed, i, cat)
            if sig not in sigs:
                sigs[sig] = {"count": 0, "first": i, "detail": detail}
            sigs[sig]["count"] += 1
    return counts, sigs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--max-seconds", type=float, default=None, help="start no batch after this")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--json", help="write the per-signature summary here")
    ap.add_argument("--no-repro", action="store_true", help="print signatures without reproducers")
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.seed, a.start, a.count)
        return 0
    t0 = time.time()
    results = run(a.n, a.seed, a.jobs, a.batch, a.timeout, a.start, a.max_seconds)
    counts, sigs = summarize(results, a.seed)
    print(f"{len(results)} programs (seed {a.seed}) in {time.time() - t0:.0f} s")
    for c in CATEGORIES:
        print(f"  {c:30s} {counts.get(c, 0)}")
    raised = sum(1 for c, d in results.values() if c == "ok" and d.startswith("both raised"))
    print(f"  (of the ok: {raised} raised the same kind of exception in both)")
    print(f"{len(sigs)} distinct failure signatures")
    for sig, s in sorted(sigs.items(), key=lambda kv: (kv[0][0], -kv[1]["count"])):
        print(f"\n=== {sig}  x{s['count']}  (first: program {s['first']})\n  {s['detail']}")
        if not a.no_repro:
            print(generate(a.seed, s["first"]).reproducer())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counts, "n": len(results), "seed": a.seed,
                       "signatures": [{"sig": list(k), **v} for k, v in sigs.items()]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
