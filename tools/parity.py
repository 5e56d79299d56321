#!/usr/bin/env python3
"""parity: TraceLoom checked against the reference TraceLoom 0.1.4, relation by relation.

Analyses every profile of the parity set with both tools and compares every relation the
reference publishes, by content:

  tools/parity.py [--build build] [--only NAME[,NAME...]] [--relation GLOB] [--query GLOB]
                  [--queries DIR] [--reuse] [--verbose] [--require-reference]
                  [--report build/parity/report.md]

The reference runs from its own virtual environment: $TRACELOOM_REF_BIN if set, else
build/refvenv (created with `pip install traceloom==0.1.4` when missing). Where it cannot be
installed (no network, no wheel for the platform) the run prints why and exits 0 (2 with
--require-reference), so `make parity` is CI-safe.

Profiles (PROFILES below): every fixture of ../shared/fixtures materialized by `make
fixtures` (build/fixtures), the four idle-evidence fixtures, and generated profiles
(tools/genprofile.py: Ascend monolithic, split, two ranks, ACL graph; Nsight eager and CUDA
graph; the Hygon fixture). The reference writes one database per input, so a two-rank
profile is compared rank by rank against the rows of that db_idx in ours.

Canonical rows. A relation's rows are compared as multisets over the columns both publish,
after these documented rewrites (docs/PARITY.md, "How rows are compared"):
  - ids are replaced by what they identify, in every text value: an event or device work
    by its source table and row, a runtime call likewise, an anchor by (device, anchor_idx),
    a tree node by its slot path from the root (N003 -> P[0:2.1]: the rank of each node's
    first anchor among its siblings, so local numbering never matters), an occurrence by
    its node and occurrence_idx, a tree id by T, a launch by (device, start, correlation);
  - numbers are compared at 1e-3 (ns in us columns; integral floats as integers), and text
    that is a number as that number;
  - intended differences listed in docs/PARITY.md (columns, rows on one side, or a whole
    relation) are set aside; a relation that only agrees after that is "intended".
Each relation is equal, intended or known (equal once the entries of docs/PARITY.md are
applied), pending (another issue publishes it), different (printed with the columns whose
values differ and a sample row from each side) or missing. The exit status is 1 when a
relation is different or missing, or one tool refuses a profile the other analyses.

Report queries. Then each of the reference's 34 report queries (../shared/reference/
report-sql, --queries) runs unchanged on both analyses of the profile, and the rows it
prints are compared the same way: same, empty on both, differing where a relation it reads
is a known / intended difference (K / I), ours alone (the reference does not publish what it
reads, or does not read the input: the Kineto trace), different (fails the run) or failing
(fails the run when ours fails). The query x profile table follows the relation table in the
report.
"""

import argparse
import collections
import fnmatch
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF_VERSION = "0.1.4"
SHARED = os.environ.get("TRACELOOM_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures"))


# ---------------------------------------------------------------------------------------
# The reference


def reference_binary(build, install=True):
    """(path, None) of the reference CLI, or (None, why not)."""
    env = os.environ.get("TRACELOOM_REF_BIN")
    if env:
        return (env, None) if os.access(env, os.X_OK) else (None, f"TRACELOOM_REF_BIN={env} is not executable")
    venv = os.path.join(build, "refvenv")
    exe = os.path.join(venv, "bin", "traceloom")
    py = os.path.join(venv, "bin", "python")
    if os.access(exe, os.X_OK) and _ref_version(py) == REF_VERSION:
        return exe, None
    if not install:
        return None, f"no reference venv at {venv}"
    shutil.rmtree(venv, ignore_errors=True)
    steps = [[sys.executable, "-m", "venv", venv],
             [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--retries", "1", "--timeout", "20", f"traceloom=={REF_VERSION}"]]
    for cmd in steps:
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            last = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["(no output)"]
            what = "pip install" if "pip" in cmd else "python3 -m venv"
            return None, f"{what} failed: {last[0]}"
    if _ref_version(py) != REF_VERSION:
        return None, f"installed traceloom is not {REF_VERSION}"
    return exe, None


def _ref_version(py):
    if not os.access(py, os.X_OK):
        return None
    p = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('traceloom'))"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


# ---------------------------------------------------------------------------------------
# The parity set of profiles


class Profile:
    def __init__(self, name, ours, ref, gen=None, materialize=None, group="fixture"):
        self.name = name
        self.ours = ours          # path given to our CLI
        self.ref = ref            # list of paths given to the reference, one per rank
        self.gen = gen            # genprofile arguments (generated under build/parity/gen)
        self.materialize = materialize  # SQL scripts -> database (idle-evidence fixtures)
        self.group = group


def profiles(build):
    fx = os.path.join(build, "fixtures")
    gen = os.path.join(build, "parity", "gen")
    out = []

    def mono(name, rel):
        d = os.path.join(fx, rel)
        out.append(Profile(name, d, [os.path.join(d, "PROF_0", "msprof_0.db")]))

    def split(name, rel):
        d = os.path.join(fx, rel, "PROF_0")
        out.append(Profile(name, d, [d]))

    mono("minimal_smoke", "minimal_smoke/mono")
    mono("aclgraph_smoke", "aclgraph_smoke/mono")
    mono("aclgraph_smoke.current_schema", "aclgraph_smoke/mut_current_schema")
    mono("aclgraph_smoke.single_slot", "aclgraph_smoke/mut_single_slot")
    mono("exact_hlt", "exact_hlt/mono")
    split("exact_hlt.split", "exact_hlt/split")
    for m in ("device_order_without_host_api", "incomplete_compute_schema",
              "missing_communication_schema"):
        mono(f"exact_hlt.{m}", f"exact_hlt/mut_{m}")
    split("exact_hlt.incomplete_split_task_info", "exact_hlt/mut_incomplete_split_task_info")
    mono("body_mismatch", "body_mismatch/mono")
    mono("body_mismatch.body_sequence_mismatch", "body_mismatch/mut_body_sequence_mismatch")
    mono("split_golden", "split_golden/mono")
    split("split_golden.split", "split_golden/split")
    for n in ("incompatible_monolithic", "unusable_monolithic"):
        mono(f"split_golden.neg_{n}", f"split_golden/neg_{n}")
    # the report fixtures (tests/fixtures/reports): host calls between anchors, and a
    # communication op with its detail tasks (event reconciliation)
    mono("reports.host_activity", "reports/host_activity")
    mono("reports.reconcile", "reports/reconcile")
    idle = os.path.join(SHARED, "idle_evidence")
    for case in sorted(os.listdir(idle)) if os.path.isdir(idle) else []:
        script = os.path.join(idle, case, "fixture.sql")
        if os.path.isfile(script):
            d = os.path.join(build, "parity", "idle", case)
            db = os.path.join(d, "PROF_0", "msprof_0.db")
            out.append(Profile(f"idle.{case}", d, [db], materialize=(db, [script])))

    def g(name, args, ref_rel, ours_rel="", ranks=1):
        d = os.path.join(gen, name)
        refs = [os.path.join(d, ref_rel.format(r=r)) for r in range(ranks)]
        out.append(Profile(name, os.path.join(d, ours_rel), refs, gen=(d, args), group="generated"))

    def small(prefill=1, aux=0):
        return ["--prefill-steps", str(prefill), "--decode-steps", "4", "--layers", "3", "--ops",
                "5", "--aux", str(aux), "--noise", "0", "--missing", "0", "--seed", "19", "--quiet"]

    # With a prefill step the two tools phase the decode loop differently (docs/PARITY.md);
    # the decode-only profiles compare whole trees.
    g("gen.ascend", ["--format", "ascend"] + small(), "PROF_{r}/msprof_{r}.db")
    g("gen.ascend_decode", ["--format", "ascend"] + small(prefill=0), "PROF_{r}/msprof_{r}.db")
    g("gen.ascend_graph", ["--format", "ascend", "--graph"] + small(), "PROF_{r}/msprof_{r}.db")
    g("gen.split", ["--format", "split"] + small(prefill=0), "PROF_{r}")
    g("gen.two_ranks", ["--format", "ascend", "--ranks", "2"] + small(prefill=0),
      "PROF_{r}/msprof_{r}.db", ranks=2)
    g("gen.nsys", ["--format", "nsys"] + small(aux=0.05), "profile.sqlite", "profile.sqlite")
    g("gen.nsys_decode", ["--format", "nsys"] + small(prefill=0), "profile.sqlite", "profile.sqlite")
    g("gen.nsys_cuda_graph", ["--format", "nsys", "--cuda-graph", "node"] + small(),
      "profile.sqlite", "profile.sqlite")
    hy = os.path.join(fx, "hygon", "hipprof.db")
    out.append(Profile("hygon", hy, [hy], group="generated"))
    nsg = os.path.join(fx, "nsys", "nsys_graph.sqlite")
    out.append(Profile("nsys_graph", nsg, [nsg], group="generated"))
    # The reference reads no Kineto trace ("not a supported Ascend/Hygon/CUDA profile"): ours
    # alone analyses it, and every report query must answer there.
    kin = os.path.join(fx, "kineto", "gpu_steps.pt.trace.json")
    out.append(Profile("kineto", kin, [], group="ours-only"))
    return out


def prepare(p):
    """Generates or materializes the profile if needed; None or why it cannot."""
    if p.gen:
        d, args = p.gen
        stamp = os.path.join(d, ".args")
        want = " ".join(args)
        if not (os.path.isfile(stamp) and open(stamp).read() == want):
            shutil.rmtree(d, ignore_errors=True)
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "genprofile.py"),
                                "--out", d] + args, capture_output=True, text=True)
            if r.returncode != 0:
                return f"genprofile failed: {r.stderr.strip()[-300:]}"
            with open(stamp, "w") as f:
                f.write(want)
    if p.materialize:
        db, scripts = p.materialize
        if not os.path.isfile(db):
            os.makedirs(os.path.dirname(db), exist_ok=True)
            con = sqlite3.connect(db)
            for s in scripts:
                con.executescript(open(s).read())
            con.commit()
            con.close()
    if not os.path.exists(p.ours):
        return f"{p.ours} missing (run `make fixtures`)"
    return None


# ---------------------------------------------------------------------------------------
# Running both tools


def run_ours(build, p, out):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    for f in (out,):
        if os.path.exists(f):
            os.remove(f)
    r = subprocess.run([os.path.join(build, "traceloom"), p.ours, "--output", out],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else _last_line(r)


def run_ref(ref, p, outs):
    errs = []
    for src, out in zip(p.ref, outs):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if os.path.exists(out):
            os.remove(out)
        r = subprocess.run([ref, src, "--output", out], capture_output=True, text=True,
                           cwd=os.path.dirname(out))
        errs.append(None if r.returncode == 0 and os.path.isfile(out) else _last_line(r))
    return errs


def _last_line(r):
    lines = (r.stderr + r.stdout).strip().splitlines()
    err = [ln for ln in lines if "rror" in ln]
    return (err or lines or ["exit %d" % r.returncode])[0][:200]


# ---------------------------------------------------------------------------------------
# Intended differences: the machine-readable table of docs/PARITY.md


class Intended:
    """One row of a table of docs/PARITY.md: "Intended differences" (status intended),
    "Known differences" (status known: to converge where the cause lives) or "Pending
    relations" (status pending: another issue publishes them)."""

    def __init__(self, status, relations, kind, arg, where, profiles, reason, within=None):
        self.status = status          # intended | known | pending
        self.relations = relations    # globs
        self.kind = kind              # columns | ref rows | our rows | relation | pending
        self.arg = arg                # columns list, SQL condition, or None
        self.where = where            # columns: only on the rows where this holds (SQL)
        self.within = within          # columns: equal within this absolute tolerance
        self.profiles = profiles      # globs
        self.reason = reason
        self.used = False

    def applies(self, rel, prof):
        return (any(fnmatch.fnmatchcase(rel, g) for g in self.relations)
                and any(fnmatch.fnmatchcase(prof, g) for g in self.profiles))


SECTIONS = {"intended differences": "intended", "known differences": "known",
            "pending relations": "pending"}


def load_intended(path):
    """The entries of docs/PARITY.md. A table row reads
         | `relation` `relation*` | what | profiles | reason |
    with what one of: columns `a`, `b` [where `SQL`] / ref rows `SQL` / our rows `SQL` /
    relation / pending; profiles `all` or comma-separated globs (a two-rank profile's
    ranks are NAME#0, NAME#1; the entry names the profile)."""
    rows = []
    if not os.path.isfile(path):
        return rows
    status = None
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            status = SECTIONS.get(line[3:].strip().lower())
        if not line.startswith("| `") or status is None:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        rels = re.findall(r"`([^`]+)`", cells[0])
        what = cells[1]
        profs = [s.strip() for s in cells[2].split(",")] if cells[2] != "all" else ["*"]
        m = re.match(r"(columns|ref rows|our rows|relation|pending)\b:?\s*(.*)", what)
        if not m:
            raise SystemExit(f"docs/PARITY.md: cannot read '{what}' (columns / ref rows / our rows / relation / pending)")
        kind, arg = m.group(1), m.group(2).strip()
        where = within = None
        if kind == "columns":
            cols, _, cond = arg.partition(" where ")
            cols, _, tol = cols.partition(" within ")
            arg = re.findall(r"`([^`]+)`", cols)
            where = " ".join(re.findall(r"`([^`]+)`", cond)) or None
            within = float(tol.strip()) if tol.strip() else None
        elif kind in ("ref rows", "our rows"):
            arg = " ".join(re.findall(r"`([^`]+)`", arg))
        rows.append(Intended(status, rels, kind, arg, where, profs, cells[3], within))
    return rows


# ---------------------------------------------------------------------------------------
# Canonical rows


ID_RE = re.compile(
    r"replay-body-domain-\d+(?:-(?:pattern|occurrence|position)-\d+)?|replay-cost-aggregate-\d+"
    r"|replay-body-pattern-(?:run|issue)-\d+"
    r"|device-work-event-\d+|device-work-graph-launch-\d+|runtime-device-relation-\d+|runtime-call-\d+|graph-body-member-\d+"
    r"|graph-launch-\d+|node-(?:d\d+-)?N\d+(?:-occurrence-\d+)?|event-\d+|anchor-\d+"
    r"|role-decision-\d+|role-issue-\d+"
    r"|tree-db\d+-dev\d+|native-report-tree(?:-d\d+)?|(?<![A-Za-z0-9_])N\d{3,}(?![0-9])")
NUM_RE = re.compile(r"-?\d+(?:\.\d+)?")


class Side:
    """One analysis database restricted to one input (db_idx), with its id maps."""

    def __init__(self, path, db_idx):
        self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.con.execute("PRAGMA query_only = 1")
        self.db = db_idx
        self.names = {r[0]: r[1] for r in self.con.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name LIKE 'traceloom%'")}
        self.ids = {}
        self.local = {}            # (device, 'N003') -> key
        # Several inputs in one analysis (ours on a multi-rank profile): a relation without a
        # db_idx column is restricted to this input through the first key it has (RANK_KEYS).
        self.ranked = (self._q("SELECT count(DISTINCT db_idx) FROM traceloom_event") or [(1,)])[0][0] > 1
        self._build_maps()

    def cols(self, rel):
        try:
            return [d[0] for d in self.con.execute(f'SELECT * FROM "{rel}" LIMIT 0').description]
        except sqlite3.Error:
            return None

    def _q(self, sql):
        try:
            return self.con.execute(sql).fetchall()
        except sqlite3.Error:
            return []

    def _build_maps(self):
        d = self.db
        for eid, tab, key in self._q(
                f"SELECT event_id, source_table, source_key FROM traceloom_event WHERE db_idx = {d}"):
            self.ids[eid] = f"E[{tab}:{key}]"
            self.ids["device-work-" + str(eid)] = f"W[{tab}:{key}]"
        # A graph launch's own device work (no event) by the row that shows it: the same
        # naming scheme in both (device-work-graph-launch-<n>), numbered differently.
        for wid, tab, key in self._q(
                f"SELECT device_work_id, source_table, source_key FROM traceloom_device_work "
                f"WHERE db_idx = {d} AND work_kind = 'graph_launch'"):
            self.ids[wid] = f"W[{tab}:{key}]"
        for cid, tab, key in self._q(
                f"SELECT runtime_call_id, source_table, source_key FROM traceloom_runtime_call WHERE db_idx = {d}"):
            self.ids[cid] = f"C[{tab}:{key}]"
        for rid, cid, wid in self._q(
                f"SELECT relation_id, runtime_call_id, device_work_id FROM traceloom_runtime_device_relation WHERE db_idx = {d}"):
            self.ids[rid] = f"R[{self.ids.get(cid, cid)}>{self.ids.get(wid, wid)}]"
        # Evidence-role decisions by the event they decide (numbered in each tool's event
        # order), their issues by decision and code.
        for did, eid in self._q(
                f"SELECT decision_id, event_id FROM traceloom_evidence_role_decision WHERE db_idx = {d}"):
            self.ids[decision_text(did)] = f"RD[{self.ids.get(eid, eid)}]"
        for iid, did, code in self._q(
                "SELECT issue_id, decision_id, code FROM traceloom_evidence_role_issue"):
            did = decision_text(did)
            if did in self.ids:
                self.ids[iid] = f"RI[{self.ids[did]}:{code}]"
        for aid, dev, idx in self._q(
                f"SELECT anchor_id, device_id, anchor_idx FROM traceloom_anchor WHERE db_idx = {d}"):
            self.ids[aid] = f"A[{dev}:{idx}]"
        # Replay cost aggregates by (device, stream, task ordinal); body-pattern domains by
        # (device, stream, rank among the domains of that stream), their patterns,
        # occurrences and positions by their index within the domain.
        for gid, dev, stream, task in self._q(
                f"SELECT aggregate_id, device_id, stream_id, task_ordinal FROM "
                f"traceloom_replay_cost_aggregate WHERE db_idx = {d}"):
            self.ids[gid] = f"G[{dev}:{stream}:{task}]"
        seen = collections.Counter()
        for did, dev, stream in self._q(
                f"SELECT domain_id, device_id, stream_id FROM traceloom_replay_body_pattern_domain "
                f"WHERE db_idx = {d} ORDER BY rowid"):
            seen[(dev, stream)] += 1
            self.ids[did] = f"D[{dev}:{stream}:{seen[(dev, stream)]}]"
        for lid, dev, start, corr in self._q(
                f"SELECT launch_id, device_id, start_ns, correlation_id FROM traceloom_graph_launch WHERE db_idx = {d}"):
            self.ids[lid] = f"L[{dev}:{start}:{corr}]"
        # Tree nodes: a slot path from the root, each step the rank of the child's first
        # anchor among its siblings.
        nodes = self._q(f"SELECT node_id, local_node_id, device_id, path, first_anchor_idx "
                        f"FROM traceloom_viz_node WHERE db_idx = {d}")
        by_path = {(dev, path): (nid, loc, first) for nid, loc, dev, path, first in nodes}
        kids = collections.defaultdict(list)
        for (dev, path), (nid, loc, first) in by_path.items():
            parent = path.rsplit("/", 1)[0] if "/" in path else None
            kids[(dev, parent)].append((first if first is not None else -1, path))
        slot = {}
        for key, lst in kids.items():
            for i, (_, path) in enumerate(sorted(lst), 1):
                slot[(key[0], path)] = i

        def spath(dev, path):
            parts = path.split("/")
            return ".".join(str(slot.get((dev, "/".join(parts[:i + 1])), "?")) for i in range(1, len(parts)))

        for (dev, path), (nid, loc, first) in by_path.items():
            k = f"P[{dev}:{spath(dev, path)}]"
            self.ids[nid] = k
            self.local[(dev, loc)] = k
            self.local.setdefault((None, loc), k if (None, loc) not in self.local else None)
        devs = {dev for dev, _ in by_path}
        self.single_device = next(iter(devs)) if len(devs) == 1 else None

    def canon_text(self, s, dev):
        def sub(m):
            t = m.group(0)
            if t.startswith("tree-db") or t.startswith("native-report-tree"):
                return "T"
            if t.startswith("replay-body-pattern-"):   # one run per input; issues by id only
                return "RUN" if "-run-" in t else "ISSUE"
            if t.startswith("N"):
                k = self.local.get((dev, t)) or self.local.get((self.single_device, t)) \
                    or self.local.get((None, t))
                return k or t
            body = re.match(r"(replay-body-domain-\d+)-(pattern|occurrence|position)-(\d+)$", t)
            if body:
                k = self.ids.get(body.group(1))
                return f"{k}.{body.group(2)[:3]}{body.group(3)}" if k else t
            occ = re.match(r"(node-(?:d\d+-)?N\d+)-occurrence-(\d+)$", t)
            if occ:
                k = self.ids.get(occ.group(1))
                return f"{k}#{occ.group(2)}" if k else t
            return self.ids.get(t, t)
        s = ID_RE.sub(sub, s)
        if self.db:
            s = re.sub(r"\bd%d\b" % self.db, "d0", s)
        return s

    def rows(self, rel, cols, where=None, masks=()):
        """Canonical rows of rel over cols; masks: (column, SQL condition) pairs whose
        column reads NULL on the rows where the condition holds."""
        def expr(c):
            if c == "1":           # every column set aside: the rows are still counted
                return "1"
            conds = [w for m, w in masks if m == c]
            return f'CASE WHEN {" OR ".join(f"({w})" for w in conds)} THEN NULL ELSE "{c}" END' \
                if conds else f'"{c}"'
        sel = ", ".join(expr(c) for c in cols)
        conds = []
        all_cols = self.cols(rel) or []
        if "db_idx" in all_cols:
            conds.append(f"db_idx = {self.db}")
        elif self.ranked:
            key = next(((c, t, k) for c, t, k in RANK_KEYS if c in all_cols), None)
            if key:
                conds.append(f'"{key[0]}" IN (SELECT {key[2]} FROM {key[1]} WHERE db_idx = {self.db})')
        if where:
            conds.append(f"({where})")
        sql = f'SELECT {sel} FROM "{rel}"' + (" WHERE " + " AND ".join(conds) if conds else "")
        dev_i = cols.index("device_id") if "device_id" in cols else None
        plain = {i for i, c in enumerate(cols) if c in PLAIN_COLUMNS}
        db_i = {i for i, c in enumerate(cols) if c == "db_idx" or c.startswith("db_idx:")}
        decision_i = {i for i, c in enumerate(cols) if c in DECISION_COLUMNS}
        out = []
        for r in self.con.execute(sql):
            dev = r[dev_i] if dev_i is not None else None
            row = []
            for i, v in enumerate(r):
                if i in db_i and v is not None:
                    v = v - self.db
                if i in decision_i:
                    v = decision_text(v)
                row.append(canon_value(v, self, dev) if i not in plain else v)
            out.append(tuple(row))
        return out


def canon_value(v, side, dev):
    if isinstance(v, str):
        if v == "":
            return None          # the reference writes '' for absent text, ours NULL
        if NUM_RE.fullmatch(v):
            v = float(v) if "." in v else int(v)
        else:
            return side.canon_text(v, dev)
    if isinstance(v, float):
        v = round(v + 0.0, 3)
        if v == int(v) and abs(v) < 2 ** 62:
            return int(v)
        return v
    if isinstance(v, bytes):
        return v.hex()
    return v


# ---------------------------------------------------------------------------------------
# Comparing one relation


# A relation without db_idx, on a multi-input analysis: (its column, the relation that has
# that key with a db_idx, the key's column there), the first present decides.
RANK_KEYS = [("anchor_id", "traceloom_anchor", "anchor_id"),
             ("decision_id", "traceloom_evidence_role_decision", "decision_id"),
             ("event_id", "traceloom_event", "event_id"),
             ("bubble_id", "traceloom_structure_bubble_occurrence", "bubble_id"),
             ("interval_id", "traceloom_anchor_host_interval", "interval_id"),
             ("runtime_call_id", "traceloom_runtime_call", "runtime_call_id"),
             ("node_id", "traceloom_viz_node", "node_id")]

# Evidence-role decision ids: ours is the event's integer key (event_n, docs/PARITY.md), the
# reference's the text role-decision-<n>; both are compared as the decision's event.
DECISION_COLUMNS = {"decision_id", "role_decision_id"}


def decision_text(v):
    return f"role-decision-{v}" if isinstance(v, int) else v


# Columns compared as they are: local ids of another tree than the node tree.
PLAIN_COLUMNS = {"local_pattern_id", "local_position_id"}
GLOBAL_SKIP = {"raw_json"}   # see docs/PARITY.md: ours stores no per-row JSON


class Result:
    def __init__(self, status, detail="", notes=()):
        self.status = status      # equal | intended | different | missing | pending | both-empty ...
        self.detail = detail
        self.notes = list(notes)


def compare(rel, ref, ours, prof, intended):
    entries = [e for e in intended if e.applies(rel, prof)]
    for e in entries:
        if e.kind in ("relation", "pending") and (e.kind == "relation" or ours.cols(rel) is None):
            e.used = True
            return Result(e.status, e.reason)
    rcols = ref.cols(rel)
    ocols = ours.cols(rel)
    if ocols is None:
        return Result("missing", "not published by ours")
    missing_cols = [c for c in rcols if c not in ocols]
    common = [c for c in rcols if c in ocols and c not in GLOBAL_SKIP]

    def side_rows(skip_cols, ref_where, our_where, masks=()):
        cols = [c for c in common if c not in skip_cols] or ["1"]
        try:
            return cols, ref.rows(rel, cols, ref_where, masks), ours.rows(rel, cols, our_where, masks)
        except sqlite3.Error as err:
            return cols, None, str(err)

    cols, rr, orows = side_rows(set(), None, None)
    if rr is None:
        return Result("different", f"query failed: {orows}")
    strict_equal = collections.Counter(rr) == collections.Counter(orows) and not missing_cols
    if strict_equal:
        return Result("equal", f"{len(rr)} rows")
    def applied(ents):
        """(equal, cols, ref rows, our rows, columns missing) once ents are applied."""
        skip = set()
        rw, ow, masks, tol = [], [], [], {}
        for e in ents:
            if e.kind == "columns" and e.within is not None:
                tol.update((c, e.within) for c in e.arg)
            elif e.kind == "columns" and e.where:
                masks.extend((c, e.where) for c in e.arg)
            elif e.kind == "columns":
                skip.update(e.arg)
            elif e.kind == "ref rows":
                rw.append(e.arg)
            elif e.kind == "our rows":
                ow.append(e.arg)
        left = [c for c in missing_cols if c not in skip]
        c2, r2, o2 = side_rows(skip, " AND ".join(f"NOT ({w})" for w in rw) or None,
                               " AND ".join(f"NOT ({w})" for w in ow) or None, masks)
        same = r2 is not None and (collections.Counter(r2) == collections.Counter(o2)
                                   or (tol and equal_within(c2, r2, o2, tol))) and not left
        return same, c2, r2, o2, left

    missing_left = missing_cols
    if entries:
        # A relation is known only where a known entry is needed: one that the intended
        # entries alone make equal is intended, whatever known entry also names it.
        groups = [entries]
        intended_only = [e for e in entries if e.status != "known"]
        if intended_only and len(intended_only) < len(entries):
            groups.insert(0, intended_only)
        for ents in groups:
            same, cols, rr2, or2, missing_left = applied(ents)
            if rr2 is None:
                return Result("different", f"query failed with the intended exclusions: {or2}")
            if same:
                for e in ents:
                    e.used = True
                st = "known" if any(e.status == "known" for e in ents) else "intended"
                return Result(st, f"{len(rr2)} rows after exclusions")
        rr, orows = rr2, or2
    return Result("different", describe(cols, rr, orows, missing_left))


def equal_within(cols, rr, orows, tol):
    """Equal multisets when the tolerance columns may differ by up to their tolerance:
    rows are paired by the other columns, then by the sorted tolerance values."""
    ti = [i for i, c in enumerate(cols) if c in tol]
    eps = [tol[cols[i]] + 1e-9 for i in ti]

    def split(rows):
        d = collections.defaultdict(list)
        for r in rows:
            d[tuple(v for i, v in enumerate(r) if i not in ti)].append(tuple(r[i] for i in ti))
        return {k: sorted(v, key=repr) for k, v in d.items()}
    a, b = split(rr), split(orows)
    if a.keys() != b.keys():
        return False
    for k in a:
        if len(a[k]) != len(b[k]):
            return False
        for x, y in zip(a[k], b[k]):
            for u, v, e in zip(x, y, eps):
                if u != v and not (isinstance(u, (int, float)) and isinstance(v, (int, float))
                                   and abs(u - v) <= e):
                    return False
    return True


def describe(cols, rr, orows, missing_cols):
    parts = []
    if missing_cols:
        parts.append("columns missing in ours: " + ", ".join(missing_cols))
    parts.append(f"rows ref {len(rr)} ours {len(orows)}")
    if cols and rr is not None:
        diff_cols = []
        for i, c in enumerate(cols):
            if collections.Counter(r[i] for r in rr) != collections.Counter(r[i] for r in orows):
                diff_cols.append(c)
        if diff_cols:
            parts.append("values differ in: " + ", ".join(diff_cols))
        cr, co = collections.Counter(rr), collections.Counter(orows)
        only_r = sorted((cr - co).elements(), key=repr)[:1]
        only_o = sorted((co - cr).elements(), key=repr)[:1]
        show = diff_cols[:8] or cols[:8]
        idx = [cols.index(c) for c in show]
        if only_r:
            parts.append("ref: " + _fmt(show, idx, only_r[0]))
        if only_o:
            parts.append("ours: " + _fmt(show, idx, only_o[0]))
    return "; ".join(parts)


def _fmt(show, idx, row):
    return "{" + ", ".join(f"{c}={row[i]!r}" for c, i in zip(show, idx)) + "}"



# ---------------------------------------------------------------------------------------
# The report queries: the reference's 34 published queries, run unchanged on both analyses


QUERIES = os.path.join(ROOT, "..", "shared", "reference", "report-sql")
# Queries over relations the reference 0.1.4 does not publish (its schema lacks idle
# evidence and structural units; node-cost-breakdown reads our node cost columns): ours
# must answer them, the reference is not asked.
REF_SILENT = ("idle-evidence-*", "structural-composition*", "node-cost-breakdown")
QUERY_MARK = {"same": "=", "empty": "0", "differs": "D", "known": "K", "intended": "I", "ours-only": "+", "ours-only-empty": "+0",
              "one-errors": "E", "both-error": "R", "not-compared": "·"}


def run_query(path, sql):
    """(column names, rows) of the last statement of sql that returns rows, run unchanged
    on the database at path (read-only), or (None, the error)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cols, rows, stmt = None, [], ""
    try:
        for line in sql.splitlines(keepends=True):
            stmt += line
            if not sqlite3.complete_statement(stmt):
                continue
            body = "\n".join(ln for ln in stmt.splitlines() if not ln.strip().startswith("--"))
            if body.strip().strip(";").strip():
                cur = con.execute(stmt)
                if cur.description:
                    cols, rows = [d[0] for d in cur.description], cur.fetchall()
            stmt = ""
        return cols, rows
    except sqlite3.Error as err:
        return None, str(err)
    finally:
        con.close()


def query_relations(sql):
    """The traceloom_* relations a query reads (comments left out)."""
    body = "\n".join(ln.split("--", 1)[0] for ln in sql.splitlines())
    return sorted(set(re.findall(r"\btraceloom_\w+", body)))


class QueryResult:
    def __init__(self, status, detail="", columns=()):
        self.status = status      # a key of QUERY_MARK
        self.detail = detail
        self.columns = list(columns)


def compare_query(name, sql, ref, ours, rdb, odb, rel_status):
    """Runs one report query on both analyses and compares the rows it prints, each value
    canonicalized like a relation's (ids by what they identify). rel_status: relation ->
    status of the relation comparison on this profile; a query whose rows differ is
    "known" when a relation it reads is a known difference there, else "intended" when one is
    an intended difference (docs/PARITY.md), else "differs"."""
    ocols, orows = run_query(odb, sql)
    if rdb is None or any(fnmatch.fnmatchcase(name, g) for g in REF_SILENT):
        if ocols is None:
            return QueryResult("one-errors", f"ours: {orows}")
        return QueryResult("ours-only" if orows else "ours-only-empty",
                           f"{len(orows)} rows (the reference does not answer)")
    rcols, rrows = run_query(rdb, sql)
    if ocols is None or rcols is None:
        if ocols is None and rcols is None:
            return QueryResult("both-error", f"ours: {orows}; reference: {rrows}")
        return QueryResult("one-errors", f"ours: {orows}" if ocols is None else f"reference: {rrows}")

    def canon(side, cols, rows):
        dev_i = cols.index("device_id") if "device_id" in cols else None
        return [tuple(canon_value(decision_text(v) if c in DECISION_COLUMNS else v, side,
                                  r[dev_i] if dev_i is not None else None)
                      for c, v in zip(cols, r))
                for r in rows]
    rr, oo = canon(ref, rcols, rrows), canon(ours, ocols, orows)
    if rcols != ocols:
        return QueryResult("differs", f"columns: reference {rcols}, ours {ocols}")
    if collections.Counter(rr) == collections.Counter(oo):
        return QueryResult("same" if rr else "empty", f"{len(rr)} rows")
    diff_cols = [c for i, c in enumerate(rcols)
                 if collections.Counter(r[i] for r in rr) != collections.Counter(r[i] for r in oo)]
    read = query_relations(sql)
    detail = describe(rcols, rr, oo, [])
    for st in ("known", "intended"):
        listed = [r for r in read if rel_status.get(r) == st]
        if listed:
            return QueryResult(st, f"{detail}; {st} relations: {', '.join(listed)}", diff_cols)
    return QueryResult("differs", detail, diff_cols)


# ---------------------------------------------------------------------------------------
# Driver


STATUS_MARK = {"equal": "=", "intended": "I", "known": "K", "different": "D", "missing": "M",
               "pending": "P", "refused": "R", "error": "E"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--only", default="", help="profiles (comma-separated globs)")
    ap.add_argument("--relation", default="*", help="relations to compare (glob)")
    ap.add_argument("--query", default="*", help="report queries to run (glob)")
    ap.add_argument("--reuse", action="store_true",
                    help="compare the analyses of the last run where both are there and ours is "
                         "newer than build/traceloom (when only docs/PARITY.md changed)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every relation")
    ap.add_argument("--require-reference", action="store_true",
                    help="fail (exit 2) instead of skipping when the reference is unavailable")
    ap.add_argument("--report", default=None, help="write the relation x profile table (Markdown)")
    ap.add_argument("--parity-doc", default=os.path.join(ROOT, "docs", "PARITY.md"))
    ap.add_argument("--queries", default=QUERIES,
                    help="the reference's report queries, run on both analyses ('' to skip)")
    a = ap.parse_args(argv)
    build = os.path.abspath(a.build)
    if not os.access(os.path.join(build, "traceloom"), os.X_OK):
        print(f"parity: {build}/traceloom not built (run make)", file=sys.stderr)
        return 2
    ref, why = reference_binary(build)
    if ref is None:
        print(f"parity: SKIPPED: the reference traceloom=={REF_VERSION} is not available here ({why})")
        return 2 if a.require_reference else 0
    intended = load_intended(a.parity_doc)
    sel = [s for s in a.only.split(",") if s]
    profs = [p for p in profiles(build) if not sel or any(fnmatch.fnmatchcase(p.name, g) for g in sel)]
    if not profs:
        print("parity: no profile matches --only", file=sys.stderr)
        return 2
    work = os.path.join(build, "parity", "out")
    matrix = collections.OrderedDict()      # relation -> {profile: status}
    qmatrix = collections.OrderedDict()     # report query -> {profile: QueryResult}
    queries = sorted(f[:-4] for f in os.listdir(a.queries) if f.endswith(".sql")) \
        if a.queries and os.path.isdir(a.queries) else []
    failures = []
    t0 = time.time()
    for p in profs:
        why = prepare(p)
        if why:
            print(f"\n## {p.name}: cannot prepare: {why}")
            failures.append((p.name, "*", why))
            continue
        odb = os.path.join(work, p.name, "ours.db")
        rdbs = [os.path.join(work, p.name, f"ref{r}.db") for r in range(len(p.ref))]
        if a.reuse and all(os.path.isfile(f) for f in [odb] + rdbs) \
                and os.path.getmtime(odb) > os.path.getmtime(os.path.join(build, "traceloom")):
            oerr, rerrs = None, [None] * len(rdbs)     # the analyses of the last run
        else:
            oerr = run_ours(build, p, odb)
            rerrs = run_ref(ref, p, rdbs)
        print(f"\n## {p.name}")
        if not p.ref:               # the reference does not read this input: ours alone
            if oerr:
                print(f"  OURS FAILS: {oerr}")
                failures.append((p.name, "(analysis)", f"ours: {oerr}"))
            else:
                failures += run_queries(a, queries, qmatrix, p.name, None, Side(odb, 0), None, odb, {})
            continue
        if oerr or any(rerrs):
            both = oerr and all(rerrs)
            st = "refused" if both else "error"
            msg = f"ours: {oerr or 'ok'}; reference: {'; '.join(e or 'ok' for e in rerrs)}"
            print(f"  {'both refuse' if both else 'ONE SIDE FAILS'}: {msg}")
            matrix.setdefault("(analysis)", {})[p.name] = st
            if not both:
                failures.append((p.name, "(analysis)", msg))
            continue
        for r, rdb in enumerate(rdbs):
            tag = p.name if len(rdbs) == 1 else f"{p.name}#{r}"
            rs, os_ = Side(rdb, 0), Side(odb, r)
            rels = sorted(n for n in rs.names if fnmatch.fnmatchcase(n, a.relation))
            counts = collections.Counter()
            for rel in rels:
                res = compare(rel, rs, os_, p.name, intended)
                counts[res.status] += 1
                matrix.setdefault(rel, {})[tag] = res.status
                if res.status in ("different", "missing"):
                    failures.append((tag, rel, res.detail))
                if a.verbose or res.status in ("different", "missing"):
                    print(f"  {res.status:9s} {rel}: {res.detail}")
            print(f"  {tag}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
            if len(rdbs) > 1:       # ours answers for every rank at once: compared per relation
                continue
            failures += run_queries(a, queries, qmatrix, tag, rs, os_, rdb, odb,
                                    {rel: st.get(tag) for rel, st in matrix.items()})
    write_table(matrix, a.report or os.path.join(build, "parity", "report.md"), qmatrix)
    stale = [e for e in intended if not e.used and e.kind != "pending"]
    print(f"\nparity: {len(profs)} profile(s), {len(matrix)} relation(s) in {time.time() - t0:.1f} s;"
          f" table in {a.report or os.path.join(build, 'parity', 'report.md')}")
    if stale and not sel and a.relation == "*" and len(profs) == len(profiles(build)):
        print("parity: intended differences of docs/PARITY.md that no comparison needed:")
        for e in stale:
            print(f"  {', '.join(e.relations)} ({e.kind} {e.arg or ''})")
    if failures:
        print(f"parity: FAILED: {len(failures)} unlisted difference(s) (see above; list intended ones in docs/PARITY.md)")
        return 1
    print("parity: every relation is equal or listed in docs/PARITY.md")
    return 0


def run_queries(a, queries, qmatrix, tag, rs, os_, rdb, odb, status):
    """Runs the report queries on one profile's analyses (rdb None: ours alone), records
    each result in qmatrix and returns the failures: rows that differ where no relation the
    query reads is a listed difference, or ours failing a query."""
    failures, qcounts = [], collections.Counter()
    for q in queries:
        if not fnmatch.fnmatchcase(q, a.query):
            continue
        sql = open(os.path.join(a.queries, q + ".sql"), encoding="utf-8").read()
        res = compare_query(q, sql, rs, os_, rdb, odb, status)
        qmatrix.setdefault(q, {})[tag] = res
        qcounts[res.status] += 1
        if res.status == "differs" or (res.status == "one-errors" and res.detail.startswith("ours")):
            failures.append((tag, f"query {q}", res.detail))
        if a.verbose or res.status in ("differs", "one-errors"):
            print(f"  query {res.status:10s} {q}: {res.detail}")
    if qcounts:
        print(f"  {tag} queries: " + ", ".join(f"{k} {v}" for k, v in sorted(qcounts.items())))
    return failures


def write_table(matrix, path, qmatrix=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    profs = []
    for st in matrix.values():
        for k in st:
            if k not in profs:
                profs.append(k)
    with open(path, "w") as f:
        f.write("# Parity: relation x profile\n\n")
        f.write("= equal, I intended difference, K known difference to converge where its cause "
                "lives, P pending (another issue publishes it; all three listed in docs/PARITY.md), "
                "D different, M missing, R both refuse the input, E one side fails\n\n")
        f.write("| relation | " + " | ".join(profs) + " |\n")
        f.write("|---|" + "---|" * len(profs) + "\n")
        for rel, st in matrix.items():
            f.write(f"| {rel} | " + " | ".join(STATUS_MARK.get(st.get(p), "") for p in profs) + " |\n")
        if qmatrix:
            write_query_table(f, qmatrix)


def write_query_table(f, qmatrix):
    """The report queries x profile, then each query whose rows differ: the columns."""
    profs = []
    for st in qmatrix.values():
        profs.extend(k for k in st if k not in profs)
    f.write("\n# Report queries: query x profile\n\n")
    f.write("The rows each of the reference's report queries prints, on both analyses (ids "
            "canonicalized as above). = same rows; 0 no row on either side; K rows differ, and a relation the query "
            "reads is a known difference on that profile; I rows differ, and a relation it reads "
            "is an intended difference there (none known); D rows differ otherwise; + ours answers (the "
            "reference does not publish what the query reads or read the input; +0 without a row), E one side errors, R both "
            "error\n\n")
    f.write("| query | " + " | ".join(profs) + " |\n")
    f.write("|---|" + "---|" * len(profs) + "\n")
    for q, st in qmatrix.items():
        f.write(f"| {q} | " + " | ".join(QUERY_MARK[st[p].status] if p in st else ""
                                          for p in profs) + " |\n")
    f.write("\n## Queries whose rows differ\n\n| query | profile | status | columns | detail |\n"
            "|---|---|---|---|---|\n")
    for q, st in qmatrix.items():
        for p, res in st.items():
            if res.status in ("same", "empty", "ours-only", "ours-only-empty", "not-compared"):
                continue
            detail = res.detail.replace("|", "\\|")[:400]
            f.write(f"| {q} | {p} | {res.status} | {', '.join(res.columns)} | {detail} |\n")


if __name__ == "__main__":
    sys.exit(main())
