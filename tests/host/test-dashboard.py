#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# test-dashboard.py SPARKSHIM DASHBOARD: every PromQL expression of the Grafana dashboard
# (conf/grafana-sparkshim.json) parses, and queries only metrics a real run of SPARKSHIM
# writes (the "# TYPE" families of its Prometheus file, read while the run is alive), with
# only labels the file's series have (plus instance and job, which Prometheus adds when it
# scrapes node_exporter); rate(), irate() and increase() take counters only.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SCRAPE_LABELS = {"instance", "job"}
AGGREGATIONS = {"sum", "min", "max", "avg", "count", "stddev", "stdvar", "group", "topk",
                "bottomk", "quantile", "count_values"}
FUNCTIONS = {"abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max",
             "clamp_min", "day_of_month", "day_of_week", "delta", "deriv", "exp", "floor",
             "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate",
             "label_join", "label_replace", "ln", "log2", "log10", "minute", "month",
             "predict_linear", "rate", "resets", "round", "scalar", "sort", "sort_desc",
             "sqrt", "time", "timestamp", "vector", "year", "avg_over_time", "min_over_time",
             "max_over_time", "sum_over_time", "count_over_time", "quantile_over_time",
             "stddev_over_time", "stdvar_over_time", "last_over_time", "present_over_time"}
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets"}
BINARY = ["==", "!=", ">=", "<=", "=~", "!~", "+", "-", "*", "/", "%", "^", ">", "<"]
SET_OPERATORS = {"and", "or", "unless"}

TOKEN = re.compile(r"""\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<duration>(?:\d+(?:ms|s|m|h|d|w|y))+)(?![A-Za-z0-9_:])
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>==|!=|>=|<=|=~|!~|[-+*/%^<>=(){}\[\],:])
)""", re.X)


class ParseError(Exception):
    pass


def tokenize(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ParseError(f"cannot read {text[pos:pos + 20]!r} at column {pos + 1}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class Parser:
    """Recursive descent over PromQL; records the metrics, labels and counter uses."""

    def __init__(self, text):
        self.tokens = tokenize(text)
        self.i = 0
        self.metrics = []   # (name, {label names of its matchers})
        self.labels = set()  # by/without/on/ignoring/group_* labels
        self.counter_uses = []  # (function, metric)

    def peek(self, k=0):
        return self.tokens[self.i + k] if self.i + k < len(self.tokens) else (None, None)

    def take(self, value=None, kind=None):
        tk, tv = self.peek()
        if (value is not None and tv != value) or (kind is not None and tk != kind) or tk is None:
            raise ParseError(f"expected {value or kind}, found {tv!r}")
        self.i += 1
        return tv

    def parse(self):
        self.expr()
        if self.i != len(self.tokens):
            raise ParseError(f"unexpected {self.peek()[1]!r}")

    def expr(self):
        node = self.unary()
        while True:
            tk, tv = self.peek()
            if tk == "op" and tv in BINARY or tk == "ident" and tv in SET_OPERATORS:
                self.i += 1
                if self.peek() == ("ident", "bool"):
                    self.i += 1
                for word in ("on", "ignoring", "group_left", "group_right"):
                    if self.peek() == ("ident", word):
                        self.i += 1
                        if self.peek()[1] == "(":
                            self.label_list()
                node = self.unary()
            else:
                return node

    def label_list(self):
        self.take("(")
        while self.peek()[1] != ")":
            self.labels.add(self.take(kind="ident"))
            if self.peek()[1] == ",":
                self.i += 1
        self.take(")")

    def unary(self):
        if self.peek()[1] in ("-", "+"):
            self.i += 1
        node = self.primary()
        if self.peek()[1] == "[":
            self.i += 1
            self.take(kind="duration")
            if self.peek()[1] == ":":
                self.i += 1
                if self.peek()[0] == "duration":
                    self.i += 1
            self.take("]")
            node = ("matrix", node)
        if self.peek() == ("ident", "offset"):
            self.i += 1
            self.take(kind="duration")
        return node

    def primary(self):
        tk, tv = self.peek()
        if tk in ("number", "string"):
            self.i += 1
            return ("literal", tv)
        if tv == "(":
            self.i += 1
            node = self.expr()
            self.take(")")
            return node
        if tv == "{":
            return ("vector", self.selector(None))
        if tk != "ident":
            raise ParseError(f"unexpected {tv!r}")
        self.i += 1
        if tv in AGGREGATIONS:
            if self.peek()[1] in ("by", "without"):
                self.i += 1
                self.label_list()
            self.take("(")
            args = [self.expr()]
            while self.peek()[1] == ",":
                self.i += 1
                args.append(self.expr())
            self.take(")")
            if self.peek()[1] in ("by", "without"):
                self.i += 1
                self.label_list()
            return ("aggregation", tv, args)
        if self.peek()[1] == "(":
            if tv not in FUNCTIONS:
                raise ParseError(f"{tv}() is not a PromQL function")
            self.i += 1
            args = []
            while self.peek()[1] != ")":
                args.append(self.expr())
                if self.peek()[1] == ",":
                    self.i += 1
            self.take(")")
            if tv in COUNTER_FUNCTIONS:
                if not args or args[0][0] != "matrix" or args[0][1][0] != "vector":
                    raise ParseError(f"{tv}() needs a range selector")
                self.counter_uses.append((tv, args[0][1][1]))
            return ("call", tv, args)
        return ("vector", self.selector(tv))

    def selector(self, name):
        labels = set()
        if self.peek()[1] == "{":
            self.i += 1
            while self.peek()[1] != "}":
                label = self.take(kind="ident")
                if self.peek()[1] not in ("=", "!=", "=~", "!~"):
                    raise ParseError(f"label {label}: no matcher")
                self.i += 1
                self.take(kind="string")
                if label == "__name__":
                    raise ParseError("__name__ matchers hide the metric name")
                labels.add(label)
                if self.peek()[1] == ",":
                    self.i += 1
            self.take("}")
        if name is None:
            raise ParseError("a selector without a metric name")
        self.metrics.append((name, labels))
        return name


def grafana_substitute(expr):
    """Grafana's variables: ranges become durations; $var inside strings stays text."""
    expr = re.sub(r"\$__(rate_interval|interval|range)\b", "5m", expr)
    return expr


def expressions(dashboard):
    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if "expr" in t:
                    yield f"panel {p.get('title')!r} {t.get('refId')}", t["expr"]
            yield from walk(p.get("panels", []))
    yield from walk(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("definition") or v["query"]["query"]
        m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)", q)
        if not m:
            raise SystemExit(f"FAIL: variable {v['name']}: {q!r} is not label_values(SELECTOR, LABEL)")
        yield f"variable {v['name']}", m.group(1)
        yield f"variable {v['name']} label", f"count by ({m.group(2)}) ({m.group(1)})"


def real_prometheus_file(shim, workdir):
    """The Prometheus file of a real `sparkshim run`, copied while the executor runs."""
    policy = os.path.join(workdir, "policy.json")
    with open(policy, "w") as f:
        f.write('{ "version": 1, "fail_mode": "open" }\n')
    os.chmod(policy, 0o644)
    textfile = os.path.join(workdir, "textfile")
    os.mkdir(textfile, 0o755)
    run = subprocess.Popen([shim, "run", "-q", "--policy", policy, "--memory", "256m",
                            "--name", f"dashboard-{os.getpid()}", "--prometheus",
                            os.path.join(textfile, "sparkshim-{name}.prom"),
                            "--", "sh", "-c", "sleep 2.5", "x", "--app-id", "app-dashboard",
                            "--executor-id", "1"])
    path = os.path.join(textfile, f"sparkshim-dashboard-{os.getpid()}.prom")
    text = None
    while run.poll() is None:
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            pass
        time.sleep(0.1)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: sparkshim run exited {run.returncode}")
    if not text:
        raise SystemExit(f"FAIL: {path} never appeared while the executor ran")
    return text


def main():
    shim, dashboard_path = sys.argv[1:3]
    dashboard = json.load(open(dashboard_path))
    workdir = tempfile.mkdtemp()
    try:
        text = real_prometheus_file(shim, workdir)
    finally:
        shutil.rmtree(workdir)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    series_labels = set()
    for labels in re.findall(r"^[A-Za-z_:][A-Za-z0-9_:]*\{(.*)\} \S+$", text, re.M):
        series_labels |= set(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', labels))
    assert types, "no # TYPE lines in the Prometheus file"
    assert {"app_id", "executor_id", "name"} <= series_labels, series_labels
    print(f"the run's file declares {len(types)} metrics, series labelled {sorted(series_labels)}")

    known_labels = series_labels | SCRAPE_LABELS
    used = set()

    def check(where, expr):
        out = []
        p = Parser(grafana_substitute(expr))
        try:
            p.parse()
        except ParseError as e:
            return [f"{where}: {expr!r} does not parse: {e}"]
        for name, labels in p.metrics:
            used.add(name)
            if name not in types:
                out.append(f"{where}: {name} is not a metric sparkshim writes")
            for label in labels - known_labels:
                out.append(f"{where}: {name}{{{label}}}: no such label")
        for label in p.labels - known_labels:
            out.append(f"{where}: by/on ({label}): no such label")
        for function, name in p.counter_uses:
            if types.get(name, "counter") != "counter":
                out.append(f"{where}: {function}({name}) of a {types[name]}")
        return out

    # the checker itself: each of these must be caught
    for bad in ['rate(sparkshim_container_memory_usage_bytes[5m])', 'sparkshim_no_such_metric',
                'sum by (pod) (sparkshim_enforced)', 'sparkshim_enforced{pod="x"}',
                'rate(sparkshim_container_cpu_usage_seconds_total[5m]', 'sparkshim_enforced +',
                'container_cpu_usage_seconds_total', 'rate(sparkshim_enforced)',
                'nosuchfunction(sparkshim_enforced)']:
        assert check("self-test", bad), f"the checker lets {bad!r} through"
    used.clear()
    failures, count = [], 0
    for where, expr in expressions(dashboard):
        count += 1
        failures += check(where, expr)
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        sys.exit(1)
    print(f"ok: {count} PromQL expressions parse and query {len(used)} of the "
          f"{len(types)} metrics sparkshim writes")
    unused = sorted(set(types) - used)
    if unused:
        print(f"(not on the dashboard: {', '.join(unused)})")


if __name__ == "__main__":
    main()
