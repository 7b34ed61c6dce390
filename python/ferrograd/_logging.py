"""torch._logging: switch on ferrograd.compile's reports, by function or by environment.

    ferrograd._logging.set_logs(graph_code=True, graph_breaks=True, recompiles=True, guards=True)
    TORCH_LOGS="graph_code,graph_breaks,recompiles,guards,dynamo" python train.py
    TORCH_LOGS="+dynamo"  (everything, as torch's verbose form)

Artifacts: `graph_code` (the source of each captured graph's replay), `graph_breaks` (each break
with its reason and user source line), `recompiles` (the guard that failed and caused a new
capture), `guards` (each entry's guards), `dynamic` (which dims became symbolic); `dynamo` at INFO
or lower adds one line per capture with its time per stage (record, graph, guards). Reports go to
the `ferrograd._dynamo` logger, which writes to stderr while any of them is on (FERROGRAD_LOGS
is read too, for when a script's environment already uses TORCH_LOGS for real torch).
"""

import logging
import os

__all__ = ["set_logs"]

ARTIFACTS = ("graph_code", "graph_breaks", "recompiles", "guards", "dynamic")
_enabled = set()
_dynamo_level = logging.WARNING
log = logging.getLogger("ferrograd._dynamo")
_handler = None


def _install_handler():
    global _handler
    if _enabled or _dynamo_level < logging.WARNING:
        if _handler is None:
            _handler = logging.StreamHandler()
            _handler.setFormatter(logging.Formatter("[ferrograd.compile] %(message)s"))
            log.addHandler(_handler)
        log.setLevel(min(_dynamo_level, logging.INFO))
        log.propagate = False
    elif _handler is not None:
        log.removeHandler(_handler)
        _handler = None
        log.setLevel(logging.NOTSET)
        log.propagate = True


def set_logs(*, dynamo=None, graph_code=False, graph_breaks=False, recompiles=False, guards=False,
             dynamic=False, **others):
    """Turn the compile reports on (True) or off; each call sets them all, as torch's does. Other
    keyword arguments torch accepts (aot, inductor, output_code, ...) are accepted and ignored."""
    global _dynamo_level
    _enabled.clear()
    for name, on in (("graph_code", graph_code), ("graph_breaks", graph_breaks), ("recompiles", recompiles),
                     ("guards", guards), ("dynamic", dynamic)):
        if on:
            _enabled.add(name)
    _dynamo_level = logging.WARNING if dynamo is None else int(dynamo)
    _install_handler()


def enabled(artifact):
    return artifact in _enabled


def emit(artifact, message):
    if artifact in _enabled:
        log.info(message) if log.isEnabledFor(logging.INFO) else log.warning(message)


def info(message):
    if _dynamo_level <= logging.INFO:
        log.info(message)


def _from_env():
    spec = os.environ.get("FERROGRAD_LOGS") or os.environ.get("TORCH_LOGS")
    if not spec:
        return
    kwargs = {}
    for item in spec.replace(" ", "").split(","):
        if not item:
            continue
        verbose = item.startswith("+")
        item = item.lstrip("+-")
        if item in ARTIFACTS:
            kwargs[item] = True
        elif item in ("dynamo", "all"):
            kwargs["dynamo"] = logging.DEBUG if verbose else logging.INFO
            if verbose or item == "all":
                kwargs.update({a: True for a in ARTIFACTS})
    if kwargs:
        set_logs(**kwargs)


_from_env()
