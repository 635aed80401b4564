"""import cltrain: the Python module over libcltrain's C API.

Run by ctest (label python) with CLTRAIN_CLI set to the CLI and PYTHONPATH to build/python, and
by .ci/wheel against the package `pip install` put in a clean venv (the CLI the package holds).
"""

import gzip
import os
import subprocess

import numpy as np
import pytest

import cltrain

CLI = os.environ.get("CLTRAIN_CLI") or cltrain.cli_path()
CACHE = os.environ.get("CLTRAIN_TEST_CACHE_DIR", "")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")

    def make(name, batch):
        path = d / ("%s_%d.circle" % (name, batch))
        if not path.exists():
            subprocess.run([CLI, "make-model", name, "-o", str(path), "--batch_size", str(batch)], check=True,
                           capture_output=True)
        return str(path)

    return make


def data(samples, inputs, classes, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((samples, inputs), dtype=np.float32)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, samples)]
    return x, y


def session(model, backend, batch, **compile_args):
    s = cltrain.Session(model, backends=[backend], batch_size=batch, cache_dir=CACHE)
    args = dict(optimizer="adam", learning_rate=0.001, loss="categorical_crossentropy")
    args.update(compile_args)
    return s.compile(**args)


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_losses_equal_the_clis_bitwise(models, tmp_path, backend):
    """mnist-kaggle, 20 Adam steps at batch 8: Python's train_step losses are the CLI's (which
    trains the same batches in order with --no-shuffle and logs each step), bit for bit."""
    steps, batch = 20, 8
    model = models("mnist-kaggle", batch)
    x, y = data(steps * batch, 784, 10, 11)
    s = session(model, backend, batch)
    assert s.memory()[0]["backend"] == backend
    ours = np.array([s.train_step(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch])
                     for i in range(steps)], dtype=np.float32)

    x.tofile(tmp_path / "x.raw")
    y.tofile(tmp_path / "y.raw")
    log = tmp_path / "steps.txt"
    subprocess.run([CLI, model, "--batch_size", "8", "--epoch", "1", "--optimizer", "2", "--learning_rate", "0.001",
                    "--loss", "2", "--no-shuffle", "--no-progress", "--backends", backend, "--cache-dir", CACHE,
                    "--load_input:raw", str(tmp_path / "x.raw"), "--load_expected:raw", str(tmp_path / "y.raw")],
                   check=True, capture_output=True, env=dict(os.environ, CLTRAIN_STEP_LOG=str(log)))
    cli = np.array([float(line.split()[2]) for line in log.read_text().splitlines()], dtype=np.float32)
    assert cli.shape == (steps,)
    assert ours.view(np.uint32).tolist() == cli.view(np.uint32).tolist()


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_memory_budget_recomputes_with_the_same_losses(models, backend):
    """mnist-kaggle at batch 8 within 98% of its unbudgeted pool (fc's gradient, held until the
    step's check, takes much of the peak): the pool fits, the losses are bit
    for bit those without a budget; a budget below the least is one line naming the least."""
    model = models("mnist-kaggle", 8)
    x, y = data(24, 784, 10, 3)
    free = session(model, backend, 8)
    budget = free.memory()[0]["pool_bytes"] * 98 // 100
    tight = session(model, backend, 8, memory_budget=budget)
    assert sum(m["pool_bytes"] for m in tight.memory()) <= budget
    info = tight.memory_budget()
    assert info["budget"] == budget and info["recomputed_steps"] > 0 and info["extra_flops"] > 0
    assert free.memory_budget() == {"budget": 0, "unbudgeted_pool": 0, "recomputed_steps": 0, "extra_flops": 0}
    a = [free.train_step(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)]
    b = [tight.train_step(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)]
    assert np.array(a, np.float32).view(np.uint32).tolist() == np.array(b, np.float32).view(np.uint32).tolist()
    with pytest.raises(cltrain.CltrainError, match="1000 bytes is below the least this model trains in") as e:
        session(model, backend, 8, memory_budget=1000)
    assert e.value.status == cltrain._capi.OUT_OF_MEMORY


def test_fp16_storage_is_bitwise_the_cpu_and_smaller(models):
    """compile(storage="fp16"): the OpenCL and the CPU backend compute the same losses bit for bit
    (both round every float16 tensor once per element), close to float32's, in a smaller pool (at
    batch 8 one image's float32 dcol of conv2's dx sets the peak, so by less than half)."""
    model = models("mnist-kaggle", 8)
    x, y = data(24, 784, 10, 3)
    runs = {}
    for backend, storage in (("opencl", "fp16"), ("cpu", "fp16"), ("opencl", "float32")):
        s = session(model, backend, 8, storage=storage)
        losses = [s.train_step(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)]
        runs[backend, storage] = (s.memory()[0]["pool_bytes"], losses)
    def bits(v):
        return np.array(v, np.float32).view(np.uint32).tolist()
    assert bits(runs["opencl", "fp16"][1]) == bits(runs["cpu", "fp16"][1])
    assert np.allclose(runs["opencl", "fp16"][1], runs["opencl", "float32"][1], rtol=0.02)
    assert runs["opencl", "fp16"][0] < runs["opencl", "float32"][0]
    with pytest.raises(ValueError, match="storage 'bf16' is not one of"):
        session(model, "cpu", 8, storage="bf16")


def test_fit_learns_and_keeps_a_history(models):
    rng = np.random.default_rng(3)
    # Two separable classes: the mlp must get them right after a few epochs.
    labels = rng.integers(0, 2, 512)
    x = rng.random((512, 784), dtype=np.float32) * 0.1
    x[labels == 1, :392] += 0.5
    s = session(models("mlp", 16), "cpu", 16)
    h = s.fit(x, labels, epochs=3, validation_split=0.25, verbose=0)
    assert h.epoch == [1, 2, 3]
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert h.history["loss"][2] < h.history["loss"][0]
    assert h.history["val_accuracy"][-1] > 0.95
    assert s.accuracy(x, labels) > 0.95
    assert s.position == (3 * (384 // 16), 3)


def test_weights_in_training_order_and_a_fresh_optimizer(models):
    """get_weights/set_weights carry the trained weights in trained_weight_names() order; after
    reset_optimizer a session trains as a new one from the same weights (what a federated client's
    round does), bit for bit; on_step sees every step."""
    model = models("mlp", 4)
    x, y = data(24, 784, 10, 5)
    a = session(model, "cpu", 4)
    names = a.trained_weight_names()
    assert len(names) == 4 and names[0] == "fc1/weights"
    seen = []
    a.fit(x[:12], y[:12], epochs=1, verbose=0, on_step=lambda e, s, l: seen.append((e, s)))
    assert seen == [(1, 0), (1, 1), (1, 2)]
    a.reset_optimizer()
    assert a.position == (0, 0)
    b = session(model, "cpu", 4)
    b.set_weights(a.get_weights())
    la = [a.train_step(x[i:i + 4], y[i:i + 4]) for i in range(12, 24, 4)]
    lb = [b.train_step(x[i:i + 4], y[i:i + 4]) for i in range(12, 24, 4)]
    assert np.array(la, np.float32).view(np.uint32).tolist() == np.array(lb, np.float32).view(np.uint32).tolist()
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa.view(np.uint32), wb.view(np.uint32))
    with pytest.raises(ValueError):
        b.set_weights(a.get_weights()[:3])
    assert session(model, "cpu", 4, trainable_ops=2).trained_weight_names() == names[2:]


def test_predict_any_number_of_samples(models):
    s = session(models("mlp", 4), "cpu", 4)
    x, _ = data(10, 784, 10, 1)
    out = s.predict(x)
    assert out.shape == (10, 10)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(s.predict(x[:4]), out[:4])  # padding leaves the real rows alone


def test_checkpoint_and_export_round_trip(models, tmp_path):
    model = models("mlp", 4)
    x, y = data(16, 784, 10, 2)
    a = session(model, "cpu", 4)
    for i in range(3):
        a.train_step(x[i * 4:(i + 1) * 4], y[i * 4:(i + 1) * 4])
    a.save_checkpoint(tmp_path / "a.ckpt")
    a.export_circle(tmp_path / "a.circle")
    b = session(model, "cpu", 4)
    b.load_checkpoint(tmp_path / "a.ckpt")
    assert b.position[0] == 3
    exported = cltrain.Session(tmp_path / "a.circle").get_weight("fc1/weights")
    np.testing.assert_array_equal(exported, b.get_weight("fc1/weights"))
    assert not np.array_equal(exported, cltrain.Session(model).get_weight("fc1/weights"))
    assert a.train_step(x[12:], y[12:]) == b.train_step(x[12:], y[12:])


def test_export_files_writes_the_pair_and_refuses_nan(models, tmp_path):
    model = models("mlp", 4)
    x, y = data(4, 784, 10, 3)
    s = session(model, "cpu", 4)
    s.train_step(x, y)
    s.export_files(model=tmp_path / "m.circle", checkpoint=tmp_path / "m.ckpt")
    b = session(model, "cpu", 4)
    b.load_checkpoint(tmp_path / "m.ckpt")
    np.testing.assert_array_equal(cltrain.Session(tmp_path / "m.circle").get_weight("fc1/weights"),
                                  b.get_weight("fc1/weights"))
    before = (tmp_path / "m.circle").read_bytes()
    x[0, 5] = np.nan
    with pytest.raises(cltrain.CltrainError, match="loss became NaN.*not applied"):
        s.train_step(x, y)
    # The step was not applied: the weights export as they were.
    s.export_files(model=tmp_path / "m.circle")
    assert (tmp_path / "m.circle").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.circle", "m.ckpt"]
    with pytest.raises(cltrain.CltrainError, match="hold NaN"):
        b.set_weight("fc1/weights", np.full(b.get_weight("fc1/weights").shape, np.nan, dtype=np.float32))


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_a_nan_batch_is_skipped_and_counted(models, tmp_path, backend):
    """on_nonfinite="skip": a batch with a NaN sample is not applied (weights and Adam's state as
    before, bitwise), counted in skipped_steps, left out of fit's loss; the next batches train as
    in a run that never saw it."""
    model = models("mlp", 4)
    x, y = data(12, 784, 10, 5)
    a = session(model, backend, 4, on_nonfinite="skip")
    clean = session(model, backend, 4)
    a.train_step(x[:4], y[:4])
    clean.train_step(x[:4], y[:4])
    a.save_checkpoint(tmp_path / "before.ckpt")
    bad = x[4:8].copy()
    bad[2, 100] = np.nan
    assert np.isnan(a.train_step(bad, y[4:8]))
    assert a.skipped_steps == 1
    a.save_checkpoint(tmp_path / "after.ckpt")
    assert (tmp_path / "after.ckpt").read_bytes() == (tmp_path / "before.ckpt").read_bytes()
    assert a.train_step(x[8:], y[8:]) == clean.train_step(x[8:], y[8:])
    xs = np.concatenate([x[:4], bad, x[8:]])
    h = session(model, backend, 4, on_nonfinite="skip").fit(xs, y, epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(h.history["loss"][0])


def test_settings_from_a_circleplus_model(models, tmp_path):
    s = session(models("mlp", 4), "cpu", 4, optimizer="sgd", learning_rate=0.0125, loss="mse", epochs=7)
    s.export_circleplus(tmp_path / "p.circle")
    got = cltrain.Session(tmp_path / "p.circle").settings
    assert (got["optimizer"], got["learning_rate"], got["loss"], got["epochs"], got["batch_size"]) == \
        ("sgd", 0.0125, "mean_squared_error", 7, 4)


def test_model_from_bytes(models):
    with open(models("mlp", 4), "rb") as f:
        s = cltrain.Session(f.read(), backends=["cpu"])
    s.compile()
    assert s.batch_size == 4


def test_neg_errors_raise_with_the_one_line(models, tmp_path):
    with pytest.raises(cltrain.CltrainError, match="model error: .*nothing.circle") as e:
        cltrain.Session(tmp_path / "nothing.circle")
    assert e.value.status == 1
    with pytest.raises(cltrain.CltrainError, match="model error"):
        cltrain.Session(b"\0" * 64)
    s = cltrain.Session(models("mlp", 4), backends=["cpu"])
    with pytest.raises(cltrain.CltrainError, match="compile"):
        s.train_step(np.zeros((4, 784)), np.zeros((4, 10)))
    s.compile()
    with pytest.raises(cltrain.CltrainError, match="3136") as e:
        s.train_step(np.zeros((3, 784)), np.zeros((4, 10)))
    assert e.value.status == 4
    with pytest.raises(cltrain.CltrainError, match="already"):
        s.compile()
    with pytest.raises(cltrain.CltrainError, match="no float32 constant named 'nope'"):
        s.get_weight("nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(cltrain.CltrainError, match="under"):
        s.export_circle(tmp_path / "file" / "under.circle")
    with pytest.raises(ValueError, match="optimizer"):
        cltrain.Session(models("mlp", 4)).compile(optimizer="rmsprop")
    s.close()
    with pytest.raises(cltrain.CltrainError, match="NULL"):
        s.predict(np.zeros((4, 784)))


def test_flower_without_flower_is_one_clear_line():
    """cltrain.flower needs Flower from PyPI (.ci/flower's venv); without it, importing it says so."""
    try:
        import flwr  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs Flower"):
            import cltrain.flower  # noqa: F401
    else:
        import cltrain.flower  # noqa: F401


EMBEDDING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "keras", "data", "embedding_pool.tflite")


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_token_ids_train_as_int32(backend):
    """A converted Keras Embedding model takes int32 ids: train_step, fit and predict pass them as
    int32; float x, or an id outside the table, raise."""
    s = session(EMBEDDING, backend, 8, optimizer="adam", learning_rate=0.01)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 20, (32, 6))
    y = rng.integers(0, 4, 32)
    first = s.train_step(x[:8], np.eye(4, dtype=np.float32)[y[:8]])
    history = s.fit(x, y, epochs=5, verbose=0)
    assert history.history["loss"][-1] < first
    out = s.predict(x[:11])
    assert out.shape == (11, 4) and np.allclose(out.sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="int32 token ids"):
        s.predict(x[:8].astype(np.float32))
    bad = x[:8].copy()
    bad[2, 3] = 20
    with pytest.raises(cltrain.CltrainError, match="id 20 at element 15 is outside the embedding table's 20 rows"):
        s.train_step(bad, np.eye(4, dtype=np.float32)[y[:8]])


TRANSFORMER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "keras", "data", "transformer.tflite")


def test_lora_trains_adapters_only_and_exports_them_merged(tmp_path):
    """compile(lora=(4, 8.0)): only the adapters train (every trained weight a LoRA A or B), the
    loss falls, and the exported model predicts what base + adapters predict; a bad rank is
    refused."""
    s = session(TRANSFORMER, "cpu", 4, learning_rate=0.01, lora=(4, 8.0))
    assert s.settings["lora_rank"] == 4 and s.settings["lora_alpha"] == 8.0
    names = s.trained_weight_names()
    assert len(names) == 26 and all("/lora_" in n for n in names)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 100, (4, 32))
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 4)]
    first = s.train_step(x, y)
    for _ in range(20):
        last = s.train_step(x, y)
    assert last < 0.5 * first
    want = s.predict(x)
    path = str(tmp_path / "merged.tflite")
    s.export_circle(path)
    got = session(path, "cpu", 4).predict(x)
    assert np.abs(got - want).max() <= 1e-6
    with pytest.raises(ValueError, match="lora"):
        session(TRANSFORMER, "cpu", 4, lora=0)


def test_rewrites_say_what_the_passes_changed(tmp_path):
    """Session.rewrites: after loading, the passes that load the converted transformer's file
    (its Embedding's index guard, its shape operators); after compile, those of setup too: with
    add_missing_biases an unrolled SimpleRNN whose zero biases the converter dropped gets one per
    layer (the x_t W operators share one, the Dense its own), the transformer none (its Dense and
    EinsumDense biases are ADDs of constants after them)."""
    s = cltrain.Session(TRANSFORMER, backends=["cpu"], batch_size=4, cache_dir=CACHE)
    loaded = s.rewrites
    assert any(r.startswith("index-guards: folded 1 index guard") for r in loaded), loaded
    assert any(r.startswith("shape-operators: computes 28 shape operators") for r in loaded), loaded
    s.compile(optimizer="sgd", learning_rate=0.01, loss="categorical_crossentropy", add_missing_biases=True)
    assert s.rewrites[:len(loaded)] == loaded
    assert not any(r.startswith("missing-biases") for r in s.rewrites), s.rewrites
    rnn = cltrain.Session(os.path.join(os.path.dirname(TRANSFORMER), "simple_rnn_zero_bias.tflite"), backends=["cpu"],
                          batch_size=4, cache_dir=CACHE)
    rnn.compile(optimizer="sgd", add_missing_biases=True)
    assert "missing-biases: added 6 zero biases" in rnn.rewrites, rnn.rewrites


def test_periodic_checkpoints_resume_bitwise(models, tmp_path):
    """checkpoint_every=2: the newest 2 of step-N.ckpt kept; a new session resumes from the newest
    and its next steps are those of the uninterrupted session; a corrupted newest one is passed over
    with a warning."""
    model = models("mlp", 4)
    x, y = data(24, 784, 10, 6)
    a = session(model, "cpu", 4, checkpoint_every=2, checkpoint_dir=tmp_path, keep_checkpoints=2)
    for i in range(4):
        a.train_step(x[4 * i:4 * i + 4], y[4 * i:4 * i + 4])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-0000000002.ckpt", "step-0000000004.ckpt"]
    want = [a.train_step(x[4 * i:4 * i + 4], y[4 * i:4 * i + 4]) for i in (4, 5)]
    b = session(model, "cpu", 4)
    assert b.resume(tmp_path) == str(tmp_path / "step-0000000006.ckpt")
    assert b.position[0] == 6
    c = session(model, "cpu", 4)
    newest = tmp_path / "step-0000000006.ckpt"
    raw = bytearray(newest.read_bytes())
    raw[100] ^= 1
    newest.write_bytes(bytes(raw))
    assert c.resume(tmp_path) == str(tmp_path / "step-0000000004.ckpt")
    assert any("checksum mismatch" in w for w in c.warnings)
    assert [c.train_step(x[4 * i:4 * i + 4], y[4 * i:4 * i + 4]) for i in (4, 5)] == want
    assert session(model, "cpu", 4).resume(tmp_path / "none") is None


def test_fit_resumed_mid_epoch_ends_as_the_uninterrupted_fit(models, tmp_path):
    """A fit killed in its second epoch (here: on_step raises after batch 4 of 6) with a checkpoint
    every 4 steps; a new session's resume() and the same fit() call go on at the checkpoint's next
    batch: the second epoch's mean loss and the final weights are those of the fit never stopped,
    bit for bit, and the first epoch is not trained again."""
    model = models("mlp", 4)
    x, y = data(24, 784, 10, 9)
    whole = session(model, "cpu", 4)
    want = whole.fit(x, y, epochs=2, seed=5, verbose=0)

    class Killed(Exception):
        pass

    def kill(epoch, step, loss):
        if (epoch, step) == (2, 3):
            raise Killed()

    a = session(model, "cpu", 4, checkpoint_every=4, checkpoint_dir=tmp_path)
    with pytest.raises(Killed):
        a.fit(x, y, epochs=2, seed=5, verbose=0, on_step=kill)
    b = session(model, "cpu", 4, checkpoint_every=4, checkpoint_dir=tmp_path)
    assert b.resume(tmp_path) == str(tmp_path / "step-0000000008.ckpt")
    steps = []
    got = b.fit(x, y, epochs=2, seed=5, verbose=0, on_step=lambda e, s, l: steps.append((e, s)))
    assert steps == [(2, 2), (2, 3), (2, 4), (2, 5)]
    assert got.history["loss"] == want.history["loss"][1:]
    assert b.position == whole.position == (12, 2)
    for g, w in zip(b.get_weights(), whole.get_weights()):
        assert np.array_equal(g.view(np.uint32), w.view(np.uint32))


def test_set_weights_refuses_a_hostile_list_whole(models):
    """Wrong count, size, type, NaN or a float64 beyond float32: one line (ValueError), and no weight
    changes, not even those before the bad array."""
    s = session(models("mlp", 4), "cpu", 4)
    good = s.get_weights()
    bad_lists = {
        "3 arrays given": good[:3],
        "array 1 .*: 5 values": [good[0], np.zeros(5, np.float32)] + good[2:],
        "dtype <U1 is not a real number type": good[:3] + [np.array(["a"] * good[3].size)],
        "array 2 .*NaN or Inf as float32, the first at element 7": good[:2] + [np.where(
            np.arange(good[2].size) == 7, np.nan, good[2]).astype(np.float32)] + good[3:],
        "array 3 .*NaN or Inf as float32": good[:3] + [np.full(good[3].size, 1e300)],
        "not a list of arrays": 42,
    }
    changed = [w + 1 for w in good]
    for why, arrays in bad_lists.items():
        if isinstance(arrays, list):
            arrays = [changed[i] if i == 0 else a for i, a in enumerate(arrays)]  # a good first array
        with pytest.raises(ValueError, match=why) as e:
            s.set_weights(arrays)
        assert "\n" not in str(e.value)
        for w, g in zip(s.get_weights(), good):
            assert np.array_equal(w, g)
    s.set_weights([w.astype(np.float64).reshape(1, -1) for w in changed])  # any real type and shape of the size
    for w, c in zip(s.get_weights(), changed):
        assert np.array_equal(w, c)


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_from_logits_loss_is_the_cross_entropy_of_their_softmax(tmp_path, backend):
    """A model that outputs logits (tests/keras/data/logits_cnn.tflite ends in a Dense) trained with
    loss="categorical_crossentropy_from_logits": train_step's loss is the mean over the batch of
    -sum(y * log_softmax(z)) of predict's logits, computed here in double; the choice survives a
    circle+ export. With the probability loss the session warns in one line."""
    model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "keras", "data", "logits_cnn.tflite")
    s = cltrain.Session(model, backends=[backend], batch_size=8, cache_dir=CACHE)
    s.compile(optimizer="sgd", learning_rate=0.01, loss="categorical_crossentropy_from_logits")
    assert not [w for w in s.warnings if "Softmax" in w]
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.random((8, 10, 10, 1), dtype=np.float32)
        y = np.eye(7, dtype=np.float32)[rng.integers(0, 7, 8)]
        z = s.predict(x).astype(np.float64)
        lse = z.max(1, keepdims=True) + np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
        want = float(np.mean(-(y * (z - lse)).sum(1)))
        assert s.train_step(x, y) == pytest.approx(want, rel=1e-6)
    s.export_circleplus(tmp_path / "p.circle")
    assert cltrain.Session(tmp_path / "p.circle").settings["loss"] == "categorical_crossentropy_from_logits"
    wrong = cltrain.Session(model, backends=["cpu"], batch_size=8).compile(loss="categorical_crossentropy")
    assert [w for w in wrong.warnings if "not a Softmax" in w and "loss 3" in w]


def test_make_model_and_datasets_give_a_first_training_in_three_lines(tmp_path, monkeypatch):
    """The README's first Python lines: Fashion-MNIST-shaped idx files (gzipped) as
    cltrain.datasets reads them, the mlp from make_model, a fit that learns."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 10, 256).astype(np.uint8)
    x = np.zeros((256, 784), np.uint8)
    for c in range(10):
        x[y == c, c * 78:(c + 1) * 78] = 255  # one band of pixels per class: learnable in one epoch
    for split, n in (("train", 192), ("t10k", 64)):
        lo = 0 if split == "train" else 192
        with gzip.open(tmp_path / (split + "-images-idx3-ubyte.gz"), "wb") as f:
            f.write(b"\0" * 16 + x[lo:lo + n].tobytes())
        with open(tmp_path / (split + "-labels-idx1-ubyte"), "wb") as f:  # not gzipped: read too
            f.write(b"\0" * 8 + y[lo:lo + n].tobytes())
    monkeypatch.setenv("CLTRAIN_FASHION_MNIST", str(tmp_path))
    (x_train, y_train), (x_test, y_test) = cltrain.datasets.fashion_mnist()
    assert x_train.shape == (192, 784) and x_train.dtype == np.float32 and x_train.max() == 1.0
    assert y_test.shape == (64,) and y_test.dtype == np.int64 and (y_test == y[192:]).all()
    model = cltrain.make_model("mlp", tmp_path / "mlp.circle", batch_size=16)
    assert model == str(tmp_path / "mlp.circle") and os.path.getsize(model) > 0
    s = cltrain.Session(model, batch_size=16, cache_dir=CACHE)
    s.compile(optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy")
    s.fit(x_train, y_train, epochs=3, verbose=0)
    assert s.accuracy(x_test, y_test) > 0.9


def test_neg_make_model_and_datasets_say_what_is_missing(tmp_path):
    with pytest.raises(cltrain.CltrainError, match="no_such_model"):
        cltrain.make_model("no_such_model", tmp_path / "x.circle")
    assert not (tmp_path / "x.circle").exists()
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.*dataset-fashion-mnist"):
        cltrain.datasets.fashion_mnist(str(tmp_path))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\0" * 16 + bytes(784 * 2))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(b"\0" * 8 + bytes(3))
    with pytest.raises(ValueError, match="2 images and 3 labels"):
        cltrain.datasets.fashion_mnist(str(tmp_path))


def test_the_cltrain_command_is_the_cli(tmp_path):
    """python -m cltrain (as the venv's `cltrain` command, cltrain._cli.main) runs the package's CLI,
    its lines and exit code included."""
    import sys
    r = subprocess.run([sys.executable, "-m", "cltrain", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage: cltrain MODEL [options]" in r.stdout and not r.stderr
    r = subprocess.run([sys.executable, "-m", "cltrain", "make-model", "no_such_model", "-o", str(tmp_path / "x")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "no_such_model" in r.stderr and not r.stdout


def _safetensors(path, tensors, metadata=None):
    """A safetensors file written here (no safetensors package needed): tensors {name: float32 array}."""
    import json
    import struct
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _read_safetensors(path):
    import json
    import struct
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            b, end = e["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + b:8 + n + end], dtype="<f4").reshape(e["shape"])
    return out, header.get("__metadata__", {})


def test_lora_adapters_as_a_file_resume_bitwise(models, tmp_path):
    """export_lora writes the adapters alone; a fresh session of the base model loads them and
    predicts, and trains on, bit for bit as the session that wrote them."""
    x, y = data(96, 784, 10, 21)
    base = models("mlp", 16)
    a = session(base, "opencl", 16, optimizer="sgd", learning_rate=0.05, lora=4)
    for i in range(0, 96, 16):
        a.train_step(x[i:i + 16], y[i:i + 16])
    a.export_lora(tmp_path / "adapters.safetensors")
    tensors, meta = _read_safetensors(tmp_path / "adapters.safetensors")
    assert meta == {"format": "cltrain-lora", "rank": "4", "alpha": "4"}
    assert sorted(tensors) == ["fc1/weights.lora_A.weight", "fc1/weights.lora_B.weight", "fc2/weights.lora_A.weight",
                               "fc2/weights.lora_B.weight"]
    assert tensors["fc1/weights.lora_A.weight"].shape == (4, 784) and tensors["fc2/weights.lora_B.weight"].shape == (10, 4)
    assert np.any(tensors["fc1/weights.lora_B.weight"])  # trained: B starts at zero
    assert os.path.getsize(tmp_path / "adapters.safetensors") < os.path.getsize(base) / 5
    b = session(base, "opencl", 16, optimizer="sgd", learning_rate=0.05, lora=4)
    b.load_lora(tmp_path / "adapters.safetensors")
    assert np.array_equal(a.predict(x[:32]), b.predict(x[:32]))
    a.reset_optimizer()  # SGD has no state; the next steps start alike
    assert [a.train_step(x[i:i + 16], y[i:i + 16]) for i in (0, 16)] == \
           [b.train_step(x[i:i + 16], y[i:i + 16]) for i in (0, 16)]


def test_neg_an_adapter_file_that_does_not_fit_changes_nothing(models, tmp_path):
    base = models("mlp", 16)
    s = session(base, "cpu", 16, lora=2)
    before = s.predict(np.ones((16, 784), np.float32))
    good = {"fc1/weights.lora_A.weight": np.full((2, 784), 0.01), "fc1/weights.lora_B.weight": np.full((128, 2), 0.5),
            "fc2/weights.lora_A.weight": np.full((2, 128), 0.01), "fc2/weights.lora_B.weight": np.full((10, 2), 0.5)}
    cases = {
        "rank": (good, {"rank": "4"}, "adapters of rank 4; this session's are of rank 2"),
        "missing": ({k: v for k, v in good.items() if "fc2/weights.lora_B" not in k}, None,
                    "has no adapter 'fc2/weights.lora_B.weight'"),
        "shape": (dict(good, **{"fc2/weights.lora_B.weight": np.zeros((2, 10))}), None, "another shape"),
        "extra": (dict(good, **{"fc3/weights.lora_A.weight": np.zeros((2, 2))}), None, "adapts no weight"),
        "nan": (dict(good, **{"fc1/weights.lora_A.weight": np.full((2, 784), np.nan)}), None, "holds nan"),
    }
    for name, (tensors, meta, why) in cases.items():
        _safetensors(tmp_path / (name + ".safetensors"), tensors, meta)
        with pytest.raises(cltrain.CltrainError, match=why):
            s.load_lora(tmp_path / (name + ".safetensors"))
    (tmp_path / "short.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(cltrain.CltrainError, match="runs past the end of the file"):
        s.load_lora(tmp_path / "short.safetensors")
    assert np.array_equal(s.predict(np.ones((16, 784), np.float32)), before)  # nothing was set
    _safetensors(tmp_path / "good.safetensors", good)  # no metadata: a file of another tool
    s.load_lora(tmp_path / "good.safetensors")
    assert not np.array_equal(s.predict(np.ones((16, 784), np.float32)), before)
    plain = session(base, "cpu", 16)
    with pytest.raises(cltrain.CltrainError, match="no LoRA adapters"):
        plain.export_lora(tmp_path / "none.safetensors")
