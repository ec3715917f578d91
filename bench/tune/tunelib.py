# SPDX-License-Identifier: Apache-2.0
"""bench/tune's figures of one run, from its output directory (run-job's OUT_DIR).

    python3 tunelib.py result OUT_DIR JOB EXIT_STATUS SUBMIT_SECONDS CONFS_JSON REQUESTED_JSON
        writes OUT_DIR/result.json and prints it
    python3 tunelib.py row OUT_DIR ITERATION REFERENCE_CHECKSUM
        prints one CSV row (no header) for bench/tune/loop and grid
    python3 tunelib.py header
        prints the CSV header

The utilisations are those of tuner/tuner.h (struct tuner_run), over the executors that have
a final sparkshim report:
    cpu    = sum usage.cpu.seconds / sum (identity.wall_seconds x plan.cpu.request_millicores / 1000)
    memory = sum usage.memory.peak_bytes / sum plan.memory.request_bytes
    objective = 1 / (cpu x memory)
The failure is the most severe of tuner.h's enum tuner_failure that the run shows: "oom" (an
OOM kill in a report, java.lang.OutOfMemoryError in an executor's or the driver's log, or
an ExceptionFailure with it in the event log), "executor_lost", "tasks" (failed task
attempts), "app" (the application failed or never ended), else "ok". Runtime allowances
are the tuner's business, not the harness's.
"""
import csv
import glob
import json
import math
import os
import re
import sys

SIZES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
PARAMS = ["spark.executor.cores", "spark.executor.millicores", "spark.executor.memory",
          "spark.executor.memoryOverhead", "spark.executor.memoryBurst.ratio",
          "spark.sql.shuffle.partitions"]
HEADER = ["iteration", "app_id", "cpu_util", "mem_util", "objective", "failure", "runtime_s",
          "checksum_ok", "cores", "millicores", "heap", "overhead", "burst_ratio",
          "shuffle_partitions", "executors", "cpu_seconds", "memory_peak_bytes",
          "memory_request_bytes", "heap_peak_bytes", "memory_spill_bytes", "disk_spill_bytes",
          "failed_tasks", "checksum", "plan_ok"]


def size_bytes(text, unit="m"):
    """A Spark byte string (MiB without suffix by default) in bytes; None if not one."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", str(text).lower())
    if not m:
        return None
    return int(m.group(1)) * SIZES[m.group(2) or unit]


def millicores(text):
    t = str(text).strip()
    if t.endswith("m"):
        return int(t[:-1])
    if "." in t:
        return math.ceil(float(t) * 1000)
    return int(t)


def load_reports(out):
    """(final reports by executor id, lines refused)"""
    finals, bad = {}, []
    for path in sorted(glob.glob(os.path.join(out, "reports", "*.jsonl"))):
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                try:
                    d = json.loads(line)
                except ValueError as e:
                    bad.append(f"{path}:{n}: {e}")
                    continue
                if d.get("kind") == "final":
                    finals[d["identity"]["executor_id"]] = (path, d)
    return finals, bad


def event_log(out):
    """The application's event log file (one file: run-job turns Spark 4's rolling logs off)."""
    logs = sorted(p for p in glob.glob(os.path.join(out, "eventlog", "*")) if not p.endswith(".crc"))
    return logs[0] if logs else None


def read_events(path):
    """The figures the CSV shows from the event log: app id, start/end, failures, spills."""
    ev = {"app_id": None, "start_ms": None, "end_ms": None, "failed_tasks": 0, "oom": 0,
          "executor_lost": 0, "memory_spill": 0, "disk_spill": 0, "heap_peak": None,
          "job_failed": 0}
    if path is None or path.endswith((".lz4", ".zstd", ".snappy", ".lzf")):
        return ev
    with open(path, errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            kind = e.get("Event")
            if kind == "SparkListenerApplicationStart":
                ev["app_id"] = e.get("App ID")
                ev["start_ms"] = e.get("Timestamp")
            elif kind == "SparkListenerApplicationEnd":
                ev["end_ms"] = e.get("Timestamp")
            elif kind == "SparkListenerJobEnd":
                if (e.get("Job Result") or {}).get("Result") != "JobSucceeded":
                    ev["job_failed"] += 1
            elif kind == "SparkListenerTaskEnd":
                reason = e.get("Task End Reason") or {}
                r = reason.get("Reason")
                if r not in (None, "Success", "TaskKilled"):
                    ev["failed_tasks"] += 1
                    text = json.dumps(reason)
                    if "OutOfMemoryError" in text:
                        ev["oom"] += 1
                    if r == "ExecutorLostFailure":
                        ev["executor_lost"] += 1
                m = e.get("Task Metrics") or {}
                ev["memory_spill"] += m.get("Memory Bytes Spilled", 0) or 0
                ev["disk_spill"] += m.get("Disk Bytes Spilled", 0) or 0
                peaks = e.get("Task Executor Metrics") or {}
                if "JVMHeapMemory" in peaks:
                    ev["heap_peak"] = max(ev["heap_peak"] or 0, peaks["JVMHeapMemory"])
            elif kind == "SparkListenerStageExecutorMetrics":
                peaks = e.get("Executor Metrics") or {}
                if "JVMHeapMemory" in peaks:
                    ev["heap_peak"] = max(ev["heap_peak"] or 0, peaks["JVMHeapMemory"])
            elif kind == "SparkListenerExecutorRemoved":
                reason = e.get("Removed Reason") or ""
                if "OutOfMemory" in reason or "exit code 52" in reason:
                    ev["oom"] += 1
    return ev


def utilisation(finals):
    cpu_s = wall_req = peak = req = 0.0
    ok = len(finals) > 0
    for _, d in finals.values():
        usage, plan = d.get("usage") or {}, d.get("plan") or {}
        cpu = (usage.get("cpu") or {}).get("seconds")
        mem = (usage.get("memory") or {}).get("peak_bytes")
        wall = d["identity"].get("wall_seconds")
        rm = (plan.get("cpu") or {}).get("request_millicores")
        rb = (plan.get("memory") or {}).get("request_bytes")
        if None in (cpu, mem, wall, rm, rb):
            ok = False
            continue
        cpu_s += cpu
        wall_req += wall * rm / 1000
        peak += mem
        req += rb
    nan = float("nan")
    cu = cpu_s / wall_req if ok and wall_req > 0 else nan
    mu = peak / req if ok and req > 0 else nan
    obj = 1 / (cu * mu) if ok and cu > 0 and mu > 0 else nan
    return {"cpu_util": cu, "mem_util": mu, "objective": obj, "cpu_seconds": cpu_s,
            "memory_peak_bytes": int(peak), "memory_request_bytes": int(req)}


def plan_check(finals, requested):
    """What sparkshim's plan says against what run-job asked: a list of mismatches."""
    bad = []
    for eid, (path, d) in sorted(finals.items()):
        cpu, mem = d["plan"]["cpu"], d["plan"]["memory"]
        want = {
            "request_millicores": millicores(requested["spark.executor.millicores"])
            if "spark.executor.millicores" in requested else None,
            "overhead_bytes": size_bytes(requested["spark.executor.memoryOverhead"])
            if "spark.executor.memoryOverhead" in requested else None,
            "burst_ratio": float(requested["spark.executor.memoryBurst.ratio"])
            if "spark.executor.memoryBurst.ratio" in requested else None,
            "heap_bytes": size_bytes(requested["spark.executor.memory"])
            if "spark.executor.memory" in requested else None,
        }
        got = {"request_millicores": cpu.get("request_millicores"),
               "overhead_bytes": mem.get("overhead_bytes"), "burst_ratio": mem.get("burst_ratio"),
               "heap_bytes": mem.get("heap_bytes")}
        for k, w in want.items():
            if w is not None and got[k] != w and not (isinstance(w, float) and abs(got[k] - w) < 1e-9):
                bad.append(f"executor {eid}: plan {k} {got[k]}, asked {w}")
    return bad


def failure(out, exit_status, ev, finals, app_ended):
    logs = [os.path.join(out, "driver.err")] + glob.glob(os.path.join(out, "executors", "*.stderr"))
    oom_log = any("java.lang.OutOfMemoryError" in open(p, errors="replace").read()
                  for p in logs if os.path.exists(p))
    oom_kill = any((d.get("usage") or {}).get("memory", {}).get("oom_kills") or
                   (d.get("exit") or {}).get("oom_killed") for _, d in finals.values())
    if oom_kill or oom_log or ev["oom"]:
        return "oom"
    if ev["executor_lost"]:
        return "executor_lost"
    if ev["failed_tasks"]:
        return "tasks"
    if exit_status != 0 or ev["job_failed"] or not app_ended:
        return "app"
    return "ok"


def result(out, job, exit_status, submit_s, confs, requested):
    finals, bad = load_reports(out)
    el = event_log(out)
    ev = read_events(el)
    line = None
    p = os.path.join(out, "driver.out")
    if os.path.exists(p):
        for l in open(p, errors="replace"):
            if l.startswith("tunejob "):
                line = l.strip()
            elif l.startswith("tpcds ok "):  # tests/tuner/TpcdsJob.java: an order-free checksum
                line = "tunejob " + l[len("tpcds ok "):].strip() + " ordered=true"
    fields = dict(kv.split("=", 1) for kv in line.split()[1:]) if line else {}
    checksum = fields.get("checksum") if fields.get("ordered") == "true" else None
    app_id = ev["app_id"] or (os.path.basename(el).split(".")[0] if el else None)
    wall = (ev["end_ms"] - ev["start_ms"]) / 1000 if ev["start_ms"] and ev["end_ms"] else None
    r = {
        "job": job,
        "app_id": app_id,
        "exit_status": exit_status,
        "failure": failure(out, exit_status, ev, finals, ev["end_ms"] is not None),
        "app_wall_seconds": wall,
        "submit_wall_seconds": submit_s,
        "job_seconds": float(fields["seconds"]) if "seconds" in fields else None,
        "checksum": checksum,
        "rows": int(fields["rows"]) if "rows" in fields else None,
        "confs": confs,
        "requested": requested,
        "event_log": os.path.abspath(el) if el else None,
        "reports": [os.path.abspath(p) for p, _ in sorted(finals.values(), key=lambda x: x[0])],
        "report_lines_refused": bad,
        "executors": sorted(finals),
        "utilisation": utilisation(finals),
        "plan_mismatches": plan_check(finals, requested),
        "event_log_figures": {k: ev[k] for k in ("failed_tasks", "oom", "executor_lost", "memory_spill",
                                                 "disk_spill", "heap_peak", "job_failed")},
        "plans": {eid: {"cpu": d["plan"]["cpu"], "memory": d["plan"]["memory"],
                        "enforced": d["enforcement"]["enforced"],
                        "memory_source": ((d.get("usage") or {}).get("sources") or {}).get("memory.peak"),
                        "cpu_source": ((d.get("usage") or {}).get("sources") or {}).get("cpu"),
                        "agent_injected": (d.get("agent") or {}).get("injected")}
                  for eid, (_, d) in sorted(finals.items())},
    }
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(no_nan(r), f, indent=2)
        f.write("\n")
    return r


def no_nan(x):
    """x with every NaN float replaced by None (JSON has no NaN)."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: no_nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [no_nan(v) for v in x]
    return x


def fmt(x, digits=4):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def row(out, iteration, reference):
    r = json.load(open(os.path.join(out, "result.json")))
    u, q, ev = r["utilisation"], r["requested"], r["event_log_figures"]
    ok = r["checksum"] is not None and (reference in ("", None) or r["checksum"] == reference)
    runtime = r["app_wall_seconds"] if r["app_wall_seconds"] is not None else r["submit_wall_seconds"]
    return [iteration, r["app_id"] or "", fmt(u["cpu_util"]), fmt(u["mem_util"]), fmt(u["objective"]),
            r["failure"], fmt(runtime, 1), "true" if ok else "false",
            q.get("spark.executor.cores", ""), q.get("spark.executor.millicores", ""),
            q.get("spark.executor.memory", ""), q.get("spark.executor.memoryOverhead", ""),
            q.get("spark.executor.memoryBurst.ratio", ""), q.get("spark.sql.shuffle.partitions", ""),
            len(r["executors"]), fmt(u["cpu_seconds"], 2), u["memory_peak_bytes"], u["memory_request_bytes"],
            ev["heap_peak"] if ev["heap_peak"] is not None else "", ev["memory_spill"], ev["disk_spill"],
            ev["failed_tasks"], r["checksum"] or "", "true" if not r["plan_mismatches"] else "false"]


def main(argv):
    cmd = argv[1]
    if cmd == "result":
        out, job, status, submit_s = argv[2], argv[3], int(argv[4]), float(argv[5])
        r = result(out, job, status, submit_s, json.loads(argv[6]), json.loads(argv[7]))
        print(json.dumps(no_nan(r), indent=2))
    elif cmd == "row":
        csv.writer(sys.stdout, lineterminator="\n").writerow(row(argv[2], argv[3], argv[4]))
    elif cmd == "header":
        csv.writer(sys.stdout, lineterminator="\n").writerow(HEADER)
    else:
        sys.exit(f"tunelib.py: unknown command {cmd!r}; allowed: result, row, header")


if __name__ == "__main__":
    main(sys.argv)
