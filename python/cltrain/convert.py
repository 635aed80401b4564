"""Models straight from Keras and PyTorch: convert with the options that give the most trainable
graph, say what the conversion changed, and return a Session on the file.

    import cltrain.convert
    s = cltrain.convert.from_keras(model, "model.tflite")               # TensorFlow's converter
    s = cltrain.convert.from_torch(module, (example_batch,), "m.tflite")  # litert-torch
    s.compile(optimizer="adam", learning_rate=1e-3)
    s.fit(x, y, epochs=5)

TensorFlow (`pip install 'cltrain[keras]'`: tensorflow-cpu) and litert-torch (`cltrain[torch]`)
are imported only when called. What a converter writes is not always what the framework trains
(docs/converting-models.md): each function prints one line per change it knows of (folded
normalisation, layers an inference graph leaves out, loops unrolled, zero biases the converter
drops) and cltrain's own rewrites of the file; `session.conversion` keeps the lines. Zero biases
are trained as the framework trains them (compile(add_missing_biases=True) is preset).
"""

import contextlib
import io
import os
import tempfile

from . import CltrainError, Session


def _write(path, data):
    """The file atomically (a temporary file renamed), as every file cltrain writes."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".convert-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _count(kinds):
    """{"BatchNormalization": 3, ...} as "3 BatchNormalization, 1 Dropout"."""
    return ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items()))


def _lines(folded, folded_params, dropped, zero_bias, graph):
    """The lines both converters share: normalisation folded, layers an inference graph leaves
    out, zero biases the converter drops."""
    lines = []
    if folded:
        lines.append("converted: %s folded into the preceding layer's weights and bias: their %s do not train"
                     % (_count(folded), folded_params))
    if dropped:
        lines.append("converted: %s not in the file (%s): training runs without them" % (_count(dropped), graph))
    if zero_bias:
        lines.append("converted: %d layers' biases are all zero, which the converter drops: trained as zero biases "
                     "(add_missing_biases)" % zero_bias)
    return lines


def _session(path, lines, batch_size, quiet, session_args, **presets):
    s = Session(path, batch_size=batch_size, **session_args)
    s._update(add_missing_biases=1, **presets)
    lines = lines + ["cltrain: " + r for r in s.rewrites]
    s.conversion = lines
    if not quiet:
        for line in lines:
            print(line)
    return s


# ---- Keras ----

_KERAS_RNN = ("LSTM", "GRU", "SimpleRNN", "RNN")
_KERAS_NOT_IN_FILE = ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
                      "GaussianDropout", "AlphaDropout", "ActivityRegularization")


def _keras_layers(model):
    """Every layer, nested models' and wrappers' (Bidirectional's, TimeDistributed's) included."""
    out = []
    for layer in getattr(model, "layers", []):
        out.append(layer)
        out.extend(_keras_layers(layer))
        for attr in ("forward_layer", "backward_layer", "layer"):
            inner = getattr(layer, attr, None)
            if inner is not None and inner is not layer and hasattr(inner, "get_config"):
                out.append(inner)
    return out


def _keras_unrolled(model):
    """The model with unroll=True in every recurrent layer (Keras 3 writes a rolled one as a WHILE
    loop with subgraphs, which cltrain does not load yet), the same weights; None if it has none."""
    import keras

    def unrolled_config(config):
        config = dict(config)
        if "unroll" in config:
            config["unroll"] = True
        for key in ("layer", "backward_layer"):  # Bidirectional's
            if isinstance(config.get(key), dict) and isinstance(config[key].get("config"), dict):
                config[key] = dict(config[key], config=unrolled_config(config[key]["config"]))
        if isinstance(config.get("layers"), list):  # a nested Sequential's or Model's
            config["layers"] = [dict(l, config=unrolled_config(l["config"]))
                                if isinstance(l, dict) and isinstance(l.get("config"), dict) else l
                                for l in config["layers"]]
        return config

    def clone(layer):
        return layer.__class__.from_config(unrolled_config(layer.get_config()))

    rolled = [l for l in _keras_layers(model) if type(l).__name__ in _KERAS_RNN and not l.get_config().get("unroll")]
    if not rolled:
        return None, 0
    copy = keras.models.clone_model(model, clone_function=clone)
    copy.set_weights(model.get_weights())
    return copy, len(rolled)


def _keras_changes(model):
    import numpy as np

    folded, dropped, zero_bias = {}, {}, 0
    for layer in _keras_layers(model):
        kind = type(layer).__name__
        if kind == "BatchNormalization":
            folded[kind] = folded.get(kind, 0) + 1
        elif kind in _KERAS_NOT_IN_FILE:
            dropped[kind] = dropped.get(kind, 0) + 1
        bias = getattr(layer, "bias", None)
        if bias is not None and getattr(layer, "use_bias", False) and not np.any(np.asarray(bias)):
            zero_bias += 1
    return _lines(folded, "gamma, beta and statistics", dropped, zero_bias, "an inference graph")


def from_keras(model, path, batch_size=None, quiet=False, **session_args):
    """Converts a Keras model with TensorFlow's converter (default options; recurrent layers
    unrolled, the same weights) into path (.tflite), prints what changed, returns a Session on it.

    The file keeps the converter's dynamic batch, so it trains at any batch size; batch_size is the
    Session's (None: 32, as Keras's fit). session_args go to Session (backends, device, cache_dir)."""
    try:
        import tensorflow as tf
    except ImportError as e:
        raise ImportError("cltrain.convert.from_keras needs TensorFlow (pip install 'cltrain[keras]'): %s" % e) from None
    lines = _keras_changes(model)
    unrolled, n = _keras_unrolled(model)
    if unrolled is not None:
        lines.append("converted: %d recurrent layer%s unrolled (unroll=True, the same weights): Keras writes a "
                     "rolled one as a WHILE loop" % (n, "" if n == 1 else "s"))
        model = unrolled
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # Keras's export lists its endpoints there
            data = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    except Exception as e:  # the converter's own error, first line
        raise CltrainError("TensorFlow's converter refused the model: %s" % str(e).strip().splitlines()[0], 1) from None
    _write(path, bytes(data))
    return _session(path, lines, 32 if batch_size is None else batch_size, quiet, session_args)


# ---- PyTorch ----

def _torch_changes(module):
    import torch.nn as nn

    folded, dropped, zero_bias, layer_norms, rnns = {}, {}, 0, 0, {}
    for m in module.modules():
        kind = type(m).__name__
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            folded[kind] = folded.get(kind, 0) + 1
        elif isinstance(m, nn.modules.dropout._DropoutNd):
            dropped[kind] = dropped.get(kind, 0) + 1
        elif isinstance(m, nn.LayerNorm) and m.elementwise_affine:
            layer_norms += 1
        elif isinstance(m, nn.RNNBase):
            rnns[kind] = rnns.get(kind, 0) + 1
        for name, p in m.named_parameters(recurse=False):
            if "bias" in name and p is not None and not bool(p.detach().any()):
                zero_bias += 1
    lines = _lines(folded, "weight, bias and running statistics", dropped, 0, "the eval graph")
    if layer_norms:
        lines.append("converted: litert-torch may fold the gamma and beta of %d LayerNorm into the next Linear, "
                     "where a residual branch keeps its own copy: training then parts from PyTorch's "
                     "(docs/converting-models.md)" % layer_norms)
    if rnns:
        lines.append("converted: %s unrolled over the example's sequence length" % _count(rnns))
    if zero_bias:
        lines.append("converted: %d biases are all zero, which the converter drops: trained as zero biases "
                     "(add_missing_biases)" % zero_bias)
    return lines


def from_torch(module, example_inputs, path, quiet=False, loss="categorical_crossentropy_from_logits",
               **session_args):
    """Converts a PyTorch module with litert-torch (default options; the module in eval mode for
    the conversion, its mode restored after) into path (.tflite), prints what changed, returns a
    Session on it at the example's batch size.

    loss: preset for compile (a module's output is usually logits, as nn.CrossEntropyLoss takes
    them; "mse" for a regression); session_args go to Session (backends, device, cache_dir)."""
    try:
        import litert_torch
    except ImportError as e:
        raise ImportError("cltrain.convert.from_torch needs litert-torch (pip install 'cltrain[torch]'): %s" % e) \
            from None
    from . import _LOSSES, _name

    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    lines = _torch_changes(module)
    training = module.training
    module.eval()
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(os.fspath(path))), prefix=".convert-",
                                   suffix=".tflite")
        os.close(fd)
        try:
            litert_torch.convert(module, example_inputs).export(tmp)
            with open(tmp, "rb") as f:
                data = f.read()
        except Exception as e:
            raise CltrainError("litert-torch refused the module: %s" % str(e).strip().splitlines()[0], 1) from None
        finally:
            os.unlink(tmp)
    finally:
        module.train(training)
    _write(path, data)
    batch = int(example_inputs[0].shape[0]) if len(example_inputs[0].shape) else None
    return _session(path, lines, batch, quiet, session_args, loss=_name(loss, _LOSSES, "loss"))
