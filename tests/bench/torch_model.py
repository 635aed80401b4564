"""A circle/tflite model in PyTorch, for torch_compare.py: a minimal flatbuffer reader for the
tables cltrain writes (host/model/schema/circle.fbs), and the same graph built as a torch module
with the same initial weights (NHWC weights in PyTorch's layouts, TFLite's SAME padding, fused
activations, Reshape/FC in NHWC order). PyTorch is imported only by build_torch_model.
"""
import math
import struct


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
