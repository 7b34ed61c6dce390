"""Differential fuzzing beyond single ops: generated programs over nn modules,
optimizers and schedulers, DataLoader, hooks, custom autograd.Functions, checkpoint, fx, autograd.grad
and in-place ops on views run in torch and in the library under test (tests/fuzz/), and their outcomes
(value trees or exception kinds) are compared.

test_fuzz_run: a fixed seed and a fixed number of programs (about a minute on the 2-core machine), run in
worker subprocesses so that a segfault is caught and attributed. It fails on any crash, hang, panic or
wrong value, and on any other mismatch whose signature is in neither fuzz.known.ALLOWLIST nor
fuzz.known.KNOWN_BUGS; the message carries each new signature's reproducer.
test_known_bug: each KNOWN_BUGS entry's minimal reproducer, a non-strict xfail (a fix shows as XPASS).

FERROGRAD_FUZZ_LONG=1 runs 10,000 programs; FERROGRAD_FUZZ_N=k runs k; FERROGRAD_FUZZ_SEED picks the seed.
"""
import os
import sys

import pytest
import torch

from conftest import AGAINST_TORCH, fg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz import run as fuzz_run  # noqa: E402
from fuzz.harness import classify, run_program  # noqa: E402
from fuzz.known import ALLOWLIST, KNOWN_BUGS, lookup  # noqa: E402
from fuzz.programs import HEADER, generate  # noqa: E402

N = int(os.environ.get("FERROGRAD_FUZZ_N", "10000" if os.environ.get("FERROGRAD_FUZZ_LONG") == "1" else "300"))
SEED = int(os.environ.get("FERROGRAD_FUZZ_SEED", "0"))
ALWAYS_FAIL = ("crash", "hang", "panic", "wrong_value")


def test_fuzz_run():
    results = fuzz_run.run(N, seed=SEED, jobs=1, batch=1000, timeout=120.0)
    assert len(results) == N, f"only {len(results)} of {N} programs reported"
    counts, sigs = fuzz_run.summarize(results, SEED)
    problems = []
    for sig, s in sigs.items():
        if lookup(KNOWN_BUGS, sig):
            continue  # reported by test_known_bug
        if sig[0] not in ALWAYS_FAIL and lookup(ALLOWLIST, sig):
            continue
        p = generate(SEED, s["first"])
        problems.append(f"{sig} x{s['count']}: {s['detail']}\n--- reproducer (program {s['first']}):\n{p.reproducer()}")
    assert not problems, f"counts {counts}\n" + "\n".join(problems)
    assert counts["ok"] > 0


def test_fuzz_allowlist_is_specific():
    for table in (ALLOWLIST, KNOWN_BUGS):
        for (cat, kind, pat), v in table.items():
            assert pat.strip("*:") and pat != "*", (cat, kind, pat)
            assert v and (v if isinstance(v, str) else v[0]).strip(), "every entry needs a reason"
    for sig in ALLOWLIST:
        assert sig[0] not in ALWAYS_FAIL, f"{sig}: crashes, panics and wrong values cannot be allow-listed"


@pytest.mark.parametrize("sig", [pytest.param(s, marks=pytest.mark.xfail(strict=False, reason=KNOWN_BUGS[s][0]))
                                 for s in KNOWN_BUGS], ids=lambda s: ":".join(s))
def test_known_bug(sig):
    body = KNOWN_BUGS[sig][1]
    src = HEADER.format(seed=0) + "\n".join("    " + ln if ln.strip() else "" for ln in body.splitlines()) + "\n"
    t_out = run_program(src, torch)
    cat, detail = classify(t_out, run_program(src, fg))
    assert cat == "ok", f"{cat}: {detail}"
