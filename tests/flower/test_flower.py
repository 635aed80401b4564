"""cltrain.flower: cltrain as the trainer of a Flower app (Message API: ClientApp, ServerApp).

Run by `bash .ci/flower --test` in the virtual environment it makes (Flower from PyPI, with its
simulation engine), with PYTHONPATH at build/python and CLTRAIN_CLI at the CLI. Fashion-MNIST is
Debian's.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cltrain
import cltrain.flower as cf
from flwr.app import Array, ArrayRecord

CLI = os.environ["CLTRAIN_CLI"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def values(arrays):
    return list(arrays.values())


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


# The Flower app a user runs with `flwr run` is examples/flower, whose pyproject.toml names
# cltrain's ServerApp and ClientApp and lists every run config key at its default (flwr run
# --run-config may only set keys listed there).
def test_the_example_app_is_the_app_cltrain_writes(fashion):
    with open(os.path.join(ROOT, "examples", "flower", "pyproject.toml")) as f:
        assert f.read() == cf.app_pyproject()
    assert cf.run_settings({"lora": "4", "shuffle": "false"}, batch_size=8)["lora"] == 4
    assert cf.run_settings({"shuffle": "false"})["shuffle"] is False
    with pytest.raises(ValueError, match="not one of cltrain.flower's"):
        cf.run_settings({"learning_rate": 0.1})
    # 28x28 images as MobileNetV2's 224x224x3 input: enlarged 8 times, the same pixel thrice.
    x = fashion[0][:2]
    big = cf.fit_images(x, 224 * 224 * 3).reshape(2, 224, 224, 3)
    assert big[1, 8 * 5 + 7, 8 * 9, 2] == np.float32(x[1, 5 * 28 + 9]) / np.float32(255)
    with pytest.raises(ValueError):
        cf.fit_images(x, 1000)


# A node's train is cltrain's training and nothing else: the weights it returns are bit for bit
# those the CLI gives after one epoch over the same samples in the same order from the same model.
@pytest.mark.parametrize("backend", ["opencl", "cpu"])
def test_train_gives_the_weights_of_cltrain_trained_directly(mlp, fashion, tmp_path, backend):
    x, y, _, _ = fashion
    idx = cf.partition(y[:3000], 4, "dirichlet", alpha=0.5, seed=3)[1]
    xs, ys = cf.scale(x[idx]), y[idx]
    node = cf.Trainer(mlp, x[idx], ys, backends=[backend], cache_dir="")
    config = {"optimizer": "adam", "learning-rate": 0.001, "batch-size": 16, "local-epochs": 1, "shuffle": False}
    start = node.get_arrays(config)
    weights, n, metrics = node.fit(start, dict(config, **{"server-round": 1}))
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
    assert list(weights) == direct.trained_weight_names() and len(expected) == 4
    for got, want in zip(values(weights), expected):
        assert np.array_equal(bits(got), bits(want))

    # A second round from the same arrays starts the optimizer afresh: the same weights again.
    again, _, _ = node.fit(start, dict(config, **{"server-round": 1}))
    for got, want in zip(values(again), values(weights)):
        assert np.array_equal(bits(got), bits(want))
    node.close()


def test_arrays_are_the_trained_weights_only_or_the_adapters(mlp, fashion):
    x, y, _, _ = fashion
    node = cf.Trainer(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="")
    assert [a.size for a in values(node.get_arrays({}))] == [784 * 128, 128, 128 * 10, 10]
    last = node.get_arrays({"trainable-ops": 2})  # the last FullyConnected and the softmax
    assert [a.size for a in values(last)] == [128 * 10, 10]
    weights, _, _ = node.fit(last, {"trainable-ops": 2, "server-round": 1})
    assert len(weights) == 2
    loss, n, metrics = node.evaluate(weights, {"trainable-ops": 2})
    assert n == 64 and np.isfinite(loss) and 0.0 <= metrics["accuracy"] <= 1.0
    # lora = 4: the adapters alone (A [4, in], B [out, 4] of each Dense layer) travel.
    adapters = node.get_arrays({"lora": 4})
    assert {k: v.size for k, v in adapters.items()} == {
        "fc1/weights/lora_a": 4 * 784, "fc1/weights/lora_b": 128 * 4, "fc2/weights/lora_a": 4 * 128,
        "fc2/weights/lora_b": 10 * 4}
    trained, _, _ = node.fit(adapters, {"lora": 4, "server-round": 1})
    assert set(trained) == set(adapters) and any(not np.array_equal(trained[k], adapters[k]) for k in adapters)
    node.close()


# A broken or hostile server: NaN, Inf, wrong-size, missing, extra, complex and non-array arrays are
# each refused in one line (ValueError; the ClientApp answers it as an error reply) before anything
# changes, and the node serves the next round as a fresh one would.
def test_a_node_refuses_hostile_arrays_and_serves_later_rounds(mlp, fashion):
    x, y, _, _ = fashion
    node = cf.Trainer(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="")
    good = node.get_arrays({})
    record = ArrayRecord({k: Array(v) for k, v in good.items()})
    config = {"server-round": 3}
    hostile = [dict(cf.poisoned(record, kind)) for kind in cf.POISON_KINDS]
    hostile.append(dict(good, extra=np.zeros(3, np.float32)))
    for arrays in hostile:
        with pytest.raises(ValueError) as e:
            node.fit(arrays, config)
        assert "\n" not in str(e.value)
        with pytest.raises(ValueError):
            node.evaluate(arrays, config)
    weights, n, metrics = node.fit(record, config)
    fresh = cf.Trainer(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="")
    want, _, _ = fresh.fit(good, config)
    for got, w in zip(values(weights), values(want)):
        assert np.array_equal(got, w)
    assert n == 64 and metrics["skipped-steps"] == 0
    node.close()
    fresh.close()


# A NaN in one sample of a node's own data (a bad sensor reading): that batch is skipped, not
# applied and counted; the weights the node sends are those of a node whose data never held the
# batch, bit for bit, and finite: no NaN reaches the server's average.
def test_a_nan_sample_in_local_data_is_skipped_not_sent(mlp, fashion):
    x, y, _, _ = fashion
    x = cf.scale(x[:48])
    bad = x.copy()
    bad[20, 300] = np.nan  # the second of three batches of 16
    config = {"server-round": 1, "shuffle": False}
    node = cf.Trainer(mlp, bad, y[:48], backends=["cpu"], cache_dir="")
    start = node.get_arrays({})
    weights, n, metrics = node.fit(start, config)
    assert metrics["skipped-steps"] == 1 and np.isfinite(metrics["loss"])
    clean = cf.Trainer(mlp, np.concatenate([x[:16], x[32:48]]), np.concatenate([y[:16], y[32:48]]),
                       backends=["cpu"], cache_dir="")
    want, _, _ = clean.fit(start, config)
    for got, w in zip(values(weights), values(want)):
        assert np.all(np.isfinite(got)) and np.array_equal(got, w)
    node.close()
    clean.close()


# checkpoint_every: the node's local training writes periodic checkpoints, which a session
# resumes from to the weights the fit returned.
def test_the_node_keeps_periodic_checkpoints(mlp, fashion, tmp_path):
    x, y, _, _ = fashion
    node = cf.Trainer(mlp, x[:64], y[:64], backends=["cpu"], cache_dir="", checkpoint_every=2,
                      checkpoint_dir=str(tmp_path))
    weights, _, _ = node.fit(node.get_arrays({}), {"server-round": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-0000000002.ckpt", "step-0000000004.ckpt"]
    s = cltrain.Session(mlp, backends=["cpu"], batch_size=16, cache_dir="")
    s.compile()
    assert s.resume(str(tmp_path)) == str(tmp_path / "step-0000000004.ckpt")
    for got, want in zip(s.get_weights(), values(weights)):
        assert np.array_equal(bits(got), bits(want))
    node.close()


def federation(tmp_path, model, name, limit, *args):
    cmd = [sys.executable, "-m", "cltrain.flower", "federation", "--model", model, "--clients", "2", "--limit",
           str(limit), "--out-dir", str(tmp_path), "--name", name, "--timeout", "400"] + list(args)
    if "--cache-dir" not in args:
        cmd += ["--cache-dir", ""]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=480)
    log = (tmp_path / (name + ".log")).read_text() if (tmp_path / (name + ".log")).exists() else ""
    assert r.returncode == 0, r.stdout + r.stderr + log[-3000:]
    with open(tmp_path / (name + ".json")) as f:
        return json.load(f), r.stdout


def by_round(result):
    return {r["round"]: r for r in result["per_round"]}


# The CI smoke test: `flwr run` of cltrain's app over a SuperLink and 2 SuperNodes (OpenCL) on
# loopback, one round, and the same app in Flower's simulation engine: the same test loss and
# accuracy bit for bit (replies are averaged in partition order, not arrival order).
def test_a_federation_trains_alike_on_loopback_and_in_the_simulation_engine(mlp, tmp_path):
    result, out = federation(tmp_path, mlp, "smoke", 2000, "--rounds", "1")
    rounds = by_round(result)
    assert rounds[1]["fit_results"] == 2 and rounds[1]["fit_failures"] == 0
    assert rounds[1]["test_accuracy"] > rounds[0]["test_accuracy"] + 0.2
    assert "round  clients  failed  bytes/node  test accuracy" in out
    sim, _ = federation(tmp_path, mlp, "smoke-sim", 2000, "--rounds", "1", "--runtime", "simulation")
    assert sim["runtime"] == "simulation" and by_round(sim)[1]["fit_results"] == 2
    assert [(r["test_loss"], r["test_accuracy"]) for r in sim["per_round"]] == \
        [(r["test_loss"], r["test_accuracy"]) for r in result["per_round"]]


# A client killed in the middle of round 1 (SIGKILL to its SuperNode and ClientApp halfway through
# its 250 steps): that round averages the other one, the killed client comes back and round 2 has
# both again.
def test_a_client_killed_mid_round_does_not_stop_the_federation(mlp, tmp_path):
    result, _ = federation(tmp_path, mlp, "fault", 8000, "--rounds", "2", "--kill", "1:1", "--partition", "iid")
    rounds = by_round(result)
    assert (rounds[1]["fit_results"], rounds[1]["fit_failures"]) == (1, 1)
    assert (rounds[2]["fit_results"], rounds[2]["fit_failures"]) == (2, 0)
    assert any("killed in round 1" in e for e in result["events"])
    assert any("restarted" in e for e in result["events"])
    assert rounds[2]["test_accuracy"] > rounds[0]["test_accuracy"]


# A hostile server, through Flower's transport: in rounds 1-3 it sends the nodes NaN and Inf,
# wrong-shape and missing, complex and non-array arrays (one kind to each node). Each node refuses
# each in one line (an error reply for the server, whose global model then stays as it was) and
# keeps serving: no SuperNode ends or is restarted, and round 4 trains both.
def test_a_hostile_server_is_refused_and_the_clients_serve_on(mlp, tmp_path):
    kinds = cf.POISON_KINDS
    poison = ",".join("%d:%s/%s" % (r + 1, kinds[2 * r], kinds[2 * r + 1]) for r in range(len(kinds) // 2))
    result, _ = federation(tmp_path, mlp, "hostile", 2000, "--rounds", "4", "--poison", poison)
    rounds = by_round(result)
    for r in range(1, 4):
        assert (rounds[r]["fit_results"], rounds[r]["fit_failures"]) == (0, 2), rounds[r]
        assert rounds[r]["test_loss"] == rounds[0]["test_loss"], "a refused round changed the global model"
    assert (rounds[4]["fit_results"], rounds[4]["fit_failures"]) == (2, 0)
    assert rounds[4]["test_accuracy"] > rounds[0]["test_accuracy"] + 0.2
    assert result["events"] == [], "a client ended: %s" % result["events"]
    log = (tmp_path / "hostile.log").read_text().splitlines()
    refused = [l for l in log if l.startswith("client ") and ": train refused: " in l]
    for r in range(1, 4):
        for k in (0, 1):
            lines = [l for l in refused if l.startswith("client %d: round %d: train refused: " % (k, r))]
            assert len(lines) == 1, (r, k, lines)
    # Each kind was refused by one node, each in its own words.
    for words in ("NaN or Inf", "NaN or Inf", "values (shape", "missing", "not a real number type", "not a numpy"):
        assert any(words in l for l in refused), (words, refused)
    assert len(refused) == 6 and not any("Traceback" in l for l in log)


# Adapters-only rounds: MobileNetV2 (14 MB of weights) with LoRA rank 4 on its classifier, 2 nodes,
# Fashion-MNIST enlarged to 224x224x3, on loopback (SuperNodes) and in the simulation engine. Only
# the adapters travel (36,736 bytes as Flower serialises them, to each node and back: 0.26% of the
# model file), the server's average of them is NumPy's FedAvg of the replies, the global model's
# test loss falls, and both runtimes give the same replies and average bit for bit.
def test_mobilenetv2_federates_its_lora_adapters_only(tmp_path):
    model = str(tmp_path / "mobilenetv2.circle")
    subprocess.run([CLI, "make-model", "mobilenetv2", "-o", model], check=True, capture_output=True)
    saved = {}
    for runtime in ("deployment", "simulation"):
        replies = tmp_path / ("replies-" + runtime)
        result, out = federation(tmp_path, model, "mbv2-" + runtime, 160, "--rounds", "1", "--lora", "4",
                                 "--partition", "iid", "--batch-size", "10", "--learning-rate", "0.01",
                                 "--test-limit", "100", "--server-backends", "opencl", "--save-replies", str(replies),
                                 "--cache-dir", "-", "--runtime", runtime)
        assert result["lora"] == 4 and result["runtime"] == runtime
        r1 = by_round(result)[1]
        assert (r1["fit_results"], r1["fit_failures"]) == (2, 0)
        per_node = r1["bytes_sent"] // r1["nodes"]
        assert per_node == result["array_bytes"]
        assert 0 < per_node - (4 * 1280 + 1000 * 4) * 4 <= 2 * 128  # the floats and each array's .npy header
        assert r1["bytes_received"] == 2 * per_node
        assert per_node <= 0.05 * result["model_bytes"]
        assert "bytes of arrays to each node and back (0.26% of the model's" in \
            (tmp_path / ("mbv2-%s.log" % runtime)).read_text()
        assert r1["test_loss"] < by_round(result)[0]["test_loss"]
        z = np.load(replies / "round-1.npz")
        names = [k.split("/", 1)[1] for k in z.files if k.startswith("aggregate/")]
        assert sorted(names) == ["predictions/weights/lora_a", "predictions/weights/lora_b"]
        n0, n1 = float(z["examples/0"]), float(z["examples/1"])
        for n in names:
            a, b, got = z["node0/" + n], z["node1/" + n], z["aggregate/" + n]
            assert not np.array_equal(a, b)
            np.testing.assert_allclose(got, (a * n0 + b * n1) / (n0 + n1), rtol=1e-6, atol=1e-9)
            assert np.array_equal(got, a * (n0 / (n0 + n1)) + b * (n1 / (n0 + n1)))  # FedAvg's order of operations
        saved[runtime] = {k: z[k] for k in z.files}
    assert saved["deployment"].keys() == saved["simulation"].keys()
    for k, v in saved["deployment"].items():
        assert np.array_equal(v, saved["simulation"][k]), k
