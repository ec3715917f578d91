#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# test-prometheus-real.py SPARKSHIM BURN DASHBOARD: the observability path checked by a real
# Prometheus (issue 25). Debian's prometheus-node-exporter serves the directory of the
# per-executor Prometheus files (its textfile collector), Debian's prometheus scrapes it
# every second. Three executors run at once under `sparkshim run --prometheus`; two stay,
# one ends. Then every panel query of the Grafana dashboard (conf/grafana-sparkshim.json,
# its variables set to match all) returns, through Prometheus's HTTP API, a series for each
# running executor whose file has the metrics it reads, and none for the one that ended
# (Prometheus marks a series stale when its scrape no longer has it); `promtool check
# metrics` finds nothing to say about any file sparkshim wrote. Nothing here is timed: each
# wait polls until what it waits for is true, under a deadline only a stuck run reaches.
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

DEADLINE = 120  # seconds, for each wait: a guard, not a timing
# Grafana's $__rate_interval is 4 scrape intervals at least; 10 leaves room for a scrape that
# a loaded machine runs late. A rate over it still sees an executor that ended until its
# last samples leave the window: the test waits for that, as a dashboard would show it.
RATE_INTERVAL = "10s"
BINARIES = {"prometheus": "/usr/bin/prometheus", "promtool": "/usr/bin/promtool",
            "prometheus-node-exporter": "/usr/bin/prometheus-node-exporter"}
PACKAGES = {"prometheus": "prometheus", "promtool": "prometheus",
            "prometheus-node-exporter": "prometheus-node-exporter"}


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate):
    end = time.monotonic() + DEADLINE
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            fail(f"waited {DEADLINE} s for {what}")
        time.sleep(0.2)


def http_json(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr):
        doc = http_json(f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        if not doc or doc.get("status") != "success":
            fail(f"Prometheus refused {expr!r}: {doc}")
        return doc["data"]["result"]

    def ready(self):
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False


def dashboard_queries(path):
    """(where, expr) of every panel target: test-dashboard.py's walk of the dashboard."""
    spec = importlib.util.spec_from_file_location(
        "test_dashboard", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test-dashboard.py"))
    dashboard_test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dashboard_test)
    return [(where, expr) for where, expr in dashboard_test.expressions(json.load(open(path)))
            if where.startswith("panel ")]


def substitute(expr):
    expr = re.sub(r"\$__rate_interval\b", RATE_INTERVAL, expr)
    expr = re.sub(r"\$__range\b", "1m", expr)
    return re.sub(r"\$(instance|app_id|name)\b", ".*", expr)


def metrics_of(expr):
    return set(re.findall(r"\b(sparkshim_[a-z0-9_]+)\b", expr))


def series_in(text):
    """metric -> set of executor ids with a sample line in a Prometheus file."""
    out = {}
    for name, labels in re.findall(r"^([a-z_:][a-z0-9_:]*)\{(.*)\} \S+$", text, re.M):
        m = re.search(r'executor_id="([^"]*)"', labels)
        if m:
            out.setdefault(name, set()).add(m.group(1))
    return out


def main():
    shim, burn, dashboard = sys.argv[1:4]
    for name, path in BINARIES.items():
        if not os.access(path, os.X_OK):
            skip(f"{path} is missing (Debian's {PACKAGES[name]}; scripts/deps installs it)")
    if os.geteuid() != 0:
        skip("needs root (sparkshim run's cgroup leaves)")
    work = tempfile.mkdtemp(prefix="sparkshim-prom-real.")
    procs = []
    try:
        run(shim, burn, dashboard, work, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


def run(shim, burn, dashboard, work, procs):
    os.chmod(work, 0o755)
    textfile = os.path.join(work, "textfile")
    os.mkdir(textfile, 0o755)
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        f.write('{ "version": 1, "fail_mode": "open" }\n')
    os.chmod(policy, 0o644)
    log = open(os.path.join(work, "servers.log"), "w")

    exporter_port, prom_port = free_port(), free_port()
    procs.append(subprocess.Popen(
        [BINARIES["prometheus-node-exporter"], f"--web.listen-address=127.0.0.1:{exporter_port}",
         "--collector.disable-defaults", "--collector.textfile",
         f"--collector.textfile.directory={textfile}"], stdout=log, stderr=log))
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: node\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{exporter_port}']\n")
    out = subprocess.run([BINARIES["promtool"], "check", "config", config], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"promtool check config: {out.stdout}{out.stderr}")
    procs.append(subprocess.Popen(
        [BINARIES["prometheus"], f"--config.file={config}",
         f"--storage.tsdb.path={os.path.join(work, 'data')}",
         f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=log, stderr=log))
    prom = Prometheus(prom_port)
    wait_for("Prometheus to be ready", prom.ready)

    # three executors of one application: 1 and 2 stay until told, 3 ends on its own
    stop = os.path.join(work, "stop")
    go3 = os.path.join(work, "go3")
    template = os.path.join(textfile, "sparkshim-{app_id}-{executor_id}.prom")
    executors = {}
    for e in ("1", "2", "3"):
        flag = go3 if e == "3" else stop
        # a little CPU a second, so that the CPU rates are rates of something
        script = f'while [ ! -e "{flag}" ]; do "{burn}" 1 0.05c; sleep 0.2; done'
        executors[e] = subprocess.Popen(
            [shim, "run", "-q", "--policy", policy, "--memory", "256m", "--report-interval", "1",
             "--prometheus", template, "--", "sh", "-c", script, "x",
             "--app-id", "app-prom", "--executor-id", e])
        procs.append(executors[e])
    files = {e: os.path.join(textfile, f"sparkshim-app-prom-{e}.prom") for e in executors}
    texts = {}

    def all_scraped():
        for e, path in files.items():
            try:
                with open(path) as f:
                    texts[e] = f.read()
            except FileNotFoundError:
                return False
        r = prom.query('count_over_time(sparkshim_start_time_seconds{app_id="app-prom"}[1m])')
        seen = {s["metric"].get("executor_id"): float(s["value"][1]) for s in r}
        return all(seen.get(e, 0) >= 5 for e in executors)
    wait_for("5 scrapes of each executor's series", all_scraped)
    print(f"ok: Prometheus scrapes {len(executors)} executors through node_exporter's textfile collector")

    # promtool on every file sparkshim wrote
    for e, text in texts.items():
        out = subprocess.run([BINARIES["promtool"], "check", "metrics"], input=text,
                             capture_output=True, text=True)
        if out.returncode != 0 or out.stdout.strip() or out.stderr.strip():
            fail(f"promtool check metrics on executor {e}'s file: {out.stdout}{out.stderr}")
    print(f"ok: promtool check metrics is clean on the {len(texts)} files")

    # executor 3 ends; its file goes, and its series go stale at the next scrape
    open(go3, "w").close()
    if executors["3"].wait(timeout=DEADLINE) != 0:
        fail(f"executor 3 exited {executors['3'].returncode}")
    if os.path.exists(files["3"]):
        fail("executor 3's file outlived it")
    wait_for("executor 3's series to go stale",
             lambda: not prom.query('sparkshim_start_time_seconds{executor_id="3"}'))
    wait_for(f"executor 3's last samples to leave a {RATE_INTERVAL} window", lambda: not prom.query(
        f'count_over_time(sparkshim_start_time_seconds{{executor_id="3"}}[{RATE_INTERVAL}])'))
    # and the running ones have a scrape after that (a rate needs two samples)
    mark = time.time()
    wait_for("a later scrape of the running executors", lambda: all(
        float(s["value"][1]) > mark for s in
        prom.query('timestamp(sparkshim_start_time_seconds{app_id="app-prom"})')) and len(
        prom.query('sparkshim_start_time_seconds{app_id="app-prom"}')) == 2)

    running = {"1", "2"}
    present = {}
    for e in running:
        for metric, ids in series_in(texts[e]).items():
            present.setdefault(metric, set()).update(ids)
    failures, checked = [], 0
    for where, expr in dashboard_queries(dashboard):
        q = substitute(expr)
        result = prom.query(q)
        checked += 1
        wanted = metrics_of(expr)
        have = all(running <= present.get(m, set()) for m in wanted)
        ids = [s["metric"].get("executor_id") for s in result]
        if "3" in ids:
            failures.append(f"{where}: {q}: a series of the executor that ended: {result}")
        grouped = any(s["metric"].get("executor_id") for s in result) or not result
        if not have:
            if result and any(v for v in ids):
                failures.append(f"{where}: {q}: series for metrics the files do not have: {result}")
            continue
        if not result:
            failures.append(f"{where}: {q}: no series, though the files have {sorted(wanted)}")
        elif grouped and set(ids) != running:
            failures.append(f"{where}: {q}: series of executors {sorted(set(ids))}, expected {sorted(running)}")
    count = prom.query('count(sparkshim_start_time_seconds{app_id="app-prom"})')
    if not count or float(count[0]["value"][1]) != 2:
        failures.append(f"count of the running executors: {count}, expected 2")
    if failures:
        fail("\n".join(failures))
    print(f"ok: {checked} dashboard queries return the running executors' series and none of the one that ended")

    open(stop, "w").close()
    for e in ("1", "2"):
        if executors[e].wait(timeout=DEADLINE) != 0:
            fail(f"executor {e} exited {executors[e].returncode}")
    wait_for("every series to go stale after the last executor",
             lambda: not prom.query('sparkshim_start_time_seconds{app_id="app-prom"}'))
    print("ok: no series left once every executor ended")


if __name__ == "__main__":
    main()
