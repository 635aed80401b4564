"""The command line of cltrain.flower (python3 -m cltrain.flower federation|app|plot): a whole
federation on this machine (Flower's SuperLink, one SuperNode per partition and `flwr run` of
cltrain's Flower app on loopback, or Flower's simulation engine; a fault to inject), the app's
pyproject.toml, and a plot of results."""

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

import cltrain
from .flower import POISON_KINDS, RUN_DEFAULTS, app_pyproject, toml_value


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port, proc, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


def _tool(name):
    """A Flower command beside this Python (a venv's bin), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else (shutil.which(name) or name)


def run_federation(a):
    """A SuperLink and a.clients SuperNodes (or the simulation engine) on this machine, and `flwr
    run` of cltrain's app over them; returns the exit status."""
    os.makedirs(a.out_dir, exist_ok=True)
    out_dir = os.path.abspath(a.out_dir)
    out = os.path.join(out_dir, a.name + ".json")
    if os.path.exists(out):
        os.remove(out)
    work = os.path.join(out_dir, a.name + ".flwr")
    shutil.rmtree(work, ignore_errors=True)
    app = os.path.join(work, "app")
    os.makedirs(app)
    with open(os.path.join(app, "pyproject.toml"), "w") as f:
        f.write(app_pyproject())
    port = a.port or _free_port()
    home = os.path.join(work, "home")  # FLWR_HOME: the connection below, Flower's state
    os.makedirs(home)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('[superlink]\ndefault = "here"\n\n[superlink.here]\naddress = "127.0.0.1:%d"\ninsecure = true\n' % port)
    env = dict(os.environ, FLWR_HOME=home, FLWR_DISABLE_UPDATE_CHECK="1",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    run_config = {"model": os.path.abspath(a.model) if os.path.exists(a.model) else a.model,
                  "data": os.path.abspath(a.data), "num-server-rounds": a.rounds, "optimizer": a.optimizer,
                  "learning-rate": a.learning_rate, "batch-size": a.batch_size, "local-epochs": a.local_epochs,
                  "lora": a.lora, "backends": a.backends, "server-backends": a.server_backends,
                  "partition": a.partition, "alpha": a.alpha, "partition-seed": a.partition_seed,
                  "limit": a.limit, "test-limit": a.test_limit, "min-nodes": a.clients,
                  "round-timeout": float(a.round_timeout), "out": out, "poison": a.poison or "",
                  "save-replies": os.path.abspath(a.save_replies) if a.save_replies else ""}
    if a.cache_dir is not None:
        run_config["cache-dir"] = a.cache_dir
    kill = None
    if a.kill:
        if a.runtime == "simulation":
            raise ValueError("--kill needs --runtime deployment (a SuperNode process to kill)")
        k, r = a.kill.split(":")
        kill = (int(k), int(r))
    lock = threading.Lock()
    log = open(os.path.join(out_dir, a.name + ".log"), "w")
    procs = []

    def pump(proc, on_line=None):
        for line in proc.stdout:
            with lock:
                log.write(line)
                log.flush()
                if a.verbose:
                    sys.stdout.write(line)
                    sys.stdout.flush()
            if on_line:
                on_line(line)

    def spawn(cmd, on_line=None):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             start_new_session=True)  # its own process group: it and what it starts die together
        procs.append(p)
        threading.Thread(target=pump, args=(p, on_line), daemon=True).start()
        return p

    def stop(p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    link = spawn([_tool("flower-superlink"), "--insecure", "--port", str(port), "--host", "127.0.0.1",
                  "--disable-runtime-dependency-installation"] + (["--simulation"] if a.runtime == "simulation" else []))
    try:
        if not _wait_for_port(port, link, 120):
            sys.stderr.write("federation: the SuperLink did not start listening on 127.0.0.1:%d\n" % port)
            return 1
        nodes, events, killed = {}, [], []

        def start(k):
            cmd = [_tool("flower-supernode"), "--insecure", "--superlink", "127.0.0.1:%d" % port, "--port",
                   str(_free_port()), "--node-config", "partition-id=%d num-partitions=%d" % (k, a.clients)]
            marker = "client %d: round %d: step" % kill if kill and kill[0] == k else None

            def on_line(line):
                if marker and line.startswith(marker) and not killed:
                    killed.append(k)
                    stop(nodes[k])  # the SuperNode and its ClientApp, in the middle of the round's training
                    events.append("client %d killed in round %d (%s)" % (k, kill[1], line.strip()))
                    with lock:
                        log.write("federation: %s\n" % events[-1])
            nodes[k] = spawn(cmd, on_line)

        if a.runtime == "deployment":
            for k in range(a.clients):
                start(k)
        cmd = [_tool("flwr"), "run", app, "here", "--stream", "--run-config",
               " ".join("%s=%s" % (k, toml_value(v)) for k, v in run_config.items())]
        if a.runtime == "simulation":
            cmd += ["--federation-config", "num-supernodes=%d" % a.clients]
        with lock:
            log.write("federation: %s\n" % " ".join(shlex.quote(c) for c in cmd))
        runner = spawn(cmd)
        end = time.monotonic() + a.timeout
        restarts = {k: 0 for k in nodes}
        while not os.path.exists(out) and runner.poll() is None and time.monotonic() < end:
            for k, p in list(nodes.items()):
                # A SuperNode that died (killed, or failed) comes back, as a supervisor on its board
                # would start it again: it joins the rounds after.
                if p.poll() is not None and restarts[k] < a.restarts:
                    time.sleep(a.rejoin_after)
                    restarts[k] += 1
                    events.append("client %d ended (exit %s) and was restarted" % (k, p.returncode))
                    with lock:
                        log.write("federation: %s\n" % events[-1])
                    start(k)
            time.sleep(0.2)
        if not os.path.exists(out):
            sys.stderr.write("federation: %s; see %s\n" % (
                "not finished after %d s" % a.timeout if runner.poll() is None else
                "the run ended (exit %s) without results" % runner.returncode, log.name))
            return 1
        if kill and not killed:
            sys.stderr.write("federation: client %d never reached round %d to be killed\n" % kill)
            return 1
    finally:
        for p in procs:
            stop(p)
        for p in procs:
            p.wait()
        log.close()
    with open(out) as f:
        result = json.load(f)
    result["events"] = events
    result.update({"runtime": a.runtime, "clients": a.clients, "partition": a.partition,
                   "alpha": a.alpha if a.partition == "dirichlet" else None, "client_backends": a.backends,
                   "label": ("IID" if a.partition == "iid" else "non-IID (Dirichlet %g)" % a.alpha) +
                   (", LoRA rank %d" % a.lora if a.lora else "") +
                   (", client %d killed in round %d" % kill if kill else "")})
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    for e in events:
        print("federation: " + e)
    print("round  clients  failed  bytes/node  test accuracy")
    for r in result["per_round"]:
        print("%5d  %7s  %6s  %10s  %.4f" % (r["round"], r.get("fit_results", "-"), r.get("fit_failures", "-"),
                                             r.get("bytes_sent", 0) // max(r.get("nodes", 1), 1) or "-",
                                             r["test_accuracy"]))
    done = [r for r in result["per_round"] if r["round"] > 0]
    print("federation: %s (%s, %s, %.0f s)" % (out, a.runtime, a.partition, result["seconds"]))
    if len(done) != a.rounds:
        sys.stderr.write("federation: finished %d of %d rounds\n" % (len(done), a.rounds))
        return 1
    return 0


def plot(paths, out, title="Flower FedAvg, cltrain clients: global test accuracy after each round"):
    """An SVG line chart of test accuracy per round (from round 1), one line per results file."""
    runs = []
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        label = r.get("label") or os.path.splitext(os.path.basename(p))[0]
        runs.append((label, [(x["round"], x["test_accuracy"]) for x in r["per_round"] if x["round"] > 0]))
    ys = [y for _, pts in runs for _, y in pts]
    ymin, ymax = np.floor(min(ys) * 20) / 20, np.ceil(max(ys) * 20) / 20
    xmax = max(x for _, pts in runs for x, _ in pts)
    w, h, l, rt, t, b = 720, 420, 60, 20, 40, 50
    X = lambda x: l + (w - l - rt) * (x - 1) / max(1, xmax - 1)
    Y = lambda y: t + (h - t - b) * (ymax - y) / (ymax - ymin)
    colors = ["#1f77b4", "#17becf", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd"]
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
         % (w, h), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14">%s</text>' % (l, title)]
    steps = int(round((ymax - ymin) / 0.05))
    for i in range(steps + 1):
        y = ymin + 0.05 * i
        s.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (l, w - rt, Y(y), Y(y)))
        s.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (l - 6, Y(y) + 4, y))
    for x in range(1, xmax + 1):
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (X(x), h - b + 18, x))
    s.append('<text x="%d" y="%d" text-anchor="middle">round</text>' % ((l + w - rt) // 2, h - 12))
    s.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">test accuracy</text>'
             % ((t + h - b) // 2, (t + h - b) // 2))
    for i, (label, pts) in enumerate(runs):
        c, d = colors[i % len(colors)], "6,4" if "killed" in label else ""
        s.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>'
                 % (c, ' stroke-dasharray="%s"' % d if d else "", " ".join("%.1f,%.1f" % (X(x), Y(y)) for x, y in pts)))
        for x, y in pts:
            s.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (X(x), Y(y), c))
        ly = h - b - 12 - 18 * (len(runs) - 1 - i)
        s.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                 % (w - rt - 400, w - rt - 380, ly - 4, ly - 4, c, ' stroke-dasharray="%s"' % d if d else ""))
        s.append('<text x="%d" y="%d">%s: %.4f</text>' % (w - rt - 374, ly, label, pts[-1][1]))
    s.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(s) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m cltrain.flower", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("federation", help="a SuperLink, SuperNodes and flwr run of cltrain's app, on this machine")
    f.add_argument("--model", required=True, help=".circle or .tflite model, or a cltrain make-model kind")
    f.add_argument("--runtime", default="deployment", choices=["deployment", "simulation"],
                   help="deployment: one flower-supernode process per client on loopback; simulation: Flower's "
                   "simulation engine")
    f.add_argument("--clients", type=int, default=8, help="how many clients (partitions, SuperNodes)")
    f.add_argument("--rounds", type=int, default=10)
    f.add_argument("--data", default=RUN_DEFAULTS["data"], help="Fashion-MNIST's idx files (default: Debian's)")
    f.add_argument("--cache-dir", default=None, help="cltrain's cache directory (default: its own default)")
    f.add_argument("--optimizer", default=RUN_DEFAULTS["optimizer"])
    f.add_argument("--learning-rate", type=float, default=RUN_DEFAULTS["learning-rate"])
    f.add_argument("--batch-size", type=int, default=RUN_DEFAULTS["batch-size"])
    f.add_argument("--local-epochs", type=int, default=RUN_DEFAULTS["local-epochs"])
    f.add_argument("--lora", type=int, default=0, metavar="RANK",
                   help="LoRA adapters of this rank alone train and travel (not the weights)")
    f.add_argument("--partition", default="dirichlet", choices=["iid", "dirichlet"])
    f.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration (non-IID)")
    f.add_argument("--partition-seed", type=int, default=0)
    f.add_argument("--limit", type=int, default=0, help="use only the first N training images (smoke tests)")
    f.add_argument("--test-limit", type=int, default=0, help="evaluate on only the first N test images")
    f.add_argument("--backends", default="opencl", help="the clients' cltrain backends")
    f.add_argument("--server-backends", default="cpu")
    f.add_argument("--kill", metavar="CLIENT:ROUND", help="SIGKILL that client's SuperNode in the middle of that "
                   "round, restart it")
    f.add_argument("--poison", metavar="ROUND:KIND,...", help="the server sends broken arrays in those rounds "
                   "(KIND: %s)" % ", ".join(POISON_KINDS))
    f.add_argument("--save-replies", metavar="DIR", help="each round's replies and their average (DIR/round-N.npz)")
    f.add_argument("--rejoin-after", type=float, default=1.0, help="seconds before an ended SuperNode restarts")
    f.add_argument("--restarts", type=int, default=2, help="how often each SuperNode may be restarted")
    f.add_argument("--round-timeout", type=float, default=600)
    f.add_argument("--timeout", type=float, default=3600, help="seconds for the whole federation")
    f.add_argument("--port", type=int, default=0, help="the SuperLink's port (default: a free one)")
    f.add_argument("--out-dir", default="flower-results")
    f.add_argument("--name", default="federation", help="results: OUT_DIR/NAME.json and NAME.log")
    f.add_argument("--verbose", action="store_true", help="print every process's lines")
    t = sub.add_parser("app", help="the pyproject.toml of cltrain's Flower app (what examples/flower holds)")
    t.add_argument("-o", "--out", help="write it here (default: standard output)")
    g = sub.add_parser("plot", help="an SVG of test accuracy per round from results files")
    g.add_argument("results", nargs="+")
    g.add_argument("-o", "--out", required=True)
    a = p.parse_args(argv)
    try:
        if a.cmd == "federation":
            return run_federation(a)
        if a.cmd == "app":
            if a.out:
                with open(a.out, "w") as f:
                    f.write(app_pyproject())
            else:
                sys.stdout.write(app_pyproject())
            return 0
        plot(a.results, a.out)
        return 0
    except (cltrain.CltrainError, OSError, ValueError) as e:
        sys.stderr.write("cltrain.flower: %s\n" % e)
        return 1
