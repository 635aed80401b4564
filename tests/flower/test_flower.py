"""cltrain.flower: cltrain as the trainer of Flower clients.

Run by `bash .ci/flower --test` in the virtual environment it makes (Flower from PyPI), with
PYTHONPATH at build/python and CLTRAIN_CLI at the CLI. Fashion-MNIST is Debian's.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cltrain
import cltrain.flower as cf

CLI = os.environ["CLTRAIN_CLI"]


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    path = tmp_path_factory.mktemp("flower") / "mlp.circle"
    subprocess.run([CLI, "make-model", "mlp", "-o", str(path)], check=True, capture_output=True)
    return str(path)


@pytest.fixture(scope="module")
def fashion():
    return cf.load_fashion_mnist()


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def test_partitions_hold_every_sample_once(fashion):
    _, y, _, _ = fashion
    for scheme in ("iid", "dirichlet"):
        parts = cf.partition(y, 8, scheme, alpha=0.5, seed=0)
        assert len(parts) == 8
        joined = np.sort(np.concatenate(parts))
        assert np.array_equal(joined, np.arange(y.size)), scheme
        assert min(p.size for p in parts) >= 64
        again = cf.partition(y, 8, scheme, alpha=0.5, seed=0)
        assert all(np.array_equal(a, b) for a, b in zip(parts, again)), "not deterministic"
    iid = cf.partition(y, 8, "iid", seed=0)
    assert max(p.size for p in iid) - min(p.size for p in iid) <= 1
    # Non-IID by label: each client's label mix is far from the uniform one IID gives.
    skew = lambda parts: np.mean([np.abs(np.bincount(y[p], minlength=10) / p.size - 0.1).sum() for p in parts])
    assert skew(cf.partition(y, 8, "dirichlet", alpha=0.5, seed=0)) > 4 * skew(iid)
    with pytest.raises(ValueError):
        cf.partition(y, 8, "by-shard")


# A client's fit is cltrain's training and nothing else: the weights it returns are bit for bit
# those the CLI gives after one epoch over the same samples in the same order from the same model.
@pytest.mark.parametrize("backend", ["opencl", "cpu"])
def test_fit_gives_the_weights_of_cltrain_trained_directly(mlp, fashion, tmp_path, backend):
    x, y, _, _ = fashion
    idx = cf.partition(y[:3000], 4, "dirichlet", alpha=0.5, seed=3)[1]
    xs, ys = cf.scale(x[idx]), y[idx]
    client = cf.CltrainClient(mlp, x[idx], ys, backends=[backend], cache_dir="")
    config = {"optimizer": "adam", "learning_rate": 0.001, "batch_size": 16, "local_epochs": 1, "shuffle": False}
    start = client.get_parameters(config)
    weights, n, metrics = client.fit(start, dict(config, server_round=1))
    assert n == (idx.size // 16) * 16
    assert np.isfinite(metrics["loss"])

    xs.tofile(tmp_path / "x.raw")
    np.eye(10, dtype=np.float32)[ys].tofile(tmp_path / "y.raw")
    out = tmp_path / "direct.circle"
    subprocess.run([CLI, mlp, "--load_input:raw", str(tmp_path / "x.raw"), "--load_expected:raw",
                    str(tmp_path / "y.raw"), "--epoch", "1", "--batch_size", "16", "--optimizer", "2",
                    "--learning_rate", "0.001", "--loss", "2", "--no-shuffle", "--backends", backend, "--no-cache",
                    "--export_circle", str(out)], check=True, capture_output=True)
    direct = cltrain.Session(str(out), backends=["cpu"], batch_size=16, cache_dir="")
    direct.compile()
    expected = direct.get_weights()
    assert len(weights) == len(expected) == 4
    for got, want in zip(weights, expected):
        assert np.array_equal(bits(got), bits(want))

    # A second round from the same parameters starts the optimizer afresh: the same weights again.
    again, _, _ = client.fit(start, dict(config, server_round=2))
    for got, want in zip(again, weights):
        assert np.array_equal(bits(got), bits(want))
    client.close()


def test_parameters_are_the_trained_weights_only(mlp, fashion):
    x, y, _, _ = fashion
    client = cf.CltrainClient(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="")
    assert [a.size for a in client.get_parameters({})] == [784 * 128, 128, 128 * 10, 10]
    last = client.get_parameters({"trainable_ops": 2})  # the last FullyConnected and the softmax
    assert [a.size for a in last] == [128 * 10, 10]
    weights, _, _ = client.fit(last, {"trainable_ops": 2, "server_round": 1})
    assert len(weights) == 2
    with pytest.raises(ValueError):
        client.fit(last[:1], {"trainable_ops": 2})
    loss, n, metrics = client.evaluate(weights, {"trainable_ops": 2})
    assert n == 64 and np.isfinite(loss) and 0.0 <= metrics["accuracy"] <= 1.0
    client.close()


# A broken or hostile server: NaN, wrong-size, wrong-count and wrong-type parameters are each
# refused in one line (ValueError, which Flower reports as this client's failure) before anything
# changes, and the client serves the next round as a fresh one would.
def test_the_client_refuses_hostile_parameters_and_serves_later_rounds(mlp, fashion):
    x, y, _, _ = fashion
    client = cf.CltrainClient(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="")
    good = client.get_parameters({})
    config = {"server_round": 1, "seed": 3}
    hostile = [
        [np.full_like(good[0], np.nan)] + good[1:],
        [good[0], np.zeros(good[1].size + 1, np.float32)] + good[2:],
        good[:2],
        good + [np.zeros(3, np.float32)],
        [good[0].astype(np.complex64)] + good[1:],
    ]
    for params in hostile:
        with pytest.raises(ValueError) as e:
            client.fit(params, config)
        assert "\n" not in str(e.value)
        with pytest.raises(ValueError):
            client.evaluate(params, config)
    weights, n, metrics = client.fit(good, config)
    fresh = cf.CltrainClient(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="")
    want, _, _ = fresh.fit(good, config)
    for got, w in zip(weights, want):
        assert np.array_equal(got, w)
    assert n == 64 and metrics["skipped_steps"] == 0
    client.close()
    fresh.close()


# A NaN in one sample of a client's own data (a bad sensor reading): that batch is skipped, not
# applied and counted; the weights the client sends are those of a client whose data never held the
# batch, bit for bit, and finite: no NaN reaches the server's average.
def test_a_nan_sample_in_local_data_is_skipped_not_sent(mlp, fashion):
    x, y, _, _ = fashion
    x = cf.scale(x[:48]) if x.dtype == np.uint8 else np.array(x[:48], dtype=np.float32)
    bad = x.copy()
    bad[20, 300] = np.nan  # the second of three batches of 16
    config = {"server_round": 1, "shuffle": False}
    client = cf.CltrainClient(mlp, bad, y[:48], backends=["cpu"], cache_dir="")
    start = client.get_parameters({})
    weights, n, metrics = client.fit(start, config)
    assert metrics["skipped_steps"] == 1 and np.isfinite(metrics["loss"])
    clean = cf.CltrainClient(mlp, np.concatenate([x[:16], x[32:48]]), np.concatenate([y[:16], y[32:48]]),
                             backends=["cpu"], cache_dir="")
    want, _, _ = clean.fit(start, config)
    for got, w in zip(weights, want):
        assert np.all(np.isfinite(got)) and np.array_equal(got, w)
    client.close()
    clean.close()


# checkpoint_every: the client's local training writes periodic checkpoints, which a session
# resumes from to the weights the fit returned.
def test_the_client_keeps_periodic_checkpoints(mlp, fashion, tmp_path):
    x, y, _, _ = fashion
    client = cf.CltrainClient(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="", checkpoint_every=2,
                              checkpoint_dir=str(tmp_path))
    weights, _, _ = client.fit(client.get_parameters({}), {"server_round": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-0000000002.ckpt", "step-0000000004.ckpt"]
    s = cltrain.Session(mlp, backends=["cpu"], batch_size=16, cache_dir="")
    s.compile()
    assert s.resume(str(tmp_path)) == str(tmp_path / "step-0000000004.ckpt")
    for got, want in zip(s.get_weights(), weights):
        assert np.array_equal(bits(got), bits(want))
    client.close()


def federation(tmp_path, mlp, name, limit, *args):
    cmd = [sys.executable, "-m", "cltrain.flower", "federation", "--model", mlp, "--clients", "2", "--limit",
           str(limit), "--out-dir", str(tmp_path), "--name", name, "--timeout", "240", "--cache-dir", ""] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    log = (tmp_path / (name + ".log")).read_text() if (tmp_path / (name + ".log")).exists() else ""
    assert r.returncode == 0, r.stdout + r.stderr + log[-3000:]
    with open(tmp_path / (name + ".json")) as f:
        return json.load(f), r.stdout


# The CI smoke test: a server and 2 OpenCL clients on loopback, one round; run twice, the same
# test loss and accuracy (replies are averaged in client order, not arrival order).
def test_a_federation_of_two_clients_trains_reproducibly(mlp, tmp_path):
    result, out = federation(tmp_path, mlp, "smoke", 2000, "--rounds", "1")
    rounds = {r["round"]: r for r in result["per_round"]}
    assert rounds[1]["fit_results"] == 2 and rounds[1]["fit_failures"] == 0
    assert rounds[1]["test_accuracy"] > rounds[0]["test_accuracy"] + 0.2
    assert "round  clients  failed  test accuracy" in out
    again, _ = federation(tmp_path, mlp, "smoke2", 2000, "--rounds", "1")
    assert [(r["test_loss"], r["test_accuracy"]) for r in again["per_round"]] == \
        [(r["test_loss"], r["test_accuracy"]) for r in result["per_round"]]


# A client killed in the middle of round 1 (SIGKILL halfway through its 250 steps): that round
# averages the other one, the killed client comes back and round 2 has both again.
def test_a_client_killed_mid_round_does_not_stop_the_federation(mlp, tmp_path):
    result, _ = federation(tmp_path, mlp, "fault", 8000, "--rounds", "2", "--kill", "1:1", "--partition", "iid")
    rounds = {r["round"]: r for r in result["per_round"]}
    assert (rounds[1]["fit_results"], rounds[1]["fit_failures"]) == (1, 1)
    assert (rounds[2]["fit_results"], rounds[2]["fit_failures"]) == (2, 0)
    assert any("killed in round 1" in e for e in result["events"])
    assert any("restarted" in e for e in result["events"])
    assert rounds[2]["test_accuracy"] > rounds[0]["test_accuracy"]


# A hostile server, through Flower's transport: in rounds 1-6 it sends each client NaN, Inf,
# wrong-shape, wrong-count, complex and non-array parameters. Each client refuses each in one line
# (a failed round for the server, whose global model then stays as it was) and keeps serving: no
# client process ends or is restarted, and round 7 trains both.
def test_a_hostile_server_is_refused_and_the_clients_serve_on(mlp, tmp_path):
    poison = ",".join("%d:%s" % (r + 1, k) for r, k in enumerate(cf.POISON_KINDS))
    result, _ = federation(tmp_path, mlp, "hostile", 2000, "--rounds", "7", "--poison", poison)
    rounds = {r["round"]: r for r in result["per_round"]}
    for r in range(1, 7):
        assert (rounds[r]["fit_results"], rounds[r]["fit_failures"]) == (0, 2), rounds[r]
        assert rounds[r]["test_loss"] == rounds[0]["test_loss"], "a refused round changed the global model"
    assert (rounds[7]["fit_results"], rounds[7]["fit_failures"]) == (2, 0)
    assert rounds[7]["test_accuracy"] > rounds[0]["test_accuracy"] + 0.2
    assert result["events"] == [], "a client ended: %s" % result["events"]
    log = (tmp_path / "hostile.log").read_text().splitlines()
    for r, kind in enumerate(cf.POISON_KINDS, 1):
        for k in (0, 1):
            lines = [l for l in log if l.startswith("client %d: round %d: fit refused: " % (k, r))]
            assert len(lines) == 1, (kind, k, lines)
    assert not any("Traceback" in l for l in log)
