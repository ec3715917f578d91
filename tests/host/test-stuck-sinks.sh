#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-stuck-sinks.sh SPARKSHIM [CASE...] (stdout, grace, socket; all by default): a report
# sink that takes nothing (a stdout pipe nobody reads, a unix socket whose peer accepts and
# never reads) must not hold up supervision: TERM is forwarded, the child is reaped, the
# grace kill fires, and the shim exits with the child's status; the file sink still gets
# the final report, with the lines the stuck sink did not take counted in "sinks" (issue
# 11, defect 4). Each run is bounded: a shim that does not exit in time is killed and the
# test fails.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json

python3 - "$shim" "$tmp" "$@" <<'PY'
import fcntl, json, os, signal, socket, subprocess, sys, termios, time
shim, tmp = sys.argv[1:3]
cases = sys.argv[4:] or ["stdout", "grace", "socket"]
F_SETPIPE_SZ = 1031
BOUND = 40  # seconds the shim gets to exit after TERM (the flush bound is 5 s)

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def wait_for(cond, what, limit=120):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.2)
    fail("timed out waiting for " + what)

def lines(path):
    try:
        return [json.loads(l) for l in open(path) if l.endswith("\n")]
    except FileNotFoundError:
        return []

def run(name, sink_args, child, stdout, wait_stuck, expect_code, stuck_sink, grace=None):
    report = f"{tmp}/{name}.jsonl"
    argv = [shim, "run", "-q", "--policy", f"{tmp}/open.json", "--memory", "512m",
            "--name", f"stuck-{name}-{os.getpid()}", "--report", report, "--report-interval", "1"]
    if grace is not None:
        argv += ["--grace", str(grace)]
    argv += sink_args + ["--"] + child
    p = subprocess.Popen(argv, stdout=stdout, stderr=open(f"{tmp}/{name}.err", "w"))
    try:
        wait_stuck(report)
        time.sleep(2)  # a few more lines for the stuck sink
        p.send_signal(signal.SIGTERM)
        try:
            code = p.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            fail(f"{name}: the shim did not exit within {BOUND} s of TERM with a stuck {stuck_sink} sink")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if code != expect_code:
        fail(f"{name}: exit {code}, expected {expect_code}: " + open(f"{tmp}/{name}.err").read())
    finals = [d for d in lines(report) if d["kind"] == "final"]
    if len(finals) != 1:
        fail(f"{name}: {len(finals)} final reports in the file sink")
    f = finals[0]
    dropped = f.get("sinks", {}).get(stuck_sink, {}).get("dropped_lines")
    if not isinstance(dropped, int) or dropped <= 0:
        fail(f"{name}: the final report does not count lines dropped by {stuck_sink}: {f.get('sinks')}")
    if f["sinks"]["file"]["dropped_lines"] != 0:
        fail(f"{name}: the healthy file sink dropped lines: {f['sinks']}")
    if f["exit"]["status"] != expect_code:
        fail(f"{name}: final report says exit {f['exit']}")
    print(f"ok: {name}: exit {code} after TERM, {stuck_sink} dropped {dropped} lines, final report in the file")

# (a) stdout is a pipe nobody reads, one page large: one line (2.5 KB) fills it, and the
# second line is in the file sink when the pipe cannot take it
r, w = os.pipe()
fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
def pipe_full(report):
    def full():
        n = bytearray(4)
        fcntl.ioctl(r, termios.FIONREAD, n)
        return int.from_bytes(n, sys.byteorder) > 0 and len(lines(report)) >= 2
    wait_for(full, "the stdout pipe to fill")
if "stdout" in cases:
    run("stdout", ["--report-stdout"], ["sleep", "600"], w, pipe_full, 128 + signal.SIGTERM, "stdout")

# (c) the same, and the child ignores TERM: the grace kill still fires
if "grace" in cases:
    run("grace", ["--report-stdout"], ["sh", "-c", "trap '' TERM; exec sleep 600"], w, pipe_full,
        128 + signal.SIGKILL, "stdout", grace=1)
os.close(w)
os.close(r)

# (b) a unix socket peer that accepts and never reads: wait until the socket's buffer is
# full (what the peer has queued stops growing for 3 s), then TERM
path = f"{tmp}/peer.sock"
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(1)
peer = []
def socket_full(report):
    seen = {"queued": -1, "since": time.monotonic()}
    def stalled():
        if not peer:
            listener.settimeout(0.1)
            try:
                peer.append(listener.accept()[0])
            except socket.timeout:
                return False
        n = bytearray(4)
        fcntl.ioctl(peer[0].fileno(), termios.FIONREAD, n)
        queued = int.from_bytes(n, sys.byteorder)
        if queued != seen["queued"]:
            seen["queued"], seen["since"] = queued, time.monotonic()
        return queued > 0 and time.monotonic() - seen["since"] >= 3 and len(lines(report)) > 2
    wait_for(stalled, "the socket to stop taking lines", limit=240)
if "socket" in cases:
    run("socket", ["--report-socket", path], ["sleep", "600"], subprocess.DEVNULL, socket_full,
        128 + signal.SIGTERM, "socket")
PY
