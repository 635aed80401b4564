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
  1. reads the model with a small flatbuffer reader (the tables of host/model/schema/circle.fbs;
     no generated code, no `flatbuffers` package), and builds the same graph in PyTorch with the
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


# ---------------------------------------------------------------------------------------------
# A minimal flatbuffer reader for the circle/tflite tables cltrain writes.
# ---------------------------------------------------------------------------------------------
class Table:
    """One flatbuffer table: fields by their index in the schema (a union takes two: type, value)."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vt_len = struct.unpack_from("<H", buf, vt)[0]
        self.vt = vt

    def _off(self, field):
        o = 4 + 2 * field
        if o >= self.vt_len:
            return 0
        return struct.unpack_from("<H", self.buf, self.vt + o)[0]

    def scalar(self, field, fmt, default=0):
        o = self._off(field)
        return default if o == 0 else struct.unpack_from("<" + fmt, self.buf, self.pos + o)[0]

    def _target(self, field):
        o = self._off(field)
        if o == 0:
            return None
        p = self.pos + o
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def table(self, field):
        t = self._target(field)
        return None if t is None else Table(self.buf, t)

    def string(self, field):
        t = self._target(field)
        if t is None:
            return None
        n = struct.unpack_from("<I", self.buf, t)[0]
        return bytes(self.buf[t + 4:t + 4 + n]).decode("utf-8", "replace")

    def vector(self, field, fmt):
        """A vector of scalars ('i', 'B', ...), as a list; [] when absent."""
        t = self._target(field)
        if t is None:
            return []
        n = struct.unpack_from("<I", self.buf, t)[0]
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.buf, t + 4))

    def bytes_vector(self, field):
        t = self._target(field)
        if t is None:
            return None
        n = struct.unpack_from("<I", self.buf, t)[0]
        return self.buf[t + 4:t + 4 + n]

    def tables(self, field):
        t = self._target(field)
        if t is None:
            return []
        n = struct.unpack_from("<I", self.buf, t)[0]
        out = []
        for i in range(n):
            e = t + 4 + 4 * i
            out.append(Table(self.buf, e + struct.unpack_from("<I", self.buf, e)[0]))
        return out


# BuiltinOperator codes (the format's) of the ops cltrain trains.
ADD, AVERAGE_POOL_2D, CONCATENATION, CONV_2D, DEPTHWISE_CONV_2D = 0, 1, 2, 3, 4
FULLY_CONNECTED, LOGISTIC, MAX_POOL_2D, MUL, RELU, RELU6, RESHAPE = 9, 14, 17, 18, 19, 21, 22
SOFTMAX, TANH, PAD, MEAN, SUB, DIV = 25, 28, 34, 40, 41, 42
OP_NAMES = {ADD: "ADD", AVERAGE_POOL_2D: "AVERAGE_POOL_2D", CONCATENATION: "CONCATENATION", CONV_2D: "CONV_2D",
            DEPTHWISE_CONV_2D: "DEPTHWISE_CONV_2D", FULLY_CONNECTED: "FULLY_CONNECTED", LOGISTIC: "LOGISTIC",
            MAX_POOL_2D: "MAX_POOL_2D", MUL: "MUL", RELU: "RELU", RELU6: "RELU6", RESHAPE: "RESHAPE",
            SOFTMAX: "SOFTMAX", TANH: "TANH", PAD: "PAD", MEAN: "MEAN", SUB: "SUB", DIV: "DIV"}
FLOAT32, INT32 = 0, 2


class CircleModel:
    """tensors: dicts (name, shape, type, data: bytes or None); ops: dicts (code, inputs, outputs, options)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            buf = f.read()
        if len(buf) < 8 or buf[4:8] not in (b"CIR0", b"TFL3"):
            raise ValueError("%s: not a circle/tflite file (identifier %r)" % (path, buf[4:8]))
        model = Table(buf, struct.unpack_from("<I", buf, 0)[0])
        codes = []
        for oc in model.tables(1):  # operator_codes
            dep = oc.scalar(0, "b", 0)
            code = oc.scalar(3, "i", 0)
            codes.append(code if dep == 127 else max(dep, code))
        buffers = []
        for b in model.tables(4):  # buffers
            data = b.bytes_vector(0)
            if data is not None and len(data) > 0:
                buffers.append(bytes(data))
                continue
            off, size = b.scalar(1, "Q", 0), b.scalar(2, "Q", 0)
            buffers.append(bytes(buf[off:off + size]) if off > 1 and size > 0 else None)
        subgraphs = model.tables(2)
        if len(subgraphs) != 1:
            raise ValueError("%s: %d subgraphs (one expected)" % (path, len(subgraphs)))
        sg = subgraphs[0]
        self.tensors = []
        for t in sg.tables(0):
            bi = t.scalar(2, "I", 0)
            self.tensors.append({"shape": t.vector(0, "i"), "type": t.scalar(1, "b", 0),
                                 "name": t.string(3) or "", "data": buffers[bi] if 0 < bi < len(buffers) else None})
        self.inputs = sg.vector(1, "i")
        self.outputs = sg.vector(2, "i")
        self.ops = []
        for op in sg.tables(3):
            code = codes[op.scalar(0, "I", 0)]
            self.ops.append({"code": code, "inputs": op.vector(1, "i"), "outputs": op.vector(2, "i"),
                             "options": op.table(4), "options_type": op.scalar(3, "B", 0)})


# ---------------------------------------------------------------------------------------------
# The model in PyTorch. Rank-4 activations are kept NCHW (PyTorch's layout); everything the
# model says in NHWC terms (axes, paddings, flatten order) is translated.
# ---------------------------------------------------------------------------------------------
NHWC_TO_NCHW_AXIS = {0: 0, 1: 2, 2: 3, 3: 1}


def same_pads(size, k, stride, dilation):
    """TFLite SAME: (before, after), the extra one after (bottom/right)."""
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def build_torch_model(cm, batch):
    import torch
    import torch.nn.functional as F

    def const(i):
        t = cm.tensors[i]
        if t["data"] is None:
            return None
        if t["type"] == FLOAT32:
            n = len(t["data"]) // 4
            return torch.tensor(struct.unpack("<%df" % n, t["data"]), dtype=torch.float32).reshape(t["shape"])
        if t["type"] == INT32:
            n = len(t["data"]) // 4
            return list(struct.unpack("<%di" % n, t["data"]))
        raise ValueError("tensor %s: constant of type %d" % (t["name"], t["type"]))

    def act(x, a):
        if a == 0:
            return x
        if a == 1:
            return F.relu(x)
        if a == 2:
            return torch.clamp(x, -1.0, 1.0)
        if a == 3:
            return F.relu6(x)
        if a == 4:
            return torch.tanh(x)
        raise ValueError("fused activation %d" % a)

    params = torch.nn.ParameterDict()
    steps = []  # closures over a dict of values

    def param(i, layout):
        """The trainable weight tensor i as a Parameter in PyTorch's layout."""
        key = "t%d" % i
        if key not in params:
            w = const(i)
            if layout == "conv":       # [O,KH,KW,I] -> [O,I,KH,KW]
                w = w.permute(0, 3, 1, 2)
            elif layout == "dw":       # [1,KH,KW,C*M] -> [C*M,1,KH,KW]
                w = w.permute(3, 0, 1, 2)
            elif layout == "nchw" and w.dim() == 4:
                w = w.permute(0, 3, 1, 2)
            params[key] = torch.nn.Parameter(w.contiguous().clone())
        return params[key]

    rank = {}  # tensor -> rank of its NHWC shape (4: held NCHW)
    for i in cm.inputs:
        rank[i] = len(cm.tensors[i]["shape"])

    def is4(i):
        return rank.get(i, len(cm.tensors[i]["shape"])) == 4

    def to_nhwc(v, i):
        return v.permute(0, 2, 3, 1) if is4(i) else v

    def operand(i):
        """A value: an activation (looked up at run time) or a float constant (trainable)."""
        if cm.tensors[i]["data"] is not None:
            p = param(i, "nchw")
            return lambda vals: p
        return lambda vals: vals[i]

    for op in cm.ops:
        code, ins, outs, o = op["code"], op["inputs"], op["outputs"], op["options"]
        out = outs[0]
        out_shape = cm.tensors[out]["shape"]
        rank[out] = len(out_shape)
        x = ins[0]
        if code in (CONV_2D, DEPTHWISE_CONV_2D):
            w_shape = cm.tensors[ins[1]]["shape"]
            kh, kw = w_shape[1], w_shape[2]
            in_shape = cm.tensors[x]["shape"]
            if code == CONV_2D:
                padding, sw, sh, a, dw_, dh = (o.scalar(0, "b"), o.scalar(1, "i"), o.scalar(2, "i"), o.scalar(3, "b"),
                                              o.scalar(4, "i", 1), o.scalar(5, "i", 1))
                w, groups = param(ins[1], "conv"), 1
            else:
                padding, sw, sh, a, dw_, dh = (o.scalar(0, "b"), o.scalar(1, "i"), o.scalar(2, "i"), o.scalar(4, "b"),
                                              o.scalar(5, "i", 1), o.scalar(6, "i", 1))
                w, groups = param(ins[1], "dw"), in_shape[3]
            b = param(ins[2], "vec") if len(ins) > 2 and ins[2] >= 0 else None
            if padding == 0:
                pt, pb = same_pads(in_shape[1], kh, sh, dh)
                pl, pr = same_pads(in_shape[2], kw, sw, dw_)
            else:
                pt = pb = pl = pr = 0
            sym = pt == pb and pl == pr

            def f(vals, x=x, w=w, b=b, s=(sh, sw), d=(dh, dw_), g=groups, p=(pt, pb, pl, pr), sym=sym, a=a):
                v = vals[x]
                if sym:
                    return act(F.conv2d(v, w, b, s, (p[0], p[2]), d, g), a)
                return act(F.conv2d(F.pad(v, (p[2], p[3], p[0], p[1])), w, b, s, 0, d, g), a)
        elif code == FULLY_CONNECTED:
            w = param(ins[1], "fc")
            b = param(ins[2], "vec") if len(ins) > 2 and ins[2] >= 0 else None
            a = o.scalar(0, "b") if o else 0
            k = cm.tensors[ins[1]]["shape"][1]

            def f(vals, x=x, w=w, b=b, a=a, k=k, x4=is4(x)):
                v = vals[x].permute(0, 2, 3, 1) if x4 else vals[x]
                return act(F.linear(v.reshape(-1, k), w, b), a)
        elif code in (MAX_POOL_2D, AVERAGE_POOL_2D):
            padding, sw, sh, fw, fh, a = (o.scalar(0, "b"), o.scalar(1, "i"), o.scalar(2, "i"), o.scalar(3, "i"),
                                          o.scalar(4, "i"), o.scalar(5, "b"))
            in_shape = cm.tensors[x]["shape"]
            if padding == 0:
                pt, pb = same_pads(in_shape[1], fh, sh, 1)
                pl, pr = same_pads(in_shape[2], fw, sw, 1)
            else:
                pt = pb = pl = pr = 0

            def f(vals, x=x, k=(fh, fw), s=(sh, sw), p=(pl, pr, pt, pb), a=a, avg=code == AVERAGE_POOL_2D):
                v = vals[x]
                if not any(p):
                    return act((F.avg_pool2d if avg else F.max_pool2d)(v, k, s), a)
                if not avg:
                    return act(F.max_pool2d(F.pad(v, p, value=-math.inf), k, s), a)
                # TFLite averages over the window's elements inside the input only.
                ones = torch.ones((1, 1) + tuple(v.shape[2:]), dtype=v.dtype)
                return act(F.avg_pool2d(F.pad(v, p), k, s) / F.avg_pool2d(F.pad(ones, p), k, s), a)
        elif code == MEAN:
            axes = [ax % rank[x] for ax in const(ins[1])]
            keep = bool(o.scalar(0, "B")) if o else False
            if is4(x) and keep:
                dims = tuple(NHWC_TO_NCHW_AXIS[ax] for ax in axes)

                def f(vals, x=x, dims=dims):
                    return vals[x].mean(dim=dims, keepdim=True)
            else:
                def f(vals, x=x, axes=tuple(axes), keep=keep, x4=is4(x)):
                    v = vals[x].permute(0, 2, 3, 1) if x4 else vals[x]
                    return v.mean(dim=axes, keepdim=keep)
        elif code == PAD:
            pads = const(ins[1])  # [rank, 2], NHWC
            r = rank[x]
            pairs = [(pads[2 * d], pads[2 * d + 1]) for d in range(r)]
            if r == 4:
                pairs = [pairs[0], pairs[3], pairs[1], pairs[2]]  # N C H W
            flat = []
            for before, after in reversed(pairs):
                flat += [before, after]

            def f(vals, x=x, flat=tuple(flat)):
                return F.pad(vals[x], flat)
        elif code in (ADD, SUB, MUL, DIV):
            a = o.scalar(0, "b") if o else 0
            fa, fb = operand(ins[0]), operand(ins[1])
            fn = {ADD: torch.add, SUB: torch.sub, MUL: torch.mul, DIV: torch.div}[code]

            def f(vals, fa=fa, fb=fb, fn=fn, a=a):
                return act(fn(fa(vals), fb(vals)), a)
        elif code in (RELU, RELU6, TANH, LOGISTIC):
            fn = {RELU: F.relu, RELU6: F.relu6, TANH: torch.tanh, LOGISTIC: torch.sigmoid}[code]

            def f(vals, x=x, fn=fn):
                return fn(vals[x])
        elif code == SOFTMAX:
            beta = o.scalar(0, "f", 0.0) if o else 1.0
            dim = 1 if is4(x) else -1

            def f(vals, x=x, beta=beta, dim=dim):
                v = vals[x]
                return F.softmax(v * beta if beta != 1.0 else v, dim=dim)
        elif code == RESHAPE:
            target = [-1] + list(out_shape[1:])

            def f(vals, x=x, target=target, x4=is4(x), o4=len(out_shape) == 4):
                v = vals[x].permute(0, 2, 3, 1) if x4 else vals[x]
                v = v.reshape(target)
                return v.permute(0, 3, 1, 2) if o4 else v
        elif code == CONCATENATION:
            axis = o.scalar(0, "i") % rank[x]
            a = o.scalar(1, "b")
            dim = NHWC_TO_NCHW_AXIS[axis] if is4(x) else axis
            fs = [operand(i) for i in ins]

            def f(vals, fs=fs, dim=dim, a=a):
                return act(torch.cat([g(vals) for g in fs], dim=dim), a)
        else:
            raise ValueError("op %s (code %d) is not in this script" % (OP_NAMES.get(code, "?"), code))
        steps.append((out, f))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = params

        def forward(self, x):
            vals = {cm.inputs[0]: x}
            for out, f in steps:
                vals[out] = f(vals)
            v = vals[cm.outputs[0]]
            return v.permute(0, 2, 3, 1) if is4(cm.outputs[0]) else v

    return Net()


# ---------------------------------------------------------------------------------------------
# cltrain bench's batch (host/cli/bench_command.cc), bit for bit with libstdc++.
# ---------------------------------------------------------------------------------------------
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
