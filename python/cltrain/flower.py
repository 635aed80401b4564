"""cltrain as the trainer of a Flower app (federated learning; `flwr` >= 1.42 from PyPI).

Flower does the transport and the aggregation; cltrain does each node's local training, on the
node's OpenCL device (or the CPU). The app is Flower's current form, its Message API:

    client_app   a flwr.clientapp.ClientApp: @train trains the node's partition from the arrays
                 the server sends, @evaluate measures them
    server_app   a flwr.serverapp.ServerApp: FedAvg over the nodes, the global model evaluated
                 with cltrain after every round, a results file

Both read the run config (RUN_DEFAULTS lists its keys; `[tool.flwr.app.config]` of a Flower
app's pyproject.toml, `flwr run --run-config`), so that `flwr run` runs them as Flower's templates
are run (examples/flower is such an app), in a deployment (a SuperLink and SuperNodes) or in
Flower's simulation engine. The node's partition comes from its node config (`partition-id`,
`num-partitions`), as Flower's simulation engine and `flower-supernode --node-config` set it.

Arrays travel by name, one per weight that training updates (Session.trained_weight_names()). With
`lora = RANK` only LoRA's adapters train, so only they travel: a round of MobileNetV2 sends 36 KB,
not its 14 MB. A round's train sets them, starts the optimizer afresh, trains local-epochs over the
node's data and returns them: what Session.fit does from the same weights, so Flower adds
transport, not different training.

One machine, one command (a SuperLink, N SuperNodes and `flwr run` on loopback, or the simulation
engine; a fault to inject; see --help):

    python3 -m cltrain.flower federation --model mlp.circle --clients 8 --rounds 10 --partition dirichlet
"""

import gzip
import json
import os
import sys
import time

import numpy as np

import cltrain

try:
    import flwr
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg
except ImportError as e:  # one line, not a traceback
    raise ImportError("cltrain.flower needs Flower >= 1.42 (pip install 'cltrain[flower]'; .ci/flower makes a venv "
                      "with it): %s" % e)

__all__ = ["RUN_DEFAULTS", "FIT_KEYS", "POISON_KINDS", "Trainer", "client_app", "server_app", "make_client_app",
           "make_server_app", "app_pyproject", "load_fashion_mnist", "partition", "poisoned", "scale", "fit_images", "run_settings"]

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"

# The run config: what a Flower app's pyproject.toml ([tool.flwr.app.config]) or `flwr run
# --run-config` may set, and the value a key left out takes.
_RUN_CONFIG = (  # key, default, what it does
    ("model", "mlp", "a .circle/.tflite path, or a kind cltrain.make_model makes (mlp, mobilenetv2, ...)"),
    ("data", FASHION_MNIST, "Fashion-MNIST's idx files"),
    ("num-server-rounds", 3, ""),
    ("optimizer", "adam", "or \"sgd\""),
    ("learning-rate", 0.001, ""),
    ("loss", "categorical_crossentropy", "or \"mean_squared_error\", \"categorical_crossentropy_from_logits\""),
    ("batch-size", 16, ""),
    ("local-epochs", 1, ""),
    ("shuffle", True, ""),
    ("trainable-ops", -1, "-1 all, N the last N operators"),
    ("lora", 0, "a rank: LoRA adapters on the Dense layers alone train, and alone travel"),
    ("lora-alpha", 0.0, "0: the rank"),
    ("backends", "opencl", "the nodes' cltrain backends"),
    ("server-backends", "cpu", "the server's evaluation"),
    ("device", -1, ""),
    ("cache-dir", "-", "cltrain's cache; \"-\": its default, \"\": none"),
    ("partition", "dirichlet", "or \"iid\""),
    ("alpha", 0.5, "Dirichlet concentration (non-IID)"),
    ("partition-seed", 0, ""),
    ("limit", 0, "use only the first N training images (smoke tests)"),
    ("test-limit", 0, "evaluate on only the first N test images"),
    ("min-nodes", 2, "nodes each round waits for and samples"),
    ("round-timeout", 600.0, "seconds a round waits for its nodes' replies"),
    ("out", "", "results (JSON)"),
    ("save-replies", "", "a directory: each round's replies and their average (round-N.npz)"),
    ("poison", "", "ROUND:KIND[/KIND...],...: the server sends broken arrays in those rounds (POISON_KINDS)"),
)
RUN_DEFAULTS = {k: v for k, v, _ in _RUN_CONFIG}

# The run config keys that reach the nodes' training (the train message's config).
FIT_KEYS = ("optimizer", "learning-rate", "loss", "batch-size", "local-epochs", "shuffle", "trainable-ops", "lora",
            "lora-alpha")


def run_settings(run_config=None, **overrides):
    """RUN_DEFAULTS with run_config (a Context's, or a dict) and overrides over it, each value of
    its default's type."""
    out = dict(RUN_DEFAULTS)
    for source in (run_config or {}, {k.replace("_", "-"): v for k, v in overrides.items()}):
        for k, v in source.items():
            if k not in RUN_DEFAULTS:
                raise ValueError("run config key %r is not one of cltrain.flower's (%s)" % (k, ", ".join(RUN_DEFAULTS)))
            d = RUN_DEFAULTS[k]
            out[k] = (v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")) if isinstance(d, bool) \
                else type(d)(v)
    return out


_APP_HEAD = """# A Flower app whose ServerApp and ClientApp are cltrain's (cltrain.flower), laid out as Flower's
# templates (`flwr new`) are; `python3 -m cltrain.flower app` writes this file. Run it with
#   flwr run . <superlink connection> --stream [--run-config "key=value ..."]
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "cltrain-fedavg"
version = "1.0.0"
description = "Federated training with cltrain on each node's OpenCL device: FedAvg over weights or LoRA adapters"
license = "Apache-2.0"
dependencies = ["cltrain[flower]"]

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "cltrain"

[tool.flwr.app.components]
serverapp = "cltrain.flower:server_app"
clientapp = "cltrain.flower:client_app"

# cltrain.flower.RUN_DEFAULTS, key for key (flwr run --run-config may set only the keys listed here)
[tool.flwr.app.config]
"""


def toml_value(v):
    """v as a TOML value (what pyproject.toml and `flwr run --run-config` read)."""
    return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v) if isinstance(v, str) else repr(v)


def app_pyproject():
    """The pyproject.toml of a Flower app running cltrain.flower's ServerApp and ClientApp, with
    every run config key at its default (examples/flower/pyproject.toml is this text)."""
    return _APP_HEAD + "".join("%s = %s%s\n" % (k, toml_value(v), "  # " + h if h else "") for k, v, h in _RUN_CONFIG)


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


def fit_images(x, input_size):
    """28x28 images (n, 784) as a model of input_size floats per sample takes them: as they are
    for 784, else enlarged by an integer factor s (nearest) and repeated over c channels (NHWC)
    where s*s*c*784 = input_size, c one of 1, 3, 4 (MobileNetV2's 224x224x3 is s = 8, c = 3)."""
    x = scale(x) if np.asarray(x).dtype == np.uint8 else np.asarray(x, dtype=np.float32)
    x = x.reshape(x.shape[0], -1)
    if x.shape[1] == input_size:
        return x
    if x.shape[1] != 784:
        raise ValueError("samples of %d values for a model taking %d" % (x.shape[1], input_size))
    for c in (3, 1, 4):
        s = int(round((input_size / (784.0 * c)) ** 0.5))
        if s * s * c * 784 == input_size:
            img = x.reshape(-1, 28, 28).repeat(s, axis=1).repeat(s, axis=2)
            return np.ascontiguousarray(np.repeat(img[..., None], c, axis=3).reshape(x.shape[0], -1))
    raise ValueError("the model takes %d floats per sample, not 28x28 images enlarged by an integer factor over 1, "
                     "3 or 4 channels" % input_size)


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


def _one_line(e):
    return " ".join(("%s: %s" % (type(e).__name__, e) if not isinstance(e, ValueError) else str(e)).split())


def _cache(value):
    return None if value == "-" else value


def model_path(model, cache_dir="-"):
    """model as a file: a path as it is, a make_model kind made once under the cache directory
    (or a temporary one)."""
    if os.path.exists(model) or model.endswith((".circle", ".tflite")):
        return model
    base = _cache(cache_dir)
    if not base:
        base = os.path.join(os.environ.get("TMPDIR", "/tmp"), "cltrain-flower-%d" % os.getuid())
    path = os.path.join(base, "models", model + ".circle")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        cltrain.make_model(model, path + ".%d.tmp" % os.getpid())
        os.replace(path + ".%d.tmp" % os.getpid(), path)
    return path


class Trainer:
    """A node's local training with cltrain: what client_app's train and evaluate run.

    model: a .circle/.tflite path or its bytes (every node of a federation loads the same model).
    x, y: the node's training data (x: samples x input floats, or 28x28 uint8 pixels, which
    fit_images() makes the model's input; y: class labels or one-hot). x_eval, y_eval: what
    evaluate measures (None: the training data). backends, device, cache_dir: as cltrain.Session
    takes them. on_step(round, epoch, step, steps, loss), if given, is called after every step.
    node: sent with each train's metrics ("partition-id"); the server averages in that order.
    checkpoint_every, checkpoint_dir: periodic checkpoints of the local training, so that the work
    of a long round survives the node being killed (Session.resume reads them).
    """

    def __init__(self, model, x, y, x_eval=None, y_eval=None, backends=("opencl",), device=None, cache_dir=None,
                 on_step=None, node=-1, checkpoint_every=None, checkpoint_dir=None):
        if not isinstance(model, (bytes, bytearray, memoryview)):
            with open(model, "rb") as f:
                model = f.read()
        self._model = bytes(model)
        self._x, self._y = x, np.asarray(y)
        self._xe, self._ye = (x, self._y) if x_eval is None else (x_eval, np.asarray(y_eval))
        self._backends = backends
        self._device = None if device is None or device < 0 else device
        self._cache_dir = cache_dir
        self._on_step = on_step
        self.node = int(node)
        self._session = None
        self._key = None
        self._checkpoints = dict(checkpoint_every=checkpoint_every, checkpoint_dir=checkpoint_dir) \
            if checkpoint_every else {}

    def session(self, config=None):
        """The cltrain session for these settings (made, and compiled, when they change)."""
        c = run_settings({k: v for k, v in (config or {}).items() if k in FIT_KEYS})
        key = tuple(c[k] for k in ("optimizer", "learning-rate", "loss", "batch-size", "trainable-ops", "lora",
                                   "lora-alpha"))
        if self._session is None or key != self._key:
            if self._session is not None:
                self._session.close()
            s = cltrain.Session(self._model, backends=self._backends, batch_size=c["batch-size"], device=self._device,
                                cache_dir=self._cache_dir)
            # A local batch whose loss or gradients are not finite (a bad sample) is skipped, not
            # applied: the round goes on and no NaN reaches the server's average.
            s.compile(optimizer=c["optimizer"], learning_rate=c["learning-rate"], loss=c["loss"],
                      trainable_ops=c["trainable-ops"], on_nonfinite="skip",
                      lora=(c["lora"], c["lora-alpha"]) if c["lora"] > 0 else None, **self._checkpoints)
            self._session, self._key = s, key
            self._x, self._xe = (fit_images(a, s.input_size) for a in (self._x, self._xe))
        return self._session

    def get_arrays(self, config=None):
        """The weights training updates, by name, in the model's order."""
        s = self.session(config)
        return dict(zip(s.trained_weight_names(), s.get_weights()))

    def set_arrays(self, arrays, config=None):
        """arrays (a dict by name, or an ArrayRecord) into the session. The wrong names, count, size
        or type, or NaN or Inf (a broken or hostile server), raise ValueError with one line before
        anything changes."""
        s = self.session(config)
        names = s.trained_weight_names()
        given = list(arrays.keys())
        if sorted(given) != sorted(names):
            missing, extra = sorted(set(names) - set(given)), sorted(set(given) - set(names))
            raise ValueError("the arrays are not the %d this model trains (%s)" % (len(names), "; ".join(
                filter(None, ["missing " + ", ".join(missing[:3]) if missing else "",
                              "unexpected " + ", ".join(extra[:3]) if extra else "",
                              "%d given" % len(given) if not missing and not extra else ""]))))
        values = []
        for n in names:
            a = arrays[n]
            if isinstance(a, Array):
                try:
                    a = a.numpy()
                except Exception as e:
                    raise ValueError("array %s is not a numpy array (%s)" % (n, _one_line(e))) from None
            values.append(a)
        s.set_weights(values)
        return s

    def fit(self, arrays, config=None):
        """Trains from arrays (by name); (trained arrays by name, samples trained, metrics)."""
        config = dict(config or {})
        c = run_settings({k: v for k, v in config.items() if k in FIT_KEYS})
        s = self.set_arrays(arrays, config)
        s.reset_optimizer()
        skipped = s.skipped_steps
        steps = self._x.shape[0] // s.batch_size
        rnd = int(config.get("server-round", 0))
        hook = None
        if self._on_step is not None:
            hook = lambda epoch, step, loss: self._on_step(rnd, epoch, step, steps, loss)
        h = s.fit(self._x, self._y, epochs=c["local-epochs"], shuffle=c["shuffle"], seed=max(rnd, 1), verbose=0,
                  on_step=hook)
        return dict(zip(s.trained_weight_names(), s.get_weights())), steps * s.batch_size, {
            "loss": float(h.history["loss"][-1]), "accuracy": float(h.history["accuracy"][-1]),
            "partition-id": self.node, "skipped-steps": s.skipped_steps - skipped}

    def evaluate(self, arrays, config=None):
        s = self.set_arrays(arrays, config)
        loss, accuracy = s.evaluate(self._xe, self._ye)
        return float(loss), (self._xe.shape[0] // s.batch_size) * s.batch_size, {"accuracy": float(accuracy)}

    def close(self):
        if self._session is not None:
            self._session.close()
            self._session = None


# ---- the ClientApp ----

def _log(prefix):
    def log(msg):
        sys.stdout.write("%s%s\n" % (prefix, msg))
        sys.stdout.flush()
    return log


_trainers = {}  # (run id, partition): a node's Trainer, kept while its process lives


def _node_trainer(context, overrides):
    cfg = run_settings(context.run_config, **overrides)
    k = int(context.node_config.get("partition-id", 0))
    n = int(context.node_config.get("num-partitions", 1))
    key = (context.run_id, k, n, tuple(sorted(cfg.items())))
    if key not in _trainers:
        if not 0 <= k < n:
            raise ValueError("partition-id %d is not one of the %d partitions" % (k, n))
        log = _log("client %d: " % k)
        x, y, _, _ = load_fashion_mnist(cfg["data"])
        if cfg["limit"]:
            x, y = x[:cfg["limit"]], y[:cfg["limit"]]
        idx = partition(y, n, cfg["partition"], cfg["alpha"], cfg["partition-seed"])[k]
        log("%d samples, classes %s" % (idx.size, np.bincount(y[idx], minlength=10).tolist()))

        def on_step(rnd, epoch, step, steps, loss):
            if step + 1 == steps // 2:  # the middle of the round's first epoch: what a federation's fault waits for
                log("round %d: step %d of %d" % (rnd, step + 1, steps))

        _trainers.clear()
        _trainers[key] = (Trainer(model_path(cfg["model"], cfg["cache-dir"]), x[idx], y[idx],
                                  backends=cfg["backends"].split(","), device=cfg["device"],
                                  cache_dir=_cache(cfg["cache-dir"]), on_step=on_step, node=k), log)
    return _trainers[key]


def _reply(msg, context, overrides, what):
    """Runs what(trainer, arrays, config) for msg; a failure (arrays refused, data or device failing)
    is one line in the node's log and an error reply (the server counts it among the round's
    failures), and the node serves the rounds after it."""
    log = _log("client %s: " % context.node_config.get("partition-id", "?"))
    config = dict(msg.content["config"]) if "config" in msg.content.config_records else {}
    try:
        trainer, log = _node_trainer(context, overrides)
        if "arrays" not in msg.content.array_records:
            raise ValueError("the message holds no arrays")
        return Message(what(trainer, msg.content["arrays"], config), reply_to=msg)
    except Exception as e:  # one line and an error reply, never the end of the node
        line = "round %s: %s refused: %s" % (config.get("server-round", "?"), msg.metadata.message_type,
                                             _one_line(e))
        log(line)
        return Message(Error(code=1, reason=line), reply_to=msg)


def _train(trainer, arrays, config):
    weights, n, metrics = trainer.fit(arrays, config)
    return RecordDict({"arrays": ArrayRecord({k: Array(v) for k, v in weights.items()}),
                       "metrics": MetricRecord(dict(metrics, **{"num-examples": n}))})


def _evaluate(trainer, arrays, config):
    loss, n, metrics = trainer.evaluate(arrays, config)
    return RecordDict({"metrics": MetricRecord(dict(metrics, loss=loss, **{"num-examples": n}))})


def make_client_app(**overrides):
    """A ClientApp training the node's partition with cltrain; overrides (run config keys, with _
    for -) win over the run config (for flwr.simulation.run_simulation, which has none)."""
    app = ClientApp()
    app.train()(lambda msg, context: _reply(msg, context, overrides, _train))
    app.evaluate()(lambda msg, context: _reply(msg, context, overrides, _evaluate))
    return app


# ---- the ServerApp ----

# What a hostile server (the run config's poison) sends in place of the global arrays: each kind
# a way a broken or malicious server can break them.
POISON_KINDS = ("nan", "inf", "shape", "count", "dtype", "garbage")


def poisoned(arrays, kind):
    """An ArrayRecord: arrays (an ArrayRecord) broken as kind (POISON_KINDS) says."""
    nd = {k: np.array(a.numpy()) for k, a in arrays.items()}
    names = list(nd)
    if kind == "nan":
        nd[names[0]].reshape(-1)[nd[names[0]].size // 2] = np.nan
    elif kind == "inf":
        nd[names[-1]].reshape(-1)[0] = np.inf
    elif kind == "shape":
        nd[names[-1]] = np.concatenate([nd[names[-1]].reshape(-1), np.zeros(1, nd[names[-1]].dtype)])
    elif kind == "count":
        del nd[names[-1]]
    elif kind == "dtype":
        nd[names[0]] = nd[names[0]].astype(np.complex64)
    elif kind == "garbage":
        return ArrayRecord({k: Array(dtype="float32", shape=(4,), stype="numpy.ndarray", data=b"\x93NUMPY not an array")
                            for k in names})
    else:
        raise ValueError("poison %r is not one of %s" % (kind, ", ".join(POISON_KINDS)))
    return ArrayRecord({k: Array(v) for k, v in nd.items()})


def _poison(spec):
    """ROUND:KIND[/KIND...][,ROUND:...] as {round: [kind, ...]} (the round's nodes, in node order,
    take the kinds in turn)."""
    out = {}
    for item in filter(None, (spec or "").split(",")):
        r, _, kinds = item.partition(":")
        kinds = kinds.split("/")
        if not r.isdigit() or not all(k in POISON_KINDS for k in kinds):
            raise ValueError("poison takes ROUND:KIND[/KIND...] with each KIND one of %s, not %r"
                             % (", ".join(POISON_KINDS), item))
        out[int(r)] = kinds
    return out


def _bytes(arrays):
    return int(sum(len(a.data) for a in arrays.values()))


class _Evaluator:
    """The server's evaluation of the global model on the test set, with cltrain."""

    def __init__(self, model, x_test, y_test, backends, lora=None, batch_size=100, cache_dir=None):
        self.session = cltrain.Session(model, backends=backends, batch_size=batch_size, cache_dir=cache_dir)
        self.session.compile(lora=lora)
        self.names = self.session.trained_weight_names()
        self.x, self.y = fit_images(x_test, self.session.input_size), np.asarray(y_test)

    def arrays(self):
        return ArrayRecord({n: Array(w) for n, w in zip(self.names, self.session.get_weights())})

    def __call__(self, server_round, arrays):
        self.session.set_weights([arrays[n].numpy() for n in self.names])
        loss, accuracy = self.session.evaluate(self.x, self.y)
        return MetricRecord({"loss": float(loss), "accuracy": float(accuracy)})


def _train_metrics(records, weight_key):
    """The nodes' train metrics: loss and accuracy averaged by samples, skipped steps summed."""
    rows = [next(iter(r.metric_records.values())) for r in records]
    n = float(sum(m[weight_key] for m in rows)) or 1.0
    return MetricRecord({"loss": sum(m["loss"] * m[weight_key] for m in rows) / n,
                         "accuracy": sum(m["accuracy"] * m[weight_key] for m in rows) / n,
                         "skipped-steps": int(sum(m.get("skipped-steps", 0) for m in rows))})


class _CltrainFedAvg(FedAvg):
    """FedAvg that averages the replies in partition order (not arrival order: a federation is then
    reproducible bit for bit), records per round the nodes that trained and failed and the bytes
    sent and received, keeps the replies where save_replies names a directory, and sends broken
    arrays in the rounds poison ({round: kind}) names."""

    def __init__(self, log, model_bytes, poison=None, save_replies="", **kw):
        super().__init__(train_metrics_aggr_fn=_train_metrics, **kw)
        self.log, self.model_bytes, self.poison, self.save_replies = log, model_bytes, dict(poison or {}), save_replies
        self.rounds = {}

    def configure_train(self, server_round, arrays, config, grid):
        messages = list(super().configure_train(server_round, arrays, config, grid))
        self.rounds[server_round] = {"nodes": len(messages), "bytes_sent": _bytes(arrays) * len(messages)}
        kinds = self.poison.get(server_round)
        if not kinds:
            return messages
        messages.sort(key=lambda m: m.metadata.dst_node_id)
        self.log("round %d: sending the nodes broken arrays (%s)" % (server_round, "/".join(kinds)))
        return [Message(RecordDict({"arrays": poisoned(arrays, kinds[i % len(kinds)]), "config": m.content["config"]}),
                        dst_node_id=m.metadata.dst_node_id, message_type=m.metadata.message_type)
                for i, m in enumerate(messages)]

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        ok = [m for m in replies if not m.has_error()]
        ok.sort(key=lambda m: (next(iter(m.content.metric_records.values())).get("partition-id", -1),
                               m.metadata.src_node_id))
        failed = len(replies) - len(ok)
        row = self.rounds.setdefault(server_round, {})
        row.update({"fit_results": len(ok), "fit_failures": failed + max(0, row.get("nodes", 0) - len(replies)),
                    "examples": int(sum(next(iter(m.content.metric_records.values()))["num-examples"] for m in ok)),
                    "bytes_received": int(sum(_bytes(m.content["arrays"]) for m in ok
                                              if "arrays" in m.content.array_records))})
        arrays, metrics = super().aggregate_train(server_round, ok + [m for m in replies if m.has_error()])
        sent = row.get("bytes_sent", 0) // max(row.get("nodes", 1), 1)
        self.log("round %d: %d nodes trained, %d failed; %d bytes of arrays to each node and back (%.2f%% of the "
                 "model's %d bytes)" % (server_round, row["fit_results"], row["fit_failures"], sent,
                                        100.0 * sent / self.model_bytes, self.model_bytes))
        if self.save_replies and ok and arrays is not None:
            os.makedirs(self.save_replies, exist_ok=True)
            saved = {"aggregate/" + k: a.numpy() for k, a in arrays.items()}
            for m in ok:
                mr = next(iter(m.content.metric_records.values()))
                p = int(mr.get("partition-id", -1))
                saved["examples/%d" % p] = np.array(mr["num-examples"], np.int64)
                saved.update({"node%d/%s" % (p, k): a.numpy() for k, a in m.content["arrays"].items()})
            np.savez(os.path.join(self.save_replies, "round-%d.npz" % server_round), **saved)
        return arrays, metrics


def _server_main(grid, context, overrides):
    cfg = run_settings(context.run_config, **overrides)
    log = _log("server: ")
    model = model_path(cfg["model"], cfg["cache-dir"])
    _, _, x_test, y_test = load_fashion_mnist(cfg["data"])
    if cfg["test-limit"]:
        x_test, y_test = x_test[:cfg["test-limit"]], y_test[:cfg["test-limit"]]
    lora = (cfg["lora"], cfg["lora-alpha"]) if cfg["lora"] > 0 else None
    evaluator = _Evaluator(model, x_test, y_test, cfg["server-backends"].split(","), lora,
                           cache_dir=_cache(cfg["cache-dir"]))
    initial = evaluator.arrays()
    log("%d arrays travel (%s), %d bytes; the model file is %d bytes" % (
        len(initial), "LoRA adapters, rank %d" % cfg["lora"] if lora else "the trained weights", _bytes(initial),
        os.path.getsize(model)))
    strategy = _CltrainFedAvg(log, os.path.getsize(model), _poison(cfg["poison"]), cfg["save-replies"],
                              fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=cfg["min-nodes"],
                              min_available_nodes=cfg["min-nodes"])
    t0 = time.monotonic()
    result = strategy.start(grid=grid, initial_arrays=initial, num_rounds=cfg["num-server-rounds"],
                            timeout=cfg["round-timeout"],
                            train_config=ConfigRecord({k: cfg[k] for k in FIT_KEYS}), evaluate_fn=evaluator)
    rounds = []
    for r, m in sorted(result.evaluate_metrics_serverapp.items()):
        row = {"round": r, "test_loss": m["loss"], "test_accuracy": m["accuracy"]}
        row.update(strategy.rounds.get(r, {}))
        rounds.append(row)
    summary = {"model": os.path.basename(model), "nodes": cfg["min-nodes"], "rounds": cfg["num-server-rounds"],
               "lora": cfg["lora"], "model_bytes": os.path.getsize(model), "array_bytes": _bytes(initial),
               "fit_config": {k: cfg[k] for k in FIT_KEYS}, "seconds": round(time.monotonic() - t0, 1),
               "per_round": rounds}
    if cfg["out"]:
        with open(cfg["out"] + ".tmp", "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(cfg["out"] + ".tmp", cfg["out"])
    done = [r for r in rounds if r["round"] > 0]
    if done:
        log("test accuracy after round %d: %.4f" % (done[-1]["round"], done[-1]["test_accuracy"]))
    return summary


def make_server_app(**overrides):
    """A ServerApp running FedAvg over the nodes with cltrain's evaluation; overrides as
    make_client_app's."""
    app = ServerApp()
    app.main()(lambda grid, context: _server_main(grid, context, overrides))
    return app


# What a Flower app's pyproject.toml names ([tool.flwr.app.components]): serverapp =
# "cltrain.flower:server_app", clientapp = "cltrain.flower:client_app".
client_app = make_client_app()
server_app = make_server_app()


if __name__ == "__main__":
    from cltrain._flower_cli import main

    sys.exit(main())
