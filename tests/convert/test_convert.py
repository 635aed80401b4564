"""cltrain.convert: a Keras model and a PyTorch module, written as users write them (random init,
default options), converted in one call and trained 5 SGD steps from the framework's own weights
on the framework's batches: the losses are the framework's. The lines say what the conversion
changed (BatchNormalization folded, Dropout left out, recurrent layers unrolled).

Runs where TensorFlow or litert-torch is installed (.ci/convert makes the venvs); a framework that
is missing skips its tests unless CLTRAIN_CONVERT_REQUIRE names it (CI sets "keras,torch"), so
that CI cannot pass by skipping."""

import os

import numpy as np
import pytest

import cltrain
import cltrain.convert

REQUIRED = os.environ.get("CLTRAIN_CONVERT_REQUIRE", "").split(",")
CACHE = os.environ.get("CLTRAIN_TEST_CACHE_DIR", "")
BACKENDS = ["opencl", "cpu"]


def framework(name, module):
    if name in REQUIRED:
        return __import__(module)
    return pytest.importorskip(module)


def batches(shape, classes, steps=5, seed=0):
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((steps,) + shape).astype(np.float32)
    ys = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, (steps, shape[0]))]
    return xs, ys


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_keras_cnn_trains_as_keras(tmp_path, backend, capsys):
    framework("keras", "tensorflow")
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((12, 12, 3)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(5, activation="softmax"),
    ])
    xs, ys = batches((4, 12, 12, 3), 5)
    s = cltrain.convert.from_keras(model, tmp_path / "cnn.tflite", batch_size=4, backends=[backend],
                                   cache_dir=CACHE)
    out = capsys.readouterr().out
    assert "1 Dropout not in the file" in out and "zero" in out  # Keras's zero-initialised biases
    assert s.conversion and all(line in out.splitlines() for line in s.conversion)
    s.compile(optimizer="sgd", learning_rate=0.01, loss="categorical_crossentropy")
    ours = [s.train_step(x, y) for x, y in zip(xs, ys)]
    # Keras trains the same model without its Dropout (what the file holds): the layer's rate to 0.
    model.layers[4].rate = 0.0
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="categorical_crossentropy")
    theirs = [float(model.train_on_batch(x, y)) for x, y in zip(xs, ys)]
    print("keras cnn on %s: 5 SGD steps, largest relative loss difference %.2e" % (backend, relative(ours, theirs)))
    assert relative(ours, theirs) < 1e-5, (ours, theirs)


def test_keras_recurrent_layers_are_unrolled_and_normalisation_named(tmp_path, capsys):
    framework("keras", "tensorflow")
    import keras

    keras.utils.set_random_seed(2)
    inputs = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(50, 8)(inputs)
    x = keras.layers.LSTM(8, return_sequences=True)(x)
    x = keras.layers.GRU(8)(x)
    x = keras.layers.BatchNormalization()(x)
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(x))
    s = cltrain.convert.from_keras(model, tmp_path / "rnn.tflite", batch_size=4, backends=["cpu"], cache_dir=CACHE)
    out = capsys.readouterr().out
    assert "2 recurrent layers unrolled" in out and "1 BatchNormalization folded" in out
    assert not model.layers[2].get_config()["unroll"]  # the user's model is left as it was
    assert any(line.startswith("cltrain: packs: loaded 1 PACK") for line in s.conversion)  # return_sequences
    s.compile(optimizer="sgd", learning_rate=0.01)
    ids = np.random.default_rng(0).integers(0, 50, (4, 6))
    loss, probs = s.evaluate_batch(ids, np.eye(3, dtype=np.float32)[[0, 1, 2, 0]])
    np.testing.assert_allclose(probs, model.predict(ids, verbose=0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "SimpleRNN", "LSTM_go_backwards", "GRU_reset_before",
                                   "Bidirectional_LSTM", "stacked_LSTM"])
def test_keras_default_recurrent_layers_train_as_keras(tmp_path, layer, capsys):
    """Embedding -> {LSTM, GRU, SimpleRNN}(16), default options (Keras would write a WHILE loop;
    from_keras unrolls) -> Dense: 5 SGD steps on OpenCL with Keras's losses. Their zero biases
    (dropped by the converter) train as Keras's one bias per layer (missing-biases pass); a GRU with
    reset_after=False (its x_t W split into three gates, h U in parts) has one, on the x_t W side; the
    two LSTMs of a Bidirectional or a stack, whose equal initial biases the converter keeps once,
    train one each (untie-constants)."""
    framework("keras", "tensorflow")
    import keras

    keras.utils.set_random_seed(4)
    inputs = keras.Input((8,), dtype="int32")
    kind, _, option = layer.partition("_")
    kw = {"go_backwards": True} if option == "go_backwards" else {"reset_after": False} if option == "reset_before" \
        else {}
    x = keras.layers.Embedding(60, 8)(inputs)
    if kind == "Bidirectional":  # two LSTMs, each starting at unit_forget_bias's equal biases
        h = keras.layers.Bidirectional(keras.layers.LSTM(8))(x)
    elif kind == "stacked":
        h = keras.layers.LSTM(16)(keras.layers.LSTM(16, return_sequences=True)(x))
    else:
        h = getattr(keras.layers, kind)(16, **kw)(x)
    model = keras.Model(inputs, keras.layers.Dense(5, activation="softmax")(h))
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 60, (5, 4, 8))
    ys = np.eye(5, dtype=np.float32)[rng.integers(0, 5, (5, 4))]
    s = cltrain.convert.from_keras(model, tmp_path / "rnn.tflite", batch_size=4, backends=["opencl"], cache_dir=CACHE)
    unrolled = {"stacked": "2 recurrent layers", "Bidirectional": "2 recurrent layers"}.get(kind, "1 recurrent layer")
    assert unrolled + " unrolled" in capsys.readouterr().out
    s.compile(optimizer="sgd", learning_rate=0.05, loss="categorical_crossentropy")
    ours = [s.train_step(x, y) for x, y in zip(ids, ys)]
    assert set(s.placement()) == {"opencl"}
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="categorical_crossentropy")
    theirs = [float(model.train_on_batch(x, y)) for x, y in zip(ids, ys)]
    print("keras %s: 5 SGD steps, largest relative loss difference %.2e" % (layer, relative(ours, theirs)))
    assert relative(ours, theirs) < 1e-5, (ours, theirs)


def test_recurrent_layers_inside_a_nested_sequential_are_unrolled_too(tmp_path, capsys):
    framework("keras", "tensorflow")
    import keras

    keras.utils.set_random_seed(6)
    inner = keras.Sequential([keras.layers.LSTM(8, return_sequences=True), keras.layers.GRU(8)])
    inputs = keras.Input((6,), dtype="int32")
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(inner(keras.layers.Embedding(30, 4)(inputs))))
    s = cltrain.convert.from_keras(model, tmp_path / "nested.tflite", batch_size=4, backends=["cpu"], cache_dir=CACHE)
    assert "2 recurrent layers unrolled" in capsys.readouterr().out
    s.compile(optimizer="sgd")
    ids = np.random.default_rng(2).integers(0, 30, (4, 6))
    _, probs = s.evaluate_batch(ids, np.eye(3, dtype=np.float32)[[0, 1, 2, 0]])
    np.testing.assert_allclose(probs, model.predict(ids, verbose=0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pytorch_cnn_trains_as_pytorch(tmp_path, backend, capsys):
    framework("torch", "litert_torch")
    import torch
    import torch.nn as nn

    torch.manual_seed(1)
    module = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                           nn.Flatten(), nn.Dropout(0.25), nn.Linear(8 * 5 * 5, 5))
    module.train()
    xs, ys = batches((4, 3, 12, 12), 5)
    s = cltrain.convert.from_torch(module, (torch.from_numpy(xs[0]),), tmp_path / "cnn.tflite", backends=[backend],
                                   cache_dir=CACHE)
    out = capsys.readouterr().out
    assert "1 Dropout not in the file" in out
    assert module.training  # its mode restored
    s.compile(optimizer="sgd", learning_rate=0.01)  # loss: from logits, preset by from_torch
    ours = [s.train_step(x, y) for x, y in zip(xs, ys)]
    module.eval()  # what the file holds: no dropout
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    theirs = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y.argmax(1)))
        loss.backward()
        opt.step()
        theirs.append(float(loss))
    print("pytorch cnn on %s: 5 SGD steps, largest relative loss difference %.2e" % (backend, relative(ours, theirs)))
    assert relative(ours, theirs) < 1e-5, (ours, theirs)


def test_pytorch_normalisation_is_named(tmp_path, capsys):
    framework("torch", "litert_torch")
    import torch
    import torch.nn as nn

    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    s = cltrain.convert.from_torch(module, torch.zeros(2, 3, 8, 8), tmp_path / "bn.tflite", backends=["cpu"],
                                   cache_dir=CACHE)
    out = capsys.readouterr().out
    assert "1 BatchNorm2d folded" in out and s.settings["add_missing_biases"] == 1
    assert s.settings["loss"] == "categorical_crossentropy_from_logits"


def test_neg_a_missing_framework_or_a_refused_model_is_one_line(tmp_path):
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"pip install 'cltrain\[keras\]'"):
            cltrain.convert.from_keras(object(), tmp_path / "x.tflite")
        return
    import keras

    class Opaque(keras.layers.Layer):  # a Python side effect the converter cannot trace
        def call(self, x):
            return keras.ops.convert_to_numpy(x)

    model = keras.Sequential([keras.Input((3,)), Opaque()])
    with pytest.raises((cltrain.CltrainError, Exception)) as e:
        cltrain.convert.from_keras(model, tmp_path / "x.tflite", quiet=True)
    assert "\n" not in str(e.value).strip()
    assert not (tmp_path / "x.tflite").exists()
