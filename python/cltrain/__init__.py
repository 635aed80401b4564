"""cltrain from Python: train circle and tflite models on OpenCL devices.

    import cltrain, numpy as np
    (x_train, y_train), (x_test, y_test) = cltrain.datasets.fashion_mnist()
    cltrain.make_model("mlp", "mlp.circle")          # or any circle/tflite file
    s = cltrain.Session("mlp.circle", backends=["opencl"], batch_size=32)
    s.compile(optimizer="adam", learning_rate=0.001, loss="categorical_crossentropy")
    history = s.fit(x_train, y_train, epochs=5, validation_split=0.1)
    probabilities = s.predict(x_test)
    s.export_circle("trained.circle")

A thin layer (ctypes) over libcltrain's C API (cltrain.h): each call is a C call, arrays go in and
out as float32 numpy arrays and are copied at the call; a failing call raises CltrainError with
the API's one line ("model error: ...", "invalid call: ...").
"""

import ctypes
import os
import sys
import time

import numpy as np

from . import _capi, datasets
from ._cli import cli_path, make_model
from ._files import _FilesAndReports, _floats

__all__ = ["Session", "CltrainError", "History", "version", "make_model", "cli_path", "datasets"]

_OPTIMIZERS = {"sgd": 1, "adam": 2}
_LOSSES = {"mse": 1, "mean_squared_error": 1, "categorical_crossentropy": 2, "cce": 2,
           "categorical_crossentropy_from_logits": 3}
_REDUCTIONS = {"sum_over_batch_size": 1, "sum": 2}
_STORAGES = {"float32": 0, "fp32": 0, "fp16": 1, "float16": 1}
_NONFINITE = {"stop": 0, "skip": 1}

_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _capi.load()
    return _lib


def _lora_settings(lora):
    """compile()'s lora= as the settings' lora_rank and lora_alpha."""
    if lora is None:
        return {}
    rank, alpha = (lora, 0.0) if not isinstance(lora, (tuple, list)) else (tuple(lora) + (0.0,))[:2]
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError("lora: a rank of 1 or more, or (rank, alpha), not %r" % (lora,))
    return {"lora_rank": rank, "lora_alpha": float(alpha)}


class CltrainError(RuntimeError):
    """A failed call of the C API; str() is its one line, .status its cltrain_status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def version():
    return _library().cltrain_version().decode()


def _name(value, table, what):
    if isinstance(value, int):
        return value
    try:
        return table[value.lower()]
    except (KeyError, AttributeError):
        raise ValueError("%s %r is not one of %s" % (what, value, ", ".join(sorted(table))))


class History:
    """What fit returns, as Keras's: history["loss"], ["accuracy"], ["val_loss"], ["val_accuracy"]."""

    def __init__(self):
        self.history = {}
        self.epoch = []

    def _add(self, epoch, values):
        self.epoch.append(epoch)
        for k, v in values.items():
            self.history.setdefault(k, []).append(v)


class Session(_FilesAndReports):
    """One model on the backends: load, compile (prepare), train, predict, export.

    model: a .circle or .tflite path, or its bytes. backends: in order of preference (the CPU is
    always the last resort). batch_size: None for the model's (its CIRCLE_TRAINING, else its first
    dimension). cache_dir: None for the default (~/.cache/cltrain), "" for none.
    """

    def __init__(self, model, backends=("opencl",), batch_size=None, device=None, cache_dir=None):
        lib = _library()
        self._lib = lib
        self._s = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            st = lib.cltrain_session_create_from_buffer(data, len(data), b"model buffer", ctypes.byref(self._s), err,
                                                        len(err))
        else:
            st = lib.cltrain_session_create(os.fsencode(model), ctypes.byref(self._s), err, len(err))
        if st != _capi.OK:
            self._s = None
            raise CltrainError(err.value.decode(errors="replace"), st)
        self._keep = []  # strings the settings point at
        if isinstance(backends, str):
            backends = [backends]
        self._update(batch_size=batch_size, backends=",".join(backends), device=device, cache_dir=cache_dir)
        self._shape = None
        self._resumed = None  # (epochs done, steps of the next, their loss sum) after resume()

    # ---- plumbing ----
    def _check(self, status):
        if status != _capi.OK:
            raise CltrainError(self._lib.cltrain_last_error(self._s).decode(errors="replace"), status)

    def _raw_settings(self):
        c = _capi.Settings()
        c.struct_size = ctypes.sizeof(c)
        self._check(self._lib.cltrain_get_settings(self._s, ctypes.byref(c)))
        return c

    def _update(self, **values):
        c = self._raw_settings()
        for k, v in values.items():
            if v is None:
                continue
            if isinstance(v, str):
                v = v.encode()
                self._keep.append(v)
            setattr(c, k, v)
        self._check(self._lib.cltrain_set_settings(self._s, ctypes.byref(c)))

    def _require_compiled(self):
        if self._shape is None:
            raise CltrainError("invalid call: compile() first", _capi.INVALID)

    # ---- settings and prepare ----
    @property
    def settings(self):
        """The training settings: the defaults, the model's CIRCLE_TRAINING, or what was set."""
        c = self._raw_settings()
        d = {name: getattr(c, name) for name, _ in c._fields_ if name != "struct_size"}
        for k in ("learning_rate", "beta1", "beta2", "epsilon"):  # float32, shown as float32 prints it
            d[k] = float(str(np.float32(d[k])))
        for k in ("backends", "cache_dir", "train_config"):
            d[k] = d[k].decode() if d[k] is not None else None
        d["optimizer"] = {v: k for k, v in _OPTIMIZERS.items()}.get(d["optimizer"], d["optimizer"])
        d["loss"] = {v: k for k, v in _LOSSES.items() if len(k) > 3}.get(d["loss"], d["loss"])
        d["loss_reduction"] = {1: "sum_over_batch_size", 2: "sum"}.get(d["loss_reduction"], d["loss_reduction"])
        return d

    def compile(self, optimizer=None, learning_rate=None, loss=None, reduction=None, beta_1=None, beta_2=None,
                epsilon=None, trainable_ops=None, train_config=None, epochs=None, add_missing_biases=None,
                memory_budget=None, storage=None, lora=None, on_nonfinite=None, checkpoint_every=None,
                checkpoint_dir=None, keep_checkpoints=None):
        """Sets what is given (the rest stays as the model or the defaults say) and prepares: builds
        the training graph, plans memory and builds kernels. Once per session.

        optimizer: "sgd" or "adam"; loss: "categorical_crossentropy", "mean_squared_error" or
        "categorical_crossentropy_from_logits" (the model outputs logits, as a PyTorch module trained
        with CrossEntropyLoss or a Keras model compiled with from_logits=True);
        reduction: "sum_over_batch_size" or "sum"; trainable_ops: -1 all, 0 none, N the last N
        operators; train_config: onert-micro's per-operator file; epochs: what a circle+ export records;
        add_missing_biases: a trained zero bias for each Dense/Conv layer the converter left without one;
        memory_budget: bytes the device memory pools may take (forward steps are recomputed during
        backward to fit; the results do not change), 0 or None: no limit;
        storage: "fp16" (activations and back-prop tensors stored as float16: about half their bytes,
        float32 arithmetic, weights and optimizer state) or "float32" (the default);
        lora: a rank, or (rank, alpha): LoRA adapters on the Dense (FullyConnected) layers the
        trainable choice covers, which alone train; exports merge them into the weights;
        on_nonfinite: what a step whose loss or gradients are not finite (a NaN in the batch) does;
        either way it is not applied (weights and optimizer state stay as they were): "stop" (the
        default) raises CltrainError, "skip" returns its loss and counts it in skipped_steps;
        checkpoint_every: a checkpoint every N steps into checkpoint_dir (atomic, with a checksum;
        the newest keep_checkpoints, 3, kept), from which resume(dir) goes on.
        """
        if self._shape is not None:
            raise CltrainError("invalid call: compile() was already called (once per session)", _capi.INVALID)
        self._update(
            optimizer=None if optimizer is None else _name(optimizer, _OPTIMIZERS, "optimizer"),
            learning_rate=learning_rate,
            loss=None if loss is None else _name(loss, _LOSSES, "loss"),
            loss_reduction=None if reduction is None else _name(reduction, _REDUCTIONS, "reduction"),
            beta1=beta_1, beta2=beta_2, epsilon=epsilon, num_trainable_ops=trainable_ops,
            train_config=None if train_config is None else os.fspath(train_config), epochs=epochs,
            add_missing_biases=None if add_missing_biases is None else int(bool(add_missing_biases)),
            memory_budget=None if memory_budget is None else int(memory_budget),
            storage=None if storage is None else _name(storage, _STORAGES, "storage"),
            on_nonfinite=None if on_nonfinite is None else _name(on_nonfinite, _NONFINITE, "on_nonfinite"),
            checkpoint_every=checkpoint_every, keep_checkpoints=keep_checkpoints,
            checkpoint_dir=None if checkpoint_dir is None else os.fspath(checkpoint_dir),
            **_lora_settings(lora))
        self._check(self._lib.cltrain_prepare(self._s))
        b, i, o = ctypes.c_int32(), ctypes.c_uint64(), ctypes.c_uint64()
        self._check(self._lib.cltrain_get_shape(self._s, ctypes.byref(b), ctypes.byref(i), ctypes.byref(o)))
        self._shape = (b.value, i.value, o.value)
        t = ctypes.c_int32()
        self._check(self._lib.cltrain_get_input_type(self._s, ctypes.byref(t)))
        self._ids = t.value == 1  # the model takes int32 token ids (a converted Keras Embedding)
        return self

    def resume(self, directory):
        """After compile: loads the newest periodic checkpoint of directory that loads (a torn or
        corrupted newer one is passed over, with a warning); its path, or None where there is none.
        The next fit() goes on where the checkpoint was: from the epochs it had done, mid-epoch at
        its next batch (the same batches as a run never stopped, with the same seed and data), the
        epoch's mean loss over all of its steps."""
        self._require_compiled()
        used = ctypes.create_string_buffer(4096)
        self._check(self._lib.cltrain_resume(self._s, os.fsencode(directory), used, len(used)))
        if not used.value:
            return None
        batches, loss_sum = ctypes.c_int64(), ctypes.c_double()
        self._check(self._lib.cltrain_get_progress(self._s, ctypes.byref(batches), ctypes.byref(loss_sum)))
        self._resumed = (self.position[1], batches.value, loss_sum.value)
        return used.value.decode()

    @property
    def skipped_steps(self):
        """Steps not applied because their loss or a gradient was not finite (on_nonfinite="skip")."""
        n = ctypes.c_int64()
        self._check(self._lib.cltrain_get_skipped_steps(self._s, ctypes.byref(n)))
        return n.value

    @property
    def rewrites(self):
        """What cltrain's rewrite passes changed in the model, one "pass: change" line each
        ("missing-biases: added 2 zero biases"): after loading, the passes that load the file's
        operators; after compile, also those of prepare and the training graph."""
        return self._lines(self._lib.cltrain_rewrite)

    @property
    def warnings(self):
        """What prepare left out (a backend that cannot run here, a cache directory not usable)."""
        return self._lines(self._lib.cltrain_warning)

    def _lines(self, call):
        """The strings call(session, 0), call(session, 1), ... up to the first NULL."""
        out = []
        while True:
            line = call(self._s, len(out))
            if line is None:
                return out
            out.append(line.decode())

    @property
    def batch_size(self):
        self._require_compiled()
        return self._shape[0]

    @property
    def input_size(self):
        self._require_compiled()
        return self._shape[1]

    @property
    def output_size(self):
        self._require_compiled()
        return self._shape[2]

    # ---- steps ----
    def _as_input(self, x):
        """x as the model's input type: float32, or int32 token ids (which must be integers)."""
        if not self._ids:
            return np.ascontiguousarray(x, dtype=np.float32)
        a = np.asarray(x)
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError("the model takes int32 token ids; x is %s" % a.dtype)
        return np.ascontiguousarray(a, dtype=np.int32)

    def _input_call(self, x):
        """(the array kept alive, the C call's pointer, its count, the set_input / predict pair)."""
        a = self._as_input(x)
        if self._ids:
            p = a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
            return a, p, a.size, self._lib.cltrain_set_input_int32, self._lib.cltrain_predict_int32
        p = a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        return a, p, a.size, self._lib.cltrain_set_input, self._lib.cltrain_predict

    def _set_batch(self, x, y):
        xs = self._input_call(x)
        _, px, nx, set_input, _ = xs
        _, py, ny = ys = _floats(y, "y")
        self._check(set_input(self._s, px, nx))
        self._check(self._lib.cltrain_set_expected(self._s, py, ny))
        return xs, ys

    def train_step(self, x, y, outputs=False):
        """One optimizer step on one batch (x: batch samples, y: their expected outputs); the loss.
        outputs=True: (loss, the model's outputs of the step)."""
        self._require_compiled()
        self._set_batch(x, y)
        loss = ctypes.c_float()
        if not outputs:
            self._check(self._lib.cltrain_train_step(self._s, ctypes.byref(loss)))
            return loss.value
        out = np.empty((self.batch_size, self.output_size), dtype=np.float32)
        po = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        self._check(self._lib.cltrain_train_step_outputs(self._s, ctypes.byref(loss), po, out.size))
        return loss.value, out

    def evaluate_batch(self, x, y):
        """The loss of one batch, and the model's outputs, without training."""
        self._require_compiled()
        self._set_batch(x, y)
        loss = ctypes.c_float()
        out = np.empty((self.batch_size, self.output_size), dtype=np.float32)
        po = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        self._check(self._lib.cltrain_evaluate(self._s, ctypes.byref(loss), po, out.size))
        return loss.value, out

    def predict(self, x):
        """The model's outputs for any number of samples (the last batch padded): (n, output_size)."""
        self._require_compiled()
        x = self._as_input(x).reshape(-1, self.input_size)
        b = self.batch_size
        n = x.shape[0]
        out = np.empty((n, self.output_size), dtype=np.float32)
        batch_out = np.empty((b, self.output_size), dtype=np.float32)
        po = batch_out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        for first in range(0, n, b):
            rows = x[first:first + b]
            if rows.shape[0] < b:
                rows = np.concatenate([rows, np.repeat(rows[-1:], b - rows.shape[0], axis=0)])
            _, px, nx, _, predict = self._input_call(rows)
            self._check(predict(self._s, px, nx, po, batch_out.size))
            out[first:first + b] = batch_out[:min(b, n - first)]
        return out

    def _one_hot(self, y, n):
        y = np.asarray(y)
        if y.ndim == 1 and np.issubdtype(y.dtype, np.integer):  # class labels
            if y.size and (y.min() < 0 or y.max() >= self.output_size):
                raise ValueError("labels must lie in [0, %d)" % self.output_size)
            hot = np.zeros((n, self.output_size), dtype=np.float32)
            hot[np.arange(n), y] = 1.0
            return hot
        return np.ascontiguousarray(y, dtype=np.float32).reshape(n, -1)

    def accuracy(self, x, y):
        """Categorical accuracy over all samples of x (y one-hot or class labels)."""
        n = np.asarray(x).shape[0]
        y = self._one_hot(y, n)
        return float(np.mean(np.argmax(self.predict(x), axis=1) == np.argmax(y, axis=1))) if n else 0.0

    def evaluate(self, x, y):
        """The mean loss over the whole batches of x, and the categorical accuracy over them."""
        self._require_compiled()
        x = self._as_input(x)
        n = x.shape[0]
        y = self._one_hot(y, n)
        b = self.batch_size
        steps = n // b
        if steps == 0:
            raise CltrainError("data error: %d samples, fewer than one batch of %d" % (n, b), _capi.ERROR)
        loss, correct = 0.0, 0
        for s in range(steps):
            l, out = self.evaluate_batch(x[s * b:(s + 1) * b], y[s * b:(s + 1) * b])
            loss += l
            correct += int(np.sum(np.argmax(out, axis=1) == np.argmax(y[s * b:(s + 1) * b], axis=1)))
        return loss / steps, correct / (steps * b)

    def fit(self, x, y, epochs=1, validation_split=0.0, shuffle=True, seed=1, verbose=1, initial_epoch=0,
            on_step=None):
        """Trains epochs initial_epoch+1 .. epochs over x (whole batches; the rest of each shuffled
        epoch is left out), Keras-style: the last validation_split of the samples (before any
        shuffling) is held out and evaluated after each epoch. y: one-hot or class labels.
        verbose: 0 silent, 1 a progress bar (on a terminal) and a line per epoch, 2 a line per
        epoch. on_step(epoch, step, loss), if given, is called after every step. After resume(),
        the first fit goes on from the checkpoint (initial_epoch: its epochs done; the epoch's
        batches before it are not trained again; the epoch's accuracy counts the steps this fit
        ran). Returns a History."""
        self._require_compiled()
        x = self._as_input(x)
        n = x.shape[0]
        x = x.reshape(n, -1)
        y = self._one_hot(y, n)
        if not 0.0 <= validation_split < 1.0:
            raise ValueError("validation_split must lie in [0, 1)")
        n_val = int(n * validation_split)
        xv, yv = x[n - n_val:], y[n - n_val:]
        x, y = x[:n - n_val], y[:n - n_val]
        b = self.batch_size
        steps = x.shape[0] // b
        if steps == 0:
            raise CltrainError("data error: %d training samples, fewer than one batch of %d" % (x.shape[0], b),
                               _capi.ERROR)
        history = History()
        bar = verbose == 1 and sys.stdout.isatty()
        resumed, self._resumed = self._resumed, None
        if resumed and initial_epoch == 0:
            initial_epoch = resumed[0]
        for epoch in range(initial_epoch + 1, epochs + 1):
            order = np.random.default_rng(seed * 1000003 + epoch).permutation(x.shape[0]) if shuffle \
                else np.arange(x.shape[0])
            t0 = time.monotonic()
            first, loss_sum = (min(resumed[1], steps), resumed[2]) if resumed and epoch == resumed[0] + 1 else (0, 0.0)
            correct, applied = 0, first
            for s in range(first, steps):
                idx = order[s * b:(s + 1) * b]
                skipped = self.skipped_steps
                loss, out = self.train_step(x[idx], y[idx], outputs=True)
                if self.skipped_steps != skipped:  # on_nonfinite="skip": not applied, not in the mean
                    continue
                applied += 1
                loss_sum += loss
                correct += int(np.sum(np.argmax(out, axis=1) == np.argmax(y[idx], axis=1)))
                if on_step is not None:
                    on_step(epoch, s, loss)
                if bar and (s % 20 == 0 or s + 1 == steps):
                    done = (s + 1) * 30 // steps
                    sys.stdout.write("\rEpoch %d/%d [%s%s] %d/%d - loss: %.4f" % (
                        epoch, epochs, "=" * done, "." * (30 - done), s + 1, steps, loss_sum / max(applied, 1)))
                    sys.stdout.flush()
            values = {"loss": loss_sum / max(applied, 1), "accuracy": correct / (max(applied - first, 1) * b)}
            if xv.shape[0] >= b:
                values["val_loss"], values["val_accuracy"] = self.evaluate(xv, yv)
            self._check(self._lib.cltrain_set_epochs_done(self._s, epoch))
            history._add(epoch, values)
            if verbose:
                line = "Epoch %d/%d - %.1fs - " % (epoch, epochs, time.monotonic() - t0)
                line += " - ".join("%s: %.4f" % kv for kv in values.items())
                sys.stdout.write(("\r\033[K" if bar else "") + line + "\n")
                sys.stdout.flush()
        return history

    @property
    def position(self):
        """(optimizer steps done, epochs done), as a checkpoint records them."""
        steps, epochs = ctypes.c_int64(), ctypes.c_int32()
        self._check(self._lib.cltrain_get_position(self._s, ctypes.byref(steps), ctypes.byref(epochs)))
        return steps.value, epochs.value

    def close(self):
        if self._s:
            self._lib.cltrain_session_destroy(self._s)
            self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
