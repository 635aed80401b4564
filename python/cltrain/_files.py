"""Session's weights, files (exports, checkpoints) and reports (memory, budget, placement):
the calls of cltrain.h on a session's weights and plan, kept apart from training (__init__.py)."""

import ctypes
import os

import numpy as np

from . import _capi

_ROLES = ("non_const", "trainable", "back_prop", "gradient", "optimizer", "disposable", "layer_scope")


def _floats(a, what):
    a = np.ascontiguousarray(a, dtype=np.float32)
    return a, a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), a.size


class _FilesAndReports:
    """Mixed into Session, which holds the library (_lib), the session (_s) and _check."""

    # ---- weights and files ----
    def get_weight(self, name):
        """A float32 constant (weight, bias) by tensor name, flat; trained values after compile."""
        n = ctypes.c_uint64()
        self._check(self._lib.cltrain_weight_elements(self._s, name.encode(), ctypes.byref(n)))
        out = np.empty(n.value, dtype=np.float32)
        self._check(self._lib.cltrain_get_weight(self._s, name.encode(),
                                                 out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), out.size))
        return out

    def set_weight(self, name, values):
        _, p, n = _floats(values, "values")
        self._check(self._lib.cltrain_set_weight(self._s, name.encode(), p, n))

    def trained_weight_names(self):
        """The tensor names of the weights training updates, in model order (those of the trainable
        operators only)."""
        self._require_compiled()
        n = ctypes.c_int32()
        self._check(self._lib.cltrain_num_trained_weights(self._s, ctypes.byref(n)))
        names = []
        for i in range(n.value):
            name = ctypes.c_char_p()
            self._check(self._lib.cltrain_trained_weight_name(self._s, i, ctypes.byref(name)))
            names.append(name.value.decode())
        return names

    def get_weights(self):
        """The trained weights as flat float32 arrays, in trained_weight_names() order (what a
        federated client sends)."""
        return [self.get_weight(n) for n in self.trained_weight_names()]

    def set_weights(self, arrays):
        """Writes arrays (in trained_weight_names() order, any shape of the right size) into the
        trained weights. All of them are checked first (count, a real number type, size, finite
        after the cast to float32): a refused list (a hostile or broken peer's) changes nothing and
        raises ValueError with one line."""
        names = self.trained_weight_names()
        try:
            arrays = list(arrays)
        except TypeError:
            raise ValueError("the weights are not a list of arrays (%s)" % type(arrays).__name__) from None
        if len(arrays) != len(names):
            raise ValueError("%d arrays given, the model trains %d weights" % (len(arrays), len(names)))
        checked = []
        for i, (n, a) in enumerate(zip(names, arrays)):
            a = np.asarray(a)
            if a.dtype.kind not in "fiu":
                raise ValueError("array %d (%s): dtype %s is not a real number type" % (i, n, a.dtype))
            count = ctypes.c_uint64()
            self._check(self._lib.cltrain_weight_elements(self._s, n.encode(), ctypes.byref(count)))
            if a.size != count.value:
                raise ValueError("array %d (%s): %d values (shape %s), the weight has %d" %
                                 (i, n, a.size, tuple(a.shape), count.value))
            with np.errstate(over="ignore", invalid="ignore"):
                f = np.ascontiguousarray(a, dtype=np.float32).ravel()
            bad = np.flatnonzero(~np.isfinite(f))
            if bad.size:
                raise ValueError("array %d (%s): %d values are NaN or Inf as float32, the first at element %d" %
                                 (i, n, bad.size, bad[0]))
            checked.append(f)
        for n, f in zip(names, checked):
            self.set_weight(n, f)

    def reset_optimizer(self):
        """The optimizer starts afresh, as in a new session (Adam's moments zero, position 0)."""
        self._require_compiled()
        self._check(self._lib.cltrain_reset_optimizer(self._s))

    def export_circle(self, path):
        """The model with its trained weights, written atomically."""
        self._check(self._lib.cltrain_export_circle(self._s, os.fsencode(path)))

    def export_circleplus(self, path):
        """The same with the training settings as CIRCLE_TRAINING metadata."""
        self._check(self._lib.cltrain_export_circleplus(self._s, os.fsencode(path)))

    def save_checkpoint(self, path):
        """Weights, Adam state and position in onert's checkpoint format."""
        self._check(self._lib.cltrain_export_checkpoint(self._s, os.fsencode(path)))

    def load_checkpoint(self, path):
        self._check(self._lib.cltrain_import_checkpoint(self._s, os.fsencode(path)))

    def export_lora(self, path):
        """LoRA's adapters alone (compile(lora=...)), as safetensors: "<weight>.lora_A.weight" and
        "<weight>.lora_B.weight" per adapted FullyConnected weight (safetensors.numpy.load_file
        reads it); a few hundred KB where the model is MBs. Atomic."""
        self._require_compiled()
        self._check(self._lib.cltrain_export_lora(self._s, os.fsencode(path)))

    def load_lora(self, path):
        """After compile(lora=...) of the same model and rank: the adapters of path (as export_lora
        writes, or safetensors of the same names and shapes). Checked whole before any is set."""
        self._require_compiled()
        self._check(self._lib.cltrain_import_lora(self._s, os.fsencode(path)))

    def export_files(self, model=None, circleplus=None, checkpoint=None):
        """The given files together: all are made and written to temporary names before any is
        renamed (the checkpoint last), so a failure or a kill before then leaves the old files."""
        enc = lambda p: None if p is None else os.fsencode(p)
        self._check(self._lib.cltrain_export_files(self._s, enc(model), enc(circleplus), enc(checkpoint)))

    # ---- the memory report and placement ----
    def memory_budget(self):
        """What compile(memory_budget=) did: budget, unbudgeted_pool (bytes), recomputed_steps,
        extra_flops (per step); all 0 without a budget."""
        self._require_compiled()
        info = _capi.BudgetInfo()
        info.struct_size = ctypes.sizeof(info)
        self._check(self._lib.cltrain_get_budget(self._s, ctypes.byref(info)))
        return {"budget": info.budget, "unbudgeted_pool": info.unbudgeted_pool,
                "recomputed_steps": info.recomputed_steps, "extra_flops": info.extra_flops}

    def memory(self):
        """Per backend that runs steps: name, device, peak bytes per role, pool and lower bound."""
        self._require_compiled()
        n = ctypes.c_int32()
        self._check(self._lib.cltrain_num_backends(self._s, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            info = _capi.BackendInfo()
            info.struct_size = ctypes.sizeof(info)
            self._check(self._lib.cltrain_get_backend(self._s, i, ctypes.byref(info)))
            out.append({"backend": info.name.decode(), "device": info.device.decode(),
                        "roles": dict(zip(_ROLES, list(info.role_peak))), "pool_bytes": info.pool_bytes,
                        "lower_bound": info.lower_bound})
        return out

    def placement(self):
        """The backend each model operator runs on."""
        self._require_compiled()
        n = ctypes.c_int32()
        self._check(self._lib.cltrain_num_operators(self._s, ctypes.byref(n)))
        out = []
        for op in range(n.value):
            name = ctypes.c_char_p()
            self._check(self._lib.cltrain_operator_backend(self._s, op, ctypes.byref(name)))
            out.append(name.value.decode())
        return out
