"""Dump operators/tensors/options of .tflite files.  usage: dump.py a.tflite ..."""
import sys, collections
import numpy as np
from tensorflow.lite.python import schema_py_generated as S
from tensorflow.lite.tools import flatbuffer_utils as fu

OPN = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
TTN = {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}
OPTN = {v: k for k, v in vars(S.BuiltinOptions).items() if not k.startswith("_")}
ACTN = {v: k for k, v in vars(S.ActivationFunctionType).items() if not k.startswith("_")}


def opname(model, op):
    oc = model.operatorCodes[op.opcodeIndex]
    code = max(oc.builtinCode, oc.deprecatedBuiltinCode)
    n = OPN.get(code, str(code))
    if n == "CUSTOM":
        n = "CUSTOM:" + (oc.customCode.decode() if oc.customCode else "?")
    return n, oc.version


def fmt_opts(o):
    if o is None:
        return ""
    d = {}
    for k, v in vars(o).items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if k == "fusedActivationFunction":
            v = ACTN.get(v, v)
        if isinstance(v, (bytes, bytearray)):
            v = v.decode(errors="replace")
        d[k] = v
    return " ".join(f"{k}={v}" for k, v in d.items())


def tinfo(model, sg, ti):
    if ti < 0:
        return "-", None
    t = sg.tensors[ti]
    shp = t.shape.tolist() if t.shape is not None else []
    sig = t.shapeSignature.tolist() if t.shapeSignature is not None else None
    buf = model.buffers[t.buffer]
    const = buf is not None and ((buf.data is not None and len(buf.data) > 0) or buf.offset > 1)
    s = f"t{ti}:{TTN[t.type]}{shp}"
    if sig is not None and sig != shp:
        s += f"sig{sig}"
    val = None
    if const:
        s += "C"
        if buf.data is not None:
            arr = np.frombuffer(bytes(buf.data), dtype={S.TensorType.INT32: np.int32,
                    S.TensorType.FLOAT32: np.float32, S.TensorType.INT64: np.int64,
                    S.TensorType.BOOL: np.bool_}.get(t.type, np.uint8))
            if arr.size <= 8:
                val = arr.tolist()
                s += f"={val}"
    return s, const


def dump(path):
    model = fu.read_model(path)
    print(f"##### {path}  version={model.version} subgraphs={len(model.subgraphs)} buffers={len(model.buffers)}")
    for sgi, sg in enumerate(model.subgraphs):
        name = sg.name.decode() if sg.name else ""
        print(f"--- subgraph {sgi} '{name}': {len(sg.operators)} ops, {len(sg.tensors)} tensors")
        print("  inputs:", [tinfo(model, sg, i)[0] for i in sg.inputs])
        print("  outputs:", [tinfo(model, sg, i)[0] for i in sg.outputs])
        counts = collections.Counter()
        dtypes = collections.defaultdict(set)
        readers = collections.defaultdict(list)
        producer = {}
        for oi, op in enumerate(sg.operators):
            n, ver = opname(model, op)
            counts[n] += 1
            ins = [tinfo(model, sg, i) for i in op.inputs]
            outs = [tinfo(model, sg, i)[0] for i in op.outputs]
            for i in list(op.inputs) + list(op.outputs):
                if i >= 0:
                    dtypes[n].add(TTN[sg.tensors[i].type])
            for i, (s, c) in zip(op.inputs, ins):
                if c:
                    readers[i].append(oi)
            for i in op.outputs:
                producer[i] = oi
            opt = fmt_opts(op.builtinOptions)
            if op.builtinOptions2 is not None:
                opt += " | " + fmt_opts(op.builtinOptions2)
            print(f"  [{oi:3d}] {n} v{ver}  in=({', '.join(s for s, _ in ins)})  out=({', '.join(outs)})"
                  + (f"  {{{opt}}}" if opt else ""))
        print("  op counts:", ", ".join(f"{k}x{v}" for k, v in counts.most_common()))
        print("  distinct:", len(counts))
        for k in sorted(counts):
            print(f"    {k:28s} {counts[k]:4d}  {sorted(dtypes[k])}")
        shared = {i: r for i, r in readers.items() if len(r) > 1}
        print("  const tensors read by >1 op:")
        for i, r in shared.items():
            t = sg.tensors[i]
            print(f"    t{i} '{t.name.decode()}' {TTN[t.type]}{t.shape.tolist()} read by ops {r} "
                  f"({[opname(model, sg.operators[j])[0] for j in r]})")
        # const buffers shared by distinct tensors
        bt = collections.defaultdict(list)
        for i, t in enumerate(sg.tensors):
            b = model.buffers[t.buffer]
            if b is not None and b.data is not None and len(b.data) > 0:
                bt[t.buffer].append(i)
        sb = {b: ts for b, ts in bt.items() if len(ts) > 1}
        print("  buffers shared by >1 tensor:", sb if sb else "none")
        print("  non-float tensors (producer -> consumers):")
        for i, t in enumerate(sg.tensors):
            if t.type == S.TensorType.FLOAT32:
                continue
            cons = [j for j, op in enumerate(sg.operators) if i in op.inputs]
            p = producer.get(i)
            pn = f"[{p}]{opname(model, sg.operators[p])[0]}" if p is not None else (
                "INPUT" if i in sg.inputs else "const")
            cn = [f"[{j}]{opname(model, sg.operators[j])[0]}" for j in cons]
            print(f"    {tinfo(model, sg, i)[0]} '{t.name.decode()[:60]}' {pn} -> {cn}")
    if model.signatureDefs:
        for s in model.signatureDefs:
            print("  signature:", s.signatureKey, [x.name for x in s.inputs], [x.name for x in s.outputs])


for p in sys.argv[1:]:
    dump(p)
    print()
