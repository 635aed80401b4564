"""cltrain as the trainer inside a Flower client (federated learning; `flwr` from PyPI).

Flower does the transport and the aggregation (FedAvg or any strategy of its own); cltrain does
each client's local training, on the client's OpenCL device (or the CPU):

    import flwr, cltrain.flower
    client = cltrain.flower.CltrainClient("mlp.circle", x_train, y_train, backends=["opencl"])
    flwr.client.start_client(server_address="127.0.0.1:8080", client=client.to_client())

Parameters travel as flat float32 arrays, one per weight that training updates, in the model's
order (Session.trained_weight_names(): only the trainable operators' weights). A round's fit sets
them, starts the optimizer afresh, trains local_epochs over the client's data and returns them:
exactly what Session.fit does from the same weights, so Flower adds transport, not different
training. The server's fit config sets the training (FIT_DEFAULTS lists the keys).

One machine, one command (a Flower server with FedAvg and N client processes on loopback, each
with its own partition of Fashion-MNIST; see --help):

    python3 -m cltrain.flower federation --model mlp.circle --clients 8 --rounds 10 --partition dirichlet

`server` and `client` run the two sides alone (for clients on other machines).
"""

import argparse
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

import cltrain

try:
    import flwr
    import grpc
    from flwr.client import NumPyClient
    from flwr.server.strategy import FedAvg
except ImportError as e:  # one line, not a traceback
    raise ImportError("cltrain.flower needs Flower (pip install flwr; .ci/flower makes a venv with it): %s" % e)

__all__ = ["CltrainClient", "FIT_DEFAULTS", "load_fashion_mnist", "partition", "make_strategy", "run_federation"]

# What a server's fit config may set, and the value a key left out takes.
FIT_DEFAULTS = {
    "optimizer": "adam",  # or "sgd"
    "learning_rate": 0.001,
    "loss": "categorical_crossentropy",  # or "mean_squared_error"
    "batch_size": 16,
    "local_epochs": 1,
    "shuffle": True,
    "seed": 1,  # the shuffle's seed (the federation's server sends the round number)
    "trainable_ops": -1,  # -1 all, N the last N operators
}

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def _idx(directory, name, header):
    for path in (os.path.join(directory, name + ".gz"), os.path.join(directory, name)):
        if os.path.exists(path):
            with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
                return np.frombuffer(f.read(), dtype=np.uint8, offset=header)
    raise FileNotFoundError("%s[.gz] not found in %s (Debian: dataset-fashion-mnist)" % (name, directory))


def load_fashion_mnist(directory=FASHION_MNIST):
    """(x_train uint8 (60000, 784), y_train, x_test (10000, 784), y_test): the idx files, as they are."""
    xs, ys = [], []
    for split in ("train", "t10k"):
        xs.append(_idx(directory, split + "-images-idx3-ubyte", 16).reshape(-1, 784))
        ys.append(_idx(directory, split + "-labels-idx1-ubyte", 8).astype(np.int64))
    return xs[0], ys[0], xs[1], ys[1]


def scale(x):
    """Pixels to float32 in [0, 1], as cltrain's --data fashion-mnist reads them."""
    return np.asarray(x, dtype=np.float32) / np.float32(255.0)


def partition(labels, clients, scheme="iid", alpha=0.5, seed=0, min_size=64):
    """Index arrays, one per client, that together hold every sample once. iid: a shuffled equal
    split. dirichlet: non-IID by label, each class spread over the clients in proportions drawn
    from Dirichlet(alpha) (smaller alpha: fewer classes per client), drawn again until every
    client holds at least min_size samples."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    if scheme == "iid":
        return [np.sort(p) for p in np.array_split(rng.permutation(labels.size), clients)]
    if scheme != "dirichlet":
        raise ValueError("partition scheme %r is not iid or dirichlet" % scheme)
    for _ in range(1000):
        parts = [[] for _ in range(clients)]
        for c in np.unique(labels):
            idx = rng.permutation(np.flatnonzero(labels == c))
            cuts = (np.cumsum(rng.dirichlet(np.full(clients, alpha)))[:-1] * idx.size).astype(np.int64)
            for k, piece in enumerate(np.split(idx, cuts)):
                parts[k].append(piece)
        parts = [np.sort(np.concatenate(p)) for p in parts]
        if min(p.size for p in parts) >= min_size:
            return parts
    raise ValueError("no Dirichlet(%g) partition over %d clients gives each %d samples" % (alpha, clients, min_size))


def _config(config):
    c = dict(FIT_DEFAULTS)
    for k, v in (config or {}).items():
        if k in c:
            c[k] = type(FIT_DEFAULTS[k])(v) if not isinstance(FIT_DEFAULTS[k], bool) else bool(v)
    return c


class CltrainClient(NumPyClient):
    """A Flower NumPyClient whose fit and evaluate are cltrain's.

    model: a .circle/.tflite path or its bytes (every client of a federation loads the same model).
    x, y: the client's training data (x: samples × input floats or uint8 pixels, scaled as
    scale() does; y: class labels or one-hot). x_eval, y_eval: what evaluate measures (None: the
    training data). backends, device, cache_dir: as cltrain.Session takes them. on_step(round,
    epoch, step, steps, loss), if given, is called after every step of a fit. client_id: sent with
    each fit's metrics ("client"); the federation's server averages in that order.
    """

    def __init__(self, model, x, y, x_eval=None, y_eval=None, backends=("opencl",), device=None, cache_dir=None,
                 on_step=None, client_id=-1):
        if not isinstance(model, (bytes, bytearray, memoryview)):
            with open(model, "rb") as f:
                model = f.read()
        self._model = bytes(model)
        self._x = scale(x) if np.asarray(x).dtype == np.uint8 else np.asarray(x, dtype=np.float32)
        self._y = np.asarray(y)
        if x_eval is None:
            self._xe, self._ye = self._x, self._y
        else:
            self._xe = scale(x_eval) if np.asarray(x_eval).dtype == np.uint8 else np.asarray(x_eval, np.float32)
            self._ye = np.asarray(y_eval)
        self._backends = backends
        self._device = device
        self._cache_dir = cache_dir
        self._on_step = on_step
        self._client_id = int(client_id)
        self._session = None
        self._key = None

    def session(self, config=None):
        """The cltrain session for these settings (made, and compiled, when they change)."""
        c = _config(config)
        key = (c["optimizer"], c["learning_rate"], c["loss"], c["batch_size"], c["trainable_ops"])
        if self._session is None or key != self._key:
            if self._session is not None:
                self._session.close()
            s = cltrain.Session(self._model, backends=self._backends, batch_size=c["batch_size"], device=self._device,
                                cache_dir=self._cache_dir)
            s.compile(optimizer=c["optimizer"], learning_rate=c["learning_rate"], loss=c["loss"],
                      trainable_ops=c["trainable_ops"])
            self._session, self._key = s, key
        return self._session

    def get_parameters(self, config):
        return self.session(config).get_weights()

    def fit(self, parameters, config):
        c = _config(config)
        s = self.session(config)
        s.set_weights(parameters)
        s.reset_optimizer()
        steps = self._x.shape[0] // s.batch_size
        rnd = int((config or {}).get("server_round", 0))
        hook = None
        if self._on_step is not None:
            hook = lambda epoch, step, loss: self._on_step(rnd, epoch, step, steps, loss)
        h = s.fit(self._x, self._y, epochs=c["local_epochs"], shuffle=c["shuffle"], seed=c["seed"], verbose=0,
                  on_step=hook)
        return s.get_weights(), steps * s.batch_size, {"loss": h.history["loss"][-1],
                                                       "accuracy": h.history["accuracy"][-1],
                                                       "client": self._client_id}

    def evaluate(self, parameters, config):
        s = self.session(config)
        s.set_weights(parameters)
        loss, accuracy = s.evaluate(self._xe, self._ye)
        return float(loss), (self._xe.shape[0] // s.batch_size) * s.batch_size, {"accuracy": float(accuracy)}

    def close(self):
        if self._session is not None:
            self._session.close()
            self._session = None


class _Evaluator:
    """The server's evaluation of the global model on the test set, with cltrain."""

    def __init__(self, model, x_test, y_test, backends, batch_size=100, cache_dir=None):
        self.session = cltrain.Session(model, backends=backends, batch_size=batch_size, cache_dir=cache_dir)
        self.session.compile()
        self.x, self.y = scale(x_test), np.asarray(y_test)

    def __call__(self, server_round, parameters, config):
        self.session.set_weights(parameters)
        loss, _ = self.session.evaluate(self.x, self.y)
        return float(loss), {"accuracy": self.session.accuracy(self.x, self.y)}


class _LoggingFedAvg(FedAvg):
    """FedAvg that records, per round, how many clients returned and how many failed."""

    def __init__(self, log, **kw):
        super().__init__(**kw)
        self.log = log
        self.rounds = {}

    def aggregate_fit(self, server_round, results, failures):
        # In the clients' order, not the order their replies arrived in: the average's float sums
        # then do not depend on timing, and a federation is reproducible bit for bit.
        results = sorted(results, key=lambda r: (r[1].metrics.get("client", -1), r[1].num_examples))
        self.rounds[server_round] = {"fit_results": len(results), "fit_failures": len(failures),
                                     "examples": int(sum(r.num_examples for _, r in results))}
        self.log("round %d: %d clients trained, %d failed" % (server_round, len(results), len(failures)))
        return super().aggregate_fit(server_round, results, failures)


def make_strategy(model, x_test, y_test, clients, fit_config=None, min_clients=None, backends=("cpu",),
                  cache_dir=None, log=print):
    """FedAvg over all connected clients (waiting for min_clients, default all), starting from the
    model's own weights, sending fit_config (FIT_DEFAULTS' keys; the round number as the shuffle
    seed) and evaluating the global model on the test set with cltrain after every round. A
    client that fails or dies during a round is left out of that round's average."""
    evaluator = _Evaluator(model, x_test, y_test, backends, cache_dir=cache_dir)
    fit_config = dict(fit_config or {})

    def on_fit_config(server_round):
        return dict(fit_config, server_round=server_round, seed=server_round)

    min_clients = clients if min_clients is None else min_clients
    strategy = _LoggingFedAvg(
        log, fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=min_clients, min_evaluate_clients=0,
        min_available_clients=min_clients, evaluate_fn=evaluator, on_fit_config_fn=on_fit_config,
        initial_parameters=flwr.common.ndarrays_to_parameters(evaluator.session.get_weights()), accept_failures=True)
    return strategy, evaluator


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


def _server(a):
    log = _log("server: ")
    _, _, x_test, y_test = load_fashion_mnist(a.data)
    fit_config = {"optimizer": a.optimizer, "learning_rate": a.learning_rate, "batch_size": a.batch_size,
                  "local_epochs": a.local_epochs}
    strategy, _ = make_strategy(a.model, x_test, y_test, a.clients, fit_config, a.min_clients,
                                a.backends.split(","), a.cache_dir, log)
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
                           cache_dir=a.cache_dir, on_step=on_step, client_id=a.partition_id)
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
        "--round-timeout", str(a.round_timeout)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


if __name__ == "__main__":
    sys.exit(main())
