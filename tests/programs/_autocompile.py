"""Run a corpus program with every outermost module call compiled (a stress mode of ferrograd.compile).

    python tests/programs/_launch.py ferrograd tests/programs/_autocompile.py tests/programs/gpt_train.py

Each module called from outside any other module's forward gets its own compiled cache (as
`torch.compile(module)` would), so the program's own control flow, optimizers and data handling stay
eager while every model call records, guards and replays. The RESULT lines must equal the plain run's
(tests/test_compile.py::test_corpus_programs_with_compiled_modules, behind FG_COMPILE_PROGRAMS). A
summary goes to stderr: `AUTOCOMPILE entries=N broken=B segmented=S`.
"""
import atexit
import runpy
import sys

from ferrograd._dynamo import capture
from ferrograd._dynamo.eval_frame import CompiledFrame
from ferrograd.nn.modules.module import Module

_plain_call = Module._wrapped_call_impl
_depth = [0]
_frames = {}


def _compiled_call(self, *args, **kwargs):
    if _depth[0] or capture._current is not None:
        return _plain_call(self, *args, **kwargs)
    entry = _frames.get(id(self))
    if entry is None or entry[0] is not self:
        entry = _frames[id(self)] = (self, CompiledFrame(self._call_impl, name=type(self).__name__))
    _depth[0] += 1
    try:
        return entry[1](*args, **kwargs)
    finally:
        _depth[0] -= 1


def _report():
    entries = [e for _, f in _frames.values() for e in f.entries]
    broken = [e for e in entries if e.breaks]
    seg = [e for e in broken if e.segmented is not None]
    print(f"AUTOCOMPILE entries={len(entries)} broken={len(broken)} segmented={len(seg)}", file=sys.stderr)


Module.__call__ = _compiled_call
atexit.register(_report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
