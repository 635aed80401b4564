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

import gzip
import os
import sys

import numpy as np

import cltrain

try:
    import flwr
    from flwr.client import Client, NumPyClient
    from flwr.common import Code, Status
    from flwr.server.strategy import FedAvg
except ImportError as e:  # one line, not a traceback
    raise ImportError("cltrain.flower needs Flower (pip install flwr; .ci/flower makes a venv with it): %s" % e)

__all__ = ["CltrainClient", "FIT_DEFAULTS", "POISON_KINDS", "load_fashion_mnist", "partition", "poisoned", "scale",
           "make_strategy"]

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
    each fit's metrics ("client"); the federation's server averages in that order. log(line):
    where to_client()'s Client reports a refused round (default: stderr). checkpoint_every,
    checkpoint_dir: periodic checkpoints of the local training (Session.compile's), so that the
    work of a long round survives the client being killed (Session.resume reads them).
    """

    def __init__(self, model, x, y, x_eval=None, y_eval=None, backends=("opencl",), device=None, cache_dir=None,
                 on_step=None, client_id=-1, log=None, checkpoint_every=None, checkpoint_dir=None):
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
        self._checkpoints = dict(checkpoint_every=checkpoint_every, checkpoint_dir=checkpoint_dir) \
            if checkpoint_every else {}
        self.log = log or (lambda line: (sys.stderr.write("cltrain.flower: %s\n" % line), sys.stderr.flush()))

    def session(self, config=None):
        """The cltrain session for these settings (made, and compiled, when they change)."""
        c = _config(config)
        key = (c["optimizer"], c["learning_rate"], c["loss"], c["batch_size"], c["trainable_ops"])
        if self._session is None or key != self._key:
            if self._session is not None:
                self._session.close()
            s = cltrain.Session(self._model, backends=self._backends, batch_size=c["batch_size"], device=self._device,
                                cache_dir=self._cache_dir)
            # A local batch whose loss or gradients are not finite (a bad sample) is skipped, not
            # applied: the round goes on and no NaN reaches the server's average.
            s.compile(optimizer=c["optimizer"], learning_rate=c["learning_rate"], loss=c["loss"],
                      trainable_ops=c["trainable_ops"], on_nonfinite="skip", **self._checkpoints)
            self._session, self._key = s, key
        return self._session

    def get_parameters(self, config):
        return self.session(config).get_weights()

    def fit(self, parameters, config):
        """Trains from the server's parameters. Parameters of the wrong count, size or type, or with
        NaN or Inf (a broken or hostile server), raise ValueError with one line before anything
        changes (Flower reports it as this client's failure), and the client serves later rounds."""
        c = _config(config)
        s = self.session(config)
        s.set_weights(parameters)
        s.reset_optimizer()
        skipped = s.skipped_steps
        steps = self._x.shape[0] // s.batch_size
        rnd = int((config or {}).get("server_round", 0))
        hook = None
        if self._on_step is not None:
            hook = lambda epoch, step, loss: self._on_step(rnd, epoch, step, steps, loss)
        h = s.fit(self._x, self._y, epochs=c["local_epochs"], shuffle=c["shuffle"], seed=c["seed"], verbose=0,
                  on_step=hook)
        return s.get_weights(), steps * s.batch_size, {"loss": h.history["loss"][-1],
                                                       "accuracy": h.history["accuracy"][-1],
                                                       "client": self._client_id,
                                                       "skipped_steps": s.skipped_steps - skipped}

    def evaluate(self, parameters, config):
        s = self.session(config)
        s.set_weights(parameters)
        loss, accuracy = s.evaluate(self._xe, self._ye)
        return float(loss), (self._xe.shape[0] // s.batch_size) * s.batch_size, {"accuracy": float(accuracy)}

    def close(self):
        if self._session is not None:
            self._session.close()
            self._session = None

    def to_client(self):
        """The Flower Client that start_client runs: this client's fit and evaluate, where a round
        that fails (parameters refused, data or device failing) is logged in one line and answered
        as a failed round (a status not OK, which the server counts among its failures), so the
        client serves the rounds after it. Flower's own wrapper re-raises instead, which ends the
        client process under start_client's transport."""
        return _RefusingClient(self)


def _arrays(parameters):
    try:
        return flwr.common.parameters_to_ndarrays(parameters)
    except Exception as e:
        raise ValueError("the parameters are not numpy arrays (%s)" % _one_line(e)) from None


def _one_line(e):
    return " ".join(("%s: %s" % (type(e).__name__, e) if not isinstance(e, ValueError) else str(e)).split())


class _RefusingClient(Client):
    def __init__(self, numpy_client):
        self.c = numpy_client

    def get_parameters(self, ins):
        return flwr.common.GetParametersRes(status=Status(Code.OK, "Success"), parameters=flwr.common.
                                            ndarrays_to_parameters(self.c.get_parameters(ins.config)))

    def _refused(self, what, ins, e):
        line = "round %s: %s refused: %s" % ((ins.config or {}).get("server_round", "?"), what, _one_line(e))
        self.c.log(line)
        return line

    def fit(self, ins):
        try:
            weights, n, metrics = self.c.fit(_arrays(ins.parameters), ins.config)
        except Exception as e:  # one line and a failed round, never the end of the client
            line = self._refused("fit", ins, e)
            return flwr.common.FitRes(status=Status(Code.FIT_NOT_IMPLEMENTED, line),
                                      parameters=flwr.common.Parameters(tensors=[], tensor_type=""), num_examples=0,
                                      metrics={})
        return flwr.common.FitRes(status=Status(Code.OK, "Success"),
                                  parameters=flwr.common.ndarrays_to_parameters(weights), num_examples=n,
                                  metrics=metrics)

    def evaluate(self, ins):
        try:
            loss, n, metrics = self.c.evaluate(_arrays(ins.parameters), ins.config)
        except Exception as e:
            line = self._refused("evaluate", ins, e)
            return flwr.common.EvaluateRes(status=Status(Code.EVALUATE_NOT_IMPLEMENTED, line), loss=0.0,
                                           num_examples=0, metrics={})
        return flwr.common.EvaluateRes(status=Status(Code.OK, "Success"), loss=loss, num_examples=n, metrics=metrics)


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


# What a hostile server (make_strategy's poison, the server's --poison) sends in place of the
# global parameters: each kind a way a broken or malicious server can break them.
POISON_KINDS = ("nan", "inf", "shape", "count", "dtype", "garbage")


def poisoned(parameters, kind):
    """flwr Parameters broken as kind (POISON_KINDS) says."""
    nd = [np.array(a) for a in flwr.common.parameters_to_ndarrays(parameters)]
    if kind == "nan":
        nd[0].reshape(-1)[nd[0].size // 2] = np.nan
    elif kind == "inf":
        nd[-1].reshape(-1)[0] = np.inf
    elif kind == "shape":
        nd[-1] = np.concatenate([nd[-1].reshape(-1), np.zeros(1, nd[-1].dtype)])
    elif kind == "count":
        nd = nd[:-1]
    elif kind == "dtype":
        nd[0] = nd[0].astype(np.complex64)
    elif kind == "garbage":
        return flwr.common.Parameters(tensors=[b"\x93NUMPY not an array"] * len(nd), tensor_type="numpy.ndarray")
    else:
        raise ValueError("poison %r is not one of %s" % (kind, ", ".join(POISON_KINDS)))
    return flwr.common.ndarrays_to_parameters(nd)


class _LoggingFedAvg(FedAvg):
    """FedAvg that records, per round, how many clients returned and how many failed; where poison
    ({round: kind}) names a round, it sends that round's clients broken parameters (poisoned())."""

    def __init__(self, log, poison=None, **kw):
        super().__init__(**kw)
        self.log = log
        self.rounds = {}
        self.poison = dict(poison or {})

    def configure_fit(self, server_round, parameters, client_manager):
        instructions = super().configure_fit(server_round, parameters, client_manager)
        kind = self.poison.get(server_round)
        if kind is None:
            return instructions
        self.log("round %d: sending the clients broken parameters (%s)" % (server_round, kind))
        bad = poisoned(parameters, kind)
        return [(client, flwr.common.FitIns(bad, ins.config)) for client, ins in instructions]

    def aggregate_fit(self, server_round, results, failures):
        # In the clients' order, not the order their replies arrived in: the average's float sums
        # then do not depend on timing, and a federation is reproducible bit for bit.
        results = sorted(results, key=lambda r: (r[1].metrics.get("client", -1), r[1].num_examples))
        self.rounds[server_round] = {"fit_results": len(results), "fit_failures": len(failures),
                                     "examples": int(sum(r.num_examples for _, r in results))}
        self.log("round %d: %d clients trained, %d failed" % (server_round, len(results), len(failures)))
        return super().aggregate_fit(server_round, results, failures)


def make_strategy(model, x_test, y_test, clients, fit_config=None, min_clients=None, backends=("cpu",),
                  cache_dir=None, log=print, poison=None):
    """FedAvg over all connected clients (waiting for min_clients, default all), starting from the
    model's own weights, sending fit_config (FIT_DEFAULTS' keys; the round number as the shuffle
    seed) and evaluating the global model on the test set with cltrain after every round. A
    client that fails or dies during a round is left out of that round's average. poison
    ({round: kind}, POISON_KINDS) makes the server hostile in those rounds, to test clients."""
    evaluator = _Evaluator(model, x_test, y_test, backends, cache_dir=cache_dir)
    fit_config = dict(fit_config or {})

    def on_fit_config(server_round):
        return dict(fit_config, server_round=server_round, seed=server_round)

    min_clients = clients if min_clients is None else min_clients
    strategy = _LoggingFedAvg(
        log, poison, fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=min_clients, min_evaluate_clients=0,
        min_available_clients=min_clients, evaluate_fn=evaluator, on_fit_config_fn=on_fit_config,
        initial_parameters=flwr.common.ndarrays_to_parameters(evaluator.session.get_weights()), accept_failures=True)
    return strategy, evaluator


if __name__ == "__main__":
    from cltrain._flower_cli import main

    sys.exit(main())
