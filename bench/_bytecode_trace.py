"""Run a Python program (``sublane serve``) with a bytecode counter switched by signals.

``python bench/_bytecode_trace.py PROGRAM ARGS…`` runs ``PROGRAM`` as ``__main__``. SIGUSR1 starts
counting on the main thread (the gateway's event loop): every function entered or resumed, and
every bytecode executed, by code object. SIGUSR2 stops and writes the counts as JSON to
``BENCH_BYTECODES_OUT``. Used by ``bench/bytecodes.py``; tracing runs the loop ~30× slower.
"""

from __future__ import annotations

import collections
import json
import os
import runpy
import signal
import sys
from types import CodeType, FrameType
from typing import Any

_ops: collections.Counter[CodeType] = collections.Counter()
_calls: collections.Counter[CodeType] = collections.Counter()


def _trace(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "opcode":
        _ops[frame.f_code] += 1
    elif event == "call":  # a function entered, or a generator or coroutine resumed
        frame.f_trace_opcodes = True
        _calls[frame.f_code] += 1
    return _trace


def _where(code: CodeType) -> str:
    return f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}"


def _start(_signum: int, _frame: Any) -> None:
    _ops.clear()
    _calls.clear()
    sys.settrace(_trace)


def _stop(_signum: int, _frame: Any) -> None:
    sys.settrace(None)
    out: dict[str, dict[str, int]] = {"bytecodes": {}, "calls": {}}
    for code, count in _ops.items():
        out["bytecodes"][_where(code)] = out["bytecodes"].get(_where(code), 0) + count
    for code, count in _calls.items():
        out["calls"][_where(code)] = out["calls"].get(_where(code), 0) + count
    with open(os.environ["BENCH_BYTECODES_OUT"], "w", encoding="utf-8") as file:
        json.dump(out, file)


def main() -> None:
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    program = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
