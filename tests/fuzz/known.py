"""What the differential fuzzer is allowed to find today.

ALLOWLIST: differences that are not bugs of the library (torch quirks, documented non-goals), each with
its reason. KNOWN_BUGS: real bugs or gaps found by the fuzzer and not fixed yet, each with a minimal
reproducer (the body of a `prog(torch)`, run by tests/test_differential_fuzz.py as a non-strict xfail,
so a fix shows up as XPASS and the entry can be deleted).

Both are keyed by a signature (category, kind, op pattern): the op pattern is a glob pattern over
the program's op (programs.py names it) in which only `*` is special, always naming the feature concerned; no entry matches a whole
category or kind.
"""
import re

ALLOWLIST = {
    # (category, kind, op pattern): reason
}

KNOWN_BUGS = {
    # (category, kind, op pattern): (what is wrong, minimal reproducer: the body of prog(torch))
}


def lookup(table, sig):
    """The entry of table whose (category, kind, op pattern) matches sig, or None."""
    cat, kind, op = sig
    for (c, k, pat), v in table.items():
        if c == cat and k == kind and re.fullmatch(".*".join(map(re.escape, pat.split("*"))), op):
            return (c, k, pat), v
    return None
