#!/usr/bin/env python3
"""cltrain against PyTorch on the CPU: ms per training step of one model, and its first losses.

    python3 tests/bench/torch_compare.py mnist-kaggle --batch_size 32 --steps 10
    python3 tests/bench/torch_compare.py mobilenetv2 --batch_size 10 --steps 5
    python3 tests/bench/torch_compare.py model.circle --batch_size 32 --cltrain build/cltrain

OPTIONAL. PyTorch is NOT a dependency of cltrain: nothing in the build, the test suite or .ci/
needs it. Install it yourself to run this script (CPU wheels are enough):

    pip install torch            # or: pip install torch --index-url https://download.pytorch.org/whl/cpu

MODEL is a .circle/.tflite file, or a name `cltrain make-model` knows (mlp, mnist-kaggle,
mobilenetv2, branched, cnn-tiny), which is then written to a temporary file at --batch_size.

What it does, in one run:
  1. reads the model with a small flatbuffer reader (torch_model.py: the tables of
     host/model/schema/circle.fbs; no generated code, no `flatbuffers` package), and builds the same graph in PyTorch with the
     same initial weights (NHWC weights turned to PyTorch's layouts, TFLite's SAME padding with
     the extra row/column at the bottom/right, fused activations, Reshape/FC in NHWC order);
  2. makes the batch `cltrain bench` trains on: std::mt19937(seed), inputs std::uniform_real_
     distribution<float>(0, 1) as libstdc++ computes it, then one-hot classes rng() % classes
     (see host/cli/bench_command.cc) -- so both train on the very same numbers;
  3. trains it in PyTorch with torch.set_num_threads(THREADS) (2 by default): Adam (lr 0.001,
     betas 0.9/0.999, eps 1e-7), categorical cross-entropy on the softmax output (predictions
     clamped to [1e-7, 1 - 1e-7], summed over classes, mean over the batch), --warmup steps then
     --steps timed steps;
  4. runs `cltrain bench MODEL --batch_size B --steps N --warmup W --seed S --backends opencl
     --report FILE` with the same settings;
  5. prints both medians (ms/step), the ratio cltrain/PyTorch, and both losses of the first
     steps. The first step's loss (the forward pass of the initial weights on the same batch)
     must agree within --loss_tol relative (exit status 1 otherwise); the next two are shown
     with their difference (the same updates: PyTorch's eps is set each step to
     1e-7 / sqrt(1 - 0.999^t), which makes its Adam cltrain's (Keras') formula, eps added to
     sqrt(v) before the bias correction; the sums still run in other orders).

--json FILE writes the figures as JSON. Exit status: 0 when the first losses agree, 1 when not,
2 for usage errors or failures of cltrain.
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

NAMED_MODELS = ("mlp", "mnist-kaggle", "mobilenetv2", "branched", "cnn-tiny")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import CircleModel, build_torch_model  # noqa: E402


def mt19937(seed):
    """Python's Mersenne Twister in the state std::mt19937(seed) starts in (init_genrand)."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    r = random.Random()
    r.setstate((3, tuple(mt + [624]), None))
    return r  # r.getrandbits(32) is the generator's next output


def bench_batch(seed, batch, input_shape, classes):
    """inputs: uniform_real_distribution<float>(0, 1) = float(u) / 2^32 (1 - 2^-24 where that
    rounds to 1); then expected[i, rng() % classes] = 1."""
    import torch
    r = mt19937(seed)
    count = batch * math.prod(input_shape[1:])
    raw = r.getrandbits(32 * count).to_bytes(4 * count, "little")  # words in generation order
    u = torch.frombuffer(bytearray(raw), dtype=torch.int32).to(torch.int64) & 0xFFFFFFFF
    x = (u.to(torch.float64).to(torch.float32) / 4294967296.0).clamp(max=1.0 - 2.0 ** -24)
    y = torch.zeros(batch, classes)
    for i in range(batch):
        y[i, r.getrandbits(32) % classes] = 1.0
    return x.reshape([batch] + list(input_shape[1:])), y


def cce(p, y):
    import torch
    pc = torch.clamp(p, 1e-7, 1.0 - 1e-7)
    return -(y * torch.log(pc)).sum() / p.shape[0]


def run_torch(cm, args):
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    in_shape = cm.tensors[cm.inputs[0]]["shape"]
    classes = cm.tensors[cm.outputs[0]]["shape"][-1]
    x, y = bench_batch(args.seed, args.batch_size, in_shape, classes)
    if len(in_shape) == 4:
        x = x.permute(0, 3, 1, 2).contiguous()
    net = build_torch_model(cm, args.batch_size)
    if args.channels_last and len(in_shape) == 4:
        x = x.contiguous(memory_format=torch.channels_last)
        for p in net.parameters():
            if p.dim() == 4:
                p.data = p.data.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), lr=args.learning_rate, betas=(0.9, 0.999), eps=1e-7)
    losses, times = [], []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = cce(net(x), y)
        loss.backward()
        # cltrain's (Keras') Adam adds eps to sqrt(v) before the bias correction, PyTorch's to
        # sqrt(v_hat) after it: the same update with eps / sqrt(1 - beta2^t) here.
        for group in opt.param_groups:
            group["eps"] = 1e-7 / math.sqrt(1.0 - 0.999 ** (s + 1))
        opt.step()
        ms = (time.perf_counter() - t0) * 1e3
        losses.append(loss.item())
        if s >= args.warmup:
            times.append(ms)
        print("  pytorch %s %d - loss: %.6f - %.1f ms" % ("step" if s >= args.warmup else "warm-up step",
              s - args.warmup + 1 if s >= args.warmup else s + 1, losses[-1], ms), flush=True)
    return {"losses": losses, "ms": times, "ms_per_step": statistics.median(times), "min_ms": min(times),
            "threads": torch.get_num_threads(), "version": torch.__version__, "channels_last": args.channels_last}


def run_cltrain(model_path, args, report):
    cmd = [args.cltrain, "bench", model_path, "--batch_size", str(args.batch_size), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--seed", str(args.seed), "--optimizer", "2", "--learning_rate",
           repr(args.learning_rate), "--loss", "2", "--backends", args.backends, "--report", report]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout.splitlines():
        print("  " + line)
    if p.returncode != 0:
        raise RuntimeError("cltrain bench exited with %d" % p.returncode)
    with open(report) as f:
        r = json.load(f)
    timed = [s["ms"] for s in r["steps"] if not s.get("warmup")]
    return {"losses": [s["loss"] for s in r["steps"]], "ms_per_step": r["ms_per_step"], "device": r["device"],
            "ms": timed, "min_ms": min(timed),
            "backends": r["backends"], "placement": r.get("placement", {})}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a .circle/.tflite file or a make-model name (%s)" % ", ".join(NAMED_MODELS))
    ap.add_argument("--batch_size", type=int, required=True)
    ap.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first, both sides (default 1)")
    ap.add_argument("--seed", type=int, default=1, help="cltrain bench's --seed (default 1)")
    ap.add_argument("--learning_rate", type=float, default=0.001)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--channels_last", action="store_true",
                    help="PyTorch's 4-D tensors in channels_last memory format (NHWC strides), often faster on CPUs")
    ap.add_argument("--cltrain", default=os.path.join(here, "..", "..", "build", "cltrain"),
                    help="the cltrain binary (default build/cltrain)")
    ap.add_argument("--backends", default="opencl", help="cltrain --backends (default opencl)")
    ap.add_argument("--loss_tol", type=float, default=1e-4, help="first-step loss, relative (default 1e-4)")
    ap.add_argument("--skip_cltrain", action="store_true", help="PyTorch only")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch_size < 1:
        ap.error("--steps and --batch_size must be at least 1, --warmup not negative")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_compare.py needs PyTorch, which cltrain itself never needs: pip install torch", file=sys.stderr)
        return 2

    tmp = tempfile.mkdtemp(prefix="torch_compare.")
    try:
        model_path = args.model
        if not os.path.exists(model_path):
            if args.model not in NAMED_MODELS:
                ap.error("%s is neither a file nor one of %s" % (args.model, ", ".join(NAMED_MODELS)))
            model_path = os.path.join(tmp, args.model + ".circle")
            subprocess.run([args.cltrain, "make-model", args.model, "-o", model_path, "--batch_size",
                            str(args.batch_size)], check=True, stdout=subprocess.DEVNULL)
        cm = CircleModel(model_path)
        load0 = os.getloadavg()
        print("model %s: %d ops, batch %d, %d warm-up + %d timed steps, Adam lr %g, CCE" %
              (args.model, len(cm.ops), args.batch_size, args.warmup, args.steps, args.learning_rate), flush=True)
        pt = run_torch(cm, args)
        print("pytorch %s, %d threads: median %.1f ms/step" % (pt["version"], pt["threads"], pt["ms_per_step"]))
        result = {"model": args.model, "batch_size": args.batch_size, "steps": args.steps, "warmup": args.warmup,
                  "seed": args.seed, "pytorch": pt, "loadavg_start": load0}
        ok = True
        if not args.skip_cltrain:
            cl = run_cltrain(model_path, args, os.path.join(tmp, "report.json"))
            result["cltrain"] = cl
            ratio = cl["ms_per_step"] / pt["ms_per_step"]
            result["ratio_cltrain_over_pytorch"] = ratio
            print()
            print("%-10s %14s %14s   %s" % ("", "median ms/step", "fastest step", "first losses"))
            n = min(3, len(pt["losses"]), len(cl["losses"]))
            for name, r in (("pytorch", pt), ("cltrain", cl)):
                print("%-10s %14.1f %14.1f   %s" % (name, r["ms_per_step"], r["min_ms"],
                                                   " ".join("%.6f" % v for v in r["losses"][:n])))
            result["ratio_fastest_steps"] = cl["min_ms"] / pt["min_ms"]
            print("ratio cltrain/pytorch: %.2f (medians), %.2f (fastest steps)  (cltrain on %s)" %
                  (ratio, result["ratio_fastest_steps"], cl["device"]))
            result["loadavg_end"] = os.getloadavg()
            print("load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end (%d CPUs): "
                  "figures are only as good as the machine is quiet" % (tuple(result["loadavg_start"]) +
                  tuple(result["loadavg_end"]) + (os.cpu_count(),)))
            rels = [abs(a - b) / max(abs(b), 1e-30) for a, b in zip(cl["losses"][:n], pt["losses"][:n])]
            print("relative differences of the first %d losses: %s" % (n, " ".join("%.1e" % r for r in rels)))
            rel = rels[0]
            result["first_loss_relative_difference"] = rel
            result["loss_relative_differences"] = rels
            ok = rel <= args.loss_tol
            print("first-step loss relative difference %.2e (limit %g): %s" % (rel, args.loss_tol,
                  "ok" if ok else "DIFFERENT (a batch that is not cltrain bench's? a model this script reads wrongly?)"))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
        return 0 if ok else 1
    except (RuntimeError, subprocess.CalledProcessError, ValueError) as e:
        print("torch_compare.py: %s" % e, file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
