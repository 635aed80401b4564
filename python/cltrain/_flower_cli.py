"""The command line of cltrain.flower (python3 -m cltrain.flower server|client|federation|plot):
a Flower server with FedAvg evaluating with cltrain, a client training one partition, a whole
federation on this machine's loopback (with a fault to inject), and a plot of its results."""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import flwr
import grpc
import numpy as np

import cltrain
from .flower import (FASHION_MNIST, FIT_DEFAULTS, POISON_KINDS, CltrainClient, load_fashion_mnist, make_strategy,
                     partition)


# ---- the command line: server, client, federation (both on one machine), plot ----

def _log(prefix):
    def log(msg):
        sys.stdout.write("%s%s\n" % (prefix, msg))
        sys.stdout.flush()
    return log


def _data_args(p):
    p.add_argument("--model", required=True, help=".circle or .tflite model (the same on every side)")
    p.add_argument("--data", default=FASHION_MNIST, help="Fashion-MNIST's idx files (default: Debian's)")
    p.add_argument("--address", default="127.0.0.1:8080", help="the server's host:port")
    p.add_argument("--cache-dir", default=None, help="cltrain's cache directory (default: its own default)")


def _fit_args(p):
    p.add_argument("--optimizer", default=FIT_DEFAULTS["optimizer"])
    p.add_argument("--learning-rate", type=float, default=FIT_DEFAULTS["learning_rate"])
    p.add_argument("--batch-size", type=int, default=FIT_DEFAULTS["batch_size"])
    p.add_argument("--local-epochs", type=int, default=FIT_DEFAULTS["local_epochs"])


def _partition_args(p):
    p.add_argument("--clients", type=int, default=8, help="how many clients (partitions)")
    p.add_argument("--partition", default="dirichlet", choices=["iid", "dirichlet"])
    p.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration (non-IID)")
    p.add_argument("--partition-seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=0, help="use only the first N training images (smoke tests)")


def _poison(spec):
    """--poison ROUND:KIND[,ROUND:KIND...] as {round: kind}."""
    out = {}
    for item in filter(None, (spec or "").split(",")):
        r, _, kind = item.partition(":")
        if not r.isdigit() or kind not in POISON_KINDS:
            raise ValueError("--poison takes ROUND:KIND with KIND one of %s, not %r" % (", ".join(POISON_KINDS), item))
        out[int(r)] = kind
    return out


def _server(a):
    log = _log("server: ")
    _, _, x_test, y_test = load_fashion_mnist(a.data)
    fit_config = {"optimizer": a.optimizer, "learning_rate": a.learning_rate, "batch_size": a.batch_size,
                  "local_epochs": a.local_epochs}
    strategy, _ = make_strategy(a.model, x_test, y_test, a.clients, fit_config, a.min_clients,
                                a.backends.split(","), a.cache_dir, log, _poison(a.poison))
    t0 = time.monotonic()
    history = flwr.server.start_server(server_address=a.address, strategy=strategy,
                                       config=flwr.server.ServerConfig(num_rounds=a.rounds,
                                                                       round_timeout=a.round_timeout))
    rounds = []
    for (r, loss), (_, acc) in zip(history.losses_centralized, history.metrics_centralized.get("accuracy", [])):
        row = {"round": r, "test_loss": loss, "test_accuracy": acc}
        row.update(strategy.rounds.get(r, {}))
        rounds.append(row)
    result = {"model": os.path.basename(a.model), "clients": a.clients, "rounds": a.rounds, "fit_config": fit_config,
              "seconds": round(time.monotonic() - t0, 1), "per_round": rounds}
    if a.out:
        with open(a.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(a.out + ".tmp", a.out)
    done = [r for r in rounds if r["round"] > 0]
    if len(done) != a.rounds:
        log("finished %d of %d rounds" % (len(done), a.rounds))
        return 1
    log("test accuracy after round %d: %.4f" % (a.rounds, done[-1]["test_accuracy"]))
    return 0


def _client(a):
    if not 0 <= a.partition_id < a.clients:
        raise ValueError("--partition-id %d is not one of the %d partitions (0 to %d)"
                         % (a.partition_id, a.clients, a.clients - 1))
    log = _log("client %d: " % a.partition_id)
    with open(a.model, "rb") as f:
        model = f.read()
    x, y, _, _ = load_fashion_mnist(a.data)
    if a.limit:
        x, y = x[:a.limit], y[:a.limit]
    idx = partition(y, a.clients, a.partition, a.alpha, a.partition_seed)[a.partition_id]
    log("%d samples, classes %s" % (idx.size, np.bincount(y[idx], minlength=10).tolist()))

    def on_step(rnd, epoch, step, steps, loss):
        if step + 1 == steps // 2:  # the middle of the round's first epoch: what the federation's fault waits for
            log("round %d: step %d of %d" % (rnd, step + 1, steps))

    client = CltrainClient(model, x[idx], y[idx], backends=a.backends.split(","), device=a.device,
                           cache_dir=a.cache_dir, on_step=on_step, client_id=a.partition_id, log=log)
    flwr.client.start_client(server_address=a.address, client=client.to_client(), insecure=True,
                             max_wait_time=a.connect_timeout)
    client.close()
    log("done")
    return 0


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


def run_federation(a):
    """The server and a.clients clients as processes of this machine; returns the exit status."""
    port = a.port or _free_port()
    address = "127.0.0.1:%d" % port
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.join(a.out_dir, a.name + ".json")
    me = [sys.executable, "-m", "cltrain.flower"]
    common = ["--model", a.model, "--data", a.data, "--address", address]
    if a.cache_dir is not None:
        common += ["--cache-dir", a.cache_dir]
    fit = ["--optimizer", a.optimizer, "--learning-rate", repr(a.learning_rate), "--batch-size", str(a.batch_size),
           "--local-epochs", str(a.local_epochs)]
    kill = None
    if a.kill:
        k, r = a.kill.split(":")
        kill = (int(k), int(r))
    lock = threading.Lock()
    log = open(os.path.join(a.out_dir, a.name + ".log"), "w")

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

    server = subprocess.Popen(me + ["server"] + common + fit + [
        "--clients", str(a.clients), "--rounds", str(a.rounds), "--out", out, "--backends", a.server_backends,
        "--round-timeout", str(a.round_timeout)] + (["--poison", a.poison] if a.poison else []),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=pump, args=(server,), daemon=True).start()
    if not _wait_for_port(port, server, 120):
        server.kill()
        sys.stderr.write("federation: the server did not start listening on %s\n" % address)
        return 1

    clients = {}
    events, killed = [], []

    def start(k):
        cmd = me + ["client"] + common + ["--partition-id", str(k), "--clients", str(a.clients), "--partition",
                                          a.partition, "--alpha", repr(a.alpha), "--partition-seed",
                                          str(a.partition_seed), "--backends", a.backends]
        if a.limit:
            cmd += ["--limit", str(a.limit)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        clients[k] = p
        marker = "client %d: round %d: step" % kill if kill and kill[0] == k else None

        def on_line(line):
            if marker and line.startswith(marker) and not killed:
                killed.append(k)
                os.kill(p.pid, signal.SIGKILL)  # in the middle of its round's training
                events.append("client %d killed in round %d (%s)" % (k, kill[1], line.strip()))
                with lock:
                    log.write("federation: %s\n" % events[-1])
        threading.Thread(target=pump, args=(p, on_line), daemon=True).start()

    for k in range(a.clients):
        start(k)
    end = time.monotonic() + a.timeout
    restarts = {k: 0 for k in clients}
    while server.poll() is None and time.monotonic() < end:
        for k, p in list(clients.items()):
            # A client that died (killed, or failed) comes back, as a supervisor on its board would
            # start it again: it joins the rounds after. One the server let go exits with 0.
            if p.poll() not in (None, 0) and server.poll() is None and restarts[k] < a.restarts:
                time.sleep(a.rejoin_after)
                restarts[k] += 1
                events.append("client %d ended (exit %s) and was restarted" % (k, p.returncode))
                with lock:
                    log.write("federation: %s\n" % events[-1])
                start(k)
        time.sleep(0.2)
    status = server.poll()
    if status is None:
        server.kill()
        sys.stderr.write("federation: not finished after %d s; see %s\n" % (a.timeout, log.name))
        status = 1
    for p in clients.values():
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    if kill and not killed:
        sys.stderr.write("federation: client %d never reached round %d to be killed\n" % kill)
        status = status or 1
    if status == 0:
        with open(out) as f:
            result = json.load(f)
        result["events"] = events
        result.update({"partition": a.partition, "alpha": a.alpha if a.partition == "dirichlet" else None,
                       "client_backends": a.backends,
                       "label": ("IID" if a.partition == "iid" else "non-IID (Dirichlet %g)" % a.alpha) +
                       (", client %d killed in round %d" % kill if kill else "")})
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
        for e in events:
            print("federation: " + e)
        print("round  clients  failed  test accuracy")
        for r in result["per_round"]:
            print("%5d  %7s  %6s  %.4f" % (r["round"], r.get("fit_results", "-"), r.get("fit_failures", "-"),
                                            r["test_accuracy"]))
        print("federation: %s (%s, %.0f s)" % (out, a.partition, result["seconds"]))
    else:
        sys.stderr.write("federation: the server exited with %s; see %s\n" % (status, log.name))
    return status


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
    s = sub.add_parser("server", help="a Flower server with FedAvg, evaluating with cltrain")
    _data_args(s)
    _fit_args(s)
    s.add_argument("--clients", type=int, default=8, help="clients to wait for before each round")
    s.add_argument("--min-clients", type=int, default=None, help="fewest clients a round needs (default: --clients)")
    s.add_argument("--rounds", type=int, default=10)
    s.add_argument("--round-timeout", type=float, default=600, help="seconds a round waits for its clients")
    s.add_argument("--backends", default="cpu", help="cltrain backends of the server's evaluation")
    s.add_argument("--out", help="results (JSON)")
    s.add_argument("--poison", metavar="ROUND:KIND,...",
                   help="a hostile server, to test clients: broken parameters in those rounds (KIND: %s)"
                   % ", ".join(POISON_KINDS))
    c = sub.add_parser("client", help="a Flower client training with cltrain on one partition")
    _data_args(c)
    _partition_args(c)
    c.add_argument("--partition-id", type=int, required=True)
    c.add_argument("--backends", default="opencl")
    c.add_argument("--device", type=int, default=None)
    c.add_argument("--connect-timeout", type=float, default=60, help="seconds to keep trying to reach the server")
    f = sub.add_parser("federation", help="server and clients on this machine, on loopback")
    f.add_argument("--model", required=True)
    f.add_argument("--data", default=FASHION_MNIST)
    f.add_argument("--cache-dir", default=None)
    _fit_args(f)
    _partition_args(f)
    f.add_argument("--rounds", type=int, default=10)
    f.add_argument("--backends", default="opencl", help="the clients' cltrain backends")
    f.add_argument("--server-backends", default="cpu")
    f.add_argument("--kill", metavar="CLIENT:ROUND", help="SIGKILL that client in the middle of that round, restart it")
    f.add_argument("--poison", metavar="ROUND:KIND,...", help="the server sends broken parameters in those rounds")
    f.add_argument("--rejoin-after", type=float, default=1.0, help="seconds before an ended client restarts")
    f.add_argument("--restarts", type=int, default=2, help="how often each client may be restarted")
    f.add_argument("--round-timeout", type=float, default=600)
    f.add_argument("--timeout", type=float, default=3600, help="seconds for the whole federation")
    f.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    f.add_argument("--out-dir", default="flower-results")
    f.add_argument("--name", default="federation", help="results: OUT_DIR/NAME.json and NAME.log")
    f.add_argument("--verbose", action="store_true", help="print every process's lines")
    g = sub.add_parser("plot", help="an SVG of test accuracy per round from results files")
    g.add_argument("results", nargs="+")
    g.add_argument("-o", "--out", required=True)
    a = p.parse_args(argv)
    try:
        if a.cmd == "server":
            return _server(a)
        if a.cmd == "client":
            return _client(a)
        if a.cmd == "federation":
            return run_federation(a)
        plot(a.results, a.out)
        return 0
    except (cltrain.CltrainError, OSError, ValueError) as e:
        sys.stderr.write("cltrain.flower: %s\n" % e)
        return 1
    except grpc.RpcError as e:  # the server is not there, or went away
        details = e.details() if hasattr(e, "details") else str(e)
        sys.stderr.write("cltrain.flower: %s: %s\n" % (getattr(a, "address", "server"), details))
        return 1
