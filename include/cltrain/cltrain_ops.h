/* cltrain — the one op list, and what each op's steps are.
 *
 * Every op the runtime knows is one line of CLTRAIN_OP_LIST. The host's op descriptors
 * (host/ops/), each backend's supports() and dispatch, and the op test suite are all built from
 * this list, so they cannot drift apart.
 *
 *   X(ENUM, "Name", tflite_builtin_code, kind)
 *     tflite_builtin_code: the BuiltinOperator value in tflite/circle models, -1 for ops that the
 *                          training graph adds (losses, accumulation, optimizer updates).
 *     kind: CLTRAIN_KIND_MODEL (a model operator with forward and backward steps),
 *           CLTRAIN_KIND_LOSS (forward computes the loss, backward the gradient of the prediction),
 *           CLTRAIN_KIND_GRAPH (a step the training graph inserts, backward phase only),
 *           CLTRAIN_KIND_UPDATE (an optimizer update, update phase only).
 *
 * Append only: the enum values cross the plugin ABI (cltrain_backend.h). A plugin that does not
 * know an op refuses it in supports(), and the host runs it on the next backend.
 *
 * Each op's steps, below, in the form
 *   fwd in [...] out [...]; bwd in [...] out [...]: the tensor ids a step reads and writes (-1 where
 *       an optional tensor is absent), in slot order;
 *   in place: the pairs whose bytes the host may make one (tensor_desc.alias), which a backend
 *       must then compute correctly in place; the host only pairs a tensor that is dead after the
 *       step where it is overwritten;
 *   numerics: the order of every rounding, beyond the general rules of cltrain_backend.h
 *       ("Numerics"). The CPU backend computes exactly so, and so must every kernel that is to
 *       agree with it bitwise on a device that rounds exactly.
 *
 * FULLY_CONNECTED  fwd in [x, W, b] out [y]: y = act(x W^T + b); W [M, K], x viewed as [N, K],
 *     y as [N, M]. bwd in [x, W, y, dy] out [dx, dW, db]: y is -1 when the activation is NONE, x
 *     -1 when dW is -1; dx, dW, db may each be -1 (not needed).
 *     numerics: y = act(acc + b) with acc the dot product over k; dz = act'(y) applied to dy;
 *     dx[n,k] = dot over m of dz[n,m] W[m,k]; dW[m,k] = dot over n of dz[n,m] x[n,k];
 *     db[m] = sum over n of dz[n,m].
 * CONV_2D  fwd in [x, W, b] out [y]: x [N,H,W,I], W [O,KH,KW,I], y [N,OH,OW,O]. bwd in [x, W, y, dy]
 *     out [dx, dW, db] as FULLY_CONNECTED; when params.dx_activation != NONE, x is the output of a
 *     producer with that fused activation and dx = act'(x) applied to the input gradient (the
 *     producer's backward then gets activation NONE): x is then given even when dW is -1.
 *     in place: bwd dx with x when params.dx_activation != NONE (every read of x, for dW and for
 *     the mask, comes before dx is written where they overlap).
 *     numerics: acc = dot over (kh, kw, i) in that nesting (i fastest) of x[n,ih,iw,i] *
 *     W[o,kh,kw,i], positions outside x skipped; y = act(acc + b[o]). dW[o,kh,kw,i] = dot over
 *     (n, oh, ow) of dz[n,oh,ow,o] * x[n,ih,iw,i] (outside: skipped); db[o] = sum over (n, oh, ow)
 *     of dz; dx[n,ih,iw,i] = sum over (kh, kw) in order, for the (oh, ow) that reach (ih, iw) with
 *     them, of (dot over o of dz[n,oh,ow,o] * W[o,kh,kw,i]).
 * TRANSPOSE_CONV  fwd in [x, W, b] out [y]: x [N,H,W,I], W [O,KH,KW,I], y [N,OH,OW,O] (the
 *     file's output_shape; b optional): the transpose of the CONV_2D from y's shape to x's with the
 *     same weights, padding and strides (no dilation): output position oh reads input ih where
 *     oh = ih * stride_h - pad_top + kh (pad_top as CONV_2D's over an input of OH rows). bwd in
 *     [x, W, y, dy] out [dx, dW, db] (y only with a fused activation; x only for dW).
 *     numerics, with dz = act'(y) dy: acc = dot over (kh, kw, i) in that nesting (i fastest) of
 *     x[n,ih,iw,i] * W[o,kh,kw,i] over the taps whose (ih, iw) is whole and inside x; y = act(acc +
 *     b[o]). dx[n,ih,iw,i] = dot over (kh, kw, o) (o fastest) of dz[n,oh,ow,o] * W[o,kh,kw,i],
 *     positions outside y skipped; dW[o,kh,kw,i] = dot over (n, ih, iw) of dz[n,oh,ow,o] *
 *     x[n,ih,iw,i] (outside y: skipped); db[o] = sum over (n, oh, ow) of dz, s = s + dz.
 * RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR  fwd in [x] out [y]: x [N,H,W,C], y [N,OH,OW,C]
 *     (Keras UpSampling2D(interpolation="bilinear"), tf.image.resize, PyTorch's interpolate), as
 *     TFLite's reference kernels with params.align_corners and params.half_pixel_centers. bwd in
 *     [dy] out [dx]. Per axis (in extent I, out extent O), in float: s = align_corners && O > 1 ?
 *     (float)(I - 1) / (float)(O - 1) : (float)I / (float)O. BILINEAR: f = half_pixel_centers ?
 *     ((float)o + 0.5f) * s - 0.5f : (float)o * s; lo = max(floor(f), 0), hi = min(ceil(f), I - 1),
 *     t = f - lo; y = x[lo_h,lo_w] * (1 - t_h) * (1 - t_w) + x[hi_h,lo_w] * t_h * (1 - t_w) +
 *     x[lo_h,hi_w] * (1 - t_h) * t_w + x[hi_h,hi_w] * t_h * t_w (left to right). NEAREST: i = (int)
 *     (align_corners ? round : floor)(((float)o + (half_pixel_centers ? 0.5f : 0)) * s), then min(i,
 *     I - 1) and, with half_pixel_centers, max(i, 0).
 *     numerics: dx[n,ih,iw,c] = s + g over the output positions (oh, ow) in increasing order and,
 *     per position, the terms above in their order whose corner is (ih, iw), g = dy[n,oh,ow,c] *
 *     (1 - t_h or t_h) * (1 - t_w or t_w) (NEAREST: dy).
 * DEPTHWISE_CONV_2D  as CONV_2D with W [1,KH,KW,I*M] (M = depth_multiplier); output channel c*M + j
 *     reads input channel c. numerics: forward dot over (kh, kw); dx[n,ih,iw,c] = sum over (kh, kw)
 *     of (dot over j of dz[.., c*M+j] * W[.., c*M+j]).
 * MAX_POOL_2D  fwd in [x] out [y] or out [y, argmax]: argmax (optional, UINT8, shaped as y) =
 *     kh * filter_w + kw of the window's first maximum; windows never read padding. bwd in
 *     [x, dy, argmax, y] out [dx]: dy goes to the first maximum of each window (in window order),
 *     found from x, or from argmax when x is -1; with params.dx_activation != NONE (y given), dx =
 *     act'(x) applied as well, computed as act'(y) of each window (y = x at the window's maximum).
 *     numerics: max over the window in (kh, kw) order, the first maximum wins; dx[n,ih,iw,c] = sum
 *     over the windows (oh, ow) in increasing order that take (ih, iw) as their first maximum of dy.
 * AVERAGE_POOL_2D  fwd in [x] out [y]; bwd in [dy] out [dx]. numerics: (sum over the window's
 *     positions inside the input) / count; dx = sum over the windows in increasing order that take
 *     (ih, iw) of (dy / count).
 * MEAN  fwd in [x] out [y]; bwd in [dy] out [dx]; params.axes_mask, keep_dims. numerics: y = (sum in
 *     increasing flat index order) / count; dx = dy / count.
 * SUM  as MEAN without the divide (torch.sum, tf.reduce_sum): y = sum in increasing flat index
 *     order; dx = dy (exact).
 * PAD  fwd in [x] out [y] (zeros around, params.pad_before/pad_after); bwd in [dy] out [dx] (the crop).
 * TRANSPOSE  fwd in [x] out [y]: y's axis d is x's axis params.perm[d] (rank <= 6); bwd in [dy] out
 *     [dx], the inverse permutation of dy. Copies only: exact.
 * TILE  fwd in [x] out [y]: y's dim d is m_d times x's (m_d = y.dims[d] / x.dims[d], rank <= 6;
 *     params.axes_mask has bit d where m_d > 1), y[i] = x[i_d mod x.dims[d] per axis] (Keras'
 *     UpSampling1D/2D: EXPAND_DIMS, TILE, RESHAPE). bwd in [dy] out [dx]: per element of dx, the
 *     sum (s = 0; s = s + dy) of the dy elements that copied it, in increasing flat index of y.
 * GATHER  fwd in [table, ids] out [y]: table [V, ...] float32, ids INT32 of any shape, y = ids' shape
 *     followed by table's dims after the first: y[i, ...] = table[r(ids[i]), ...] with r(k) = k < 0 ? k + V
 *     : k (negative ids count from the end, as the index guard of Keras' Embedding does); an id with
 *     r(k) outside [0, V) gives a row of NaN (TensorFlow fails there; the host then stops at the loss).
 *     bwd in [dy, ids] out [dtable, dsq]: dsq (optional) the sum of the squared rows, for Adam's v as
 *     Keras takes an Embedding's gradient (per-id rows, IndexedSlices). numerics: dtable[r, j] = sum
 *     over i in increasing order of the dy[i, j] with r(ids[i]) = r (s = 0; s = s + dy, only for
 *     those i); dsq[r, j] the same sum of (dy[i, j] * dy[i, j]); 0 for rows no id reads.
 * BATCH_MATMUL  fwd in [x, y] out [z]: x [..., M, K], y [..., K, N] with the same leading dims,
 *     z [..., M, N] (no adjoints). bwd in [x, y, dz] out [dx, dy]: x is -1 when dy is -1, y -1 when
 *     dx is -1; dx, dy may each be -1. numerics: z[.., m, n] = dot over k of x[.., m, k] * y[.., k, n];
 *     dx[.., m, k] = dot over n of dz[.., m, n] * y[.., k, n]; dy[.., k, n] = dot over m of
 *     x[.., m, k] * dz[.., m, n].
 * ADD, SUB, MUL, DIV  fwd in [a, b] out [y]: y = act(a op b), numpy broadcasting (a, b, y of equal
 *     rank; a size-1 dimension broadcasts). bwd in [a, b, y, dy] out [da, db]: a and b are -1 where
 *     not read (ADD, SUB read neither; MUL reads both; DIV reads b, and a for db); y is -1 when the
 *     activation is NONE; gradients are summed over the axes their input was broadcast along.
 *     numerics, per element of y with g = dz: ADD da += g, db += g; SUB da += g, db += -g; MUL
 *     da += g * b, db += g * a; DIV da += g / b, db += -((g * a) / (b * b)); each gradient element
 *     sums its contributions in increasing flat index of y.
 * SQUARED_DIFFERENCE  fwd in [a, b] out [y]: t = a - b, y = t * t, broadcasting as ADD (no fused
 *     activation). bwd in [a, b, -1, dy] out [da, db] (reads both operands for either gradient).
 *     numerics, per element of y: u = 2 * (a - b); da += dy * u; db += -(dy * u); summed as ADD's.
 * MAXIMUM, MINIMUM  fwd in [a, b] out [y]: y = a >= b ? a : b (MINIMUM: a <= b), broadcasting as
 *     ADD (no fused activation). bwd in [a, b, -1, dy] out [da, db]: the gradient goes to a where
 *     a >= b (a <= b), else to b, as TensorFlow's gradient does (a tie goes to a whole); summed as
 *     ADD's.
 * GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, EQUAL, NOT_EQUAL  fwd in [a, b] out [y]: y = 1 where
 *     a > b (>=, <, <=, ==, !=), else 0, as float32 (the file's bool tensor as a 0/1 mask that
 *     SELECT_V2 reads, passes/compares.cc), broadcasting as ADD (no fused activation). No backward:
 *     y is piecewise constant, so no gradient flows through it (the training graph gives y none).
 * RELU, RELU6, TANH, LOGISTIC  fwd in [x] out [y]; bwd in [y, dy] out [dx]. in place: fwd y with x,
 *     bwd dx with dy. numerics: RELU dz = y > 0 ? dy : 0; RELU6 dz = (y > 0 && y < 6) ? dy : 0;
 *     TANH e = clt_exp(-2|x|), t = (1 - e) / (1 + e), y = x < 0 ? -t : t, dz = dy * (1 - y * y);
 *     LOGISTIC y = 1 / (1 + clt_exp(-x)), dz = dy * (y * (1 - y)).
 * RESHAPE  fwd in [x] out [y] (same element count); bwd in [dy] out [dx]. in place: fwd y with x,
 *     bwd dx with dy (the step then copies nothing).
 * SOFTMAX  fwd in [x] out [y] over the last dimension, params.beta; bwd in [y, dy] out [dx].
 *     numerics, per row: t_i = beta * x_i; mx = max_i t_i; e_i = clt_exp(t_i - mx); s = sum of
 *     e_i; y_i = e_i / s. Backward: d = sum of (dy_i * y_i) (products rounded, then summed);
 *     dx_i = beta * (y_i * (dy_i - d)).
 * LOG_SOFTMAX  fwd in [x] out [y] over the last dimension; bwd in [y, dy] out [dx]. numerics, per
 *     row: mx = max x_i (fmax from x_0, as SOFTMAX); s = sum of clt_exp(x_i - mx); g = clt_log(s);
 *     y_i = (x_i - mx) - g. Backward: d = sum of dy_i; dx_i = dy_i - clt_exp(y_i) * d. (With
 *     LOSS_CCE_LOGITS over y it trains as PyTorch's log_softmax + NLLLoss: softmax(y) = exp(y).)
 * CONCATENATION  fwd in [x0, x1, ...] out [y] along params.axis; bwd in [dy] out [dx0, dx1, ...]
 *     (each may be -1); params.concat_extents gives each input's extent along the axis.
 * NEG  fwd in [x] out [y]: y = -x; bwd in [dy] out [dx]: dx = -dy. in place: fwd y with x, bwd dx with
 *     dy.
 * RSQRT  fwd in [x] out [y]: y = 1 / clt_sqrt(x); bwd in [y, dy] out [dx]: dx = (-0.5 * dy) * ((y *
 *     y) * y) (as TensorFlow's RsqrtGrad). in place: bwd dx with dy.
 * HARD_SWISH  fwd in [x] out [y]: y = x * relu6(x + 3) / 6; bwd in [x, dy] out [dx] (the derivative
 *     needs x: y does not determine it). in place: bwd dx with dy.
 *     numerics: t = x + 3; r = t < 0 ? 0 : t; r = r > 6 ? 6 : r; y = (x * r) / 6. dx = -3 < x < 3 ?
 *     dy * ((2 * x + 3) / 6) : (x >= 3 ? dy : 0) (the derivative of relu6 is 0 at its kinks, as
 *     TensorFlow takes it).
 * REDUCE_MAX, REDUCE_MIN  fwd in [x] out [y]: the largest (smallest) x over the axes of
 *     params.axes_mask, keep_dims as MEAN; bwd in [x, y, dy] out [dx]: the gradient split evenly
 *     among the elements equal to their y, as TensorFlow's gradient (and PyTorch's amax) does.
 *     numerics: y = the first element in increasing flat index, then y = x > y ? x : y (MIN: x < y);
 *     n = the count of x == y in the group; dx = x == y ? (1 / n) * dy : 0.
 * PADV2  fwd in [x] out [y]: as PAD, with params.pad_value (any float, -inf included: a padded
 *     max-pool's) in place of zeros; bwd in [dy] out [dx]: the box, as PAD's. Copies only: exact.
 *     (Its own op, not a PAD param: a plugin that does not know the value refuses the op.)
 * GELU  fwd in [x] out [y]: y = x * Phi(x), Phi the standard normal CDF; bwd in [x, dy] out [dx].
 *     in place: bwd dx with dy. params.approximate 0 (exact): numerics z = x * 0.70710678;
 *     e = clt_erf(z); y = (0.5 * x) * (1 + e); dx = dy * (0.5 * (1 + e) + x * (clt_exp((-0.5 * x)
 *     * x) * 0.39894228)). approximate 1 (tanh, as PyTorch's approximate="tanh" and Keras's
 *     approximate=True): u = 0.7978846 * (x + 0.044715 * ((x * x) * x)); t = clt_tanh(u);
 *     y = (0.5 * x) * (1 + t); dx = dy * (0.5 * (1 + t) + (0.5 * x) * ((1 - t * t) * (0.7978846 *
 *     (1 + 0.134145 * (x * x))))).
 * LEAKY_RELU, ELU, ABS, SQUARE, EXP, SQRT, LOG  fwd in [x] out [y]; bwd in [x, dy] out [dx] (the
 *     derivative from x, as for GELU). in place: bwd dx with dy. numerics (kernels/numerics.h,
 *     clt_pointwise and clt_pointwise_grad): LEAKY_RELU y = x > 0 ? x : alpha * x (params.alpha,
 *     LeakyReluOptions.alpha), dx = x > 0 ? dy : alpha * dy; ELU y = x > 0 ? x : clt_expm1(x),
 *     dx = x > 0 ? dy : dy * clt_exp(x); ABS y = |x|, dx = x > 0 ? dy : (x < 0 ? -dy : 0);
 *     SQUARE y = x * x, dx = dy * (2 * x); EXP y = clt_exp(x), dx = dy * clt_exp(x); SQRT
 *     y = clt_sqrt(x), dx = (0.5 * dy) / clt_sqrt(x); LOG y = clt_log_any(x) (NaN below 0, -inf at 0),
 *     dx = dy / x.
 * LOSS_MSE, LOSS_CCE  fwd in [pred, expected] out [loss] (one element); bwd in [pred, expected]
 *     out [dpred]. Reduction: SUM_OVER_BATCH_SIZE divides the sum over samples by the batch N
 *     (dims[0] of pred), SUM does not; the backward includes the same scale.
 *     numerics: CCE l = sum over all elements, batch-major, of (-e * clt_log(pc)) with
 *     pc = min(max(p, 1e-7), 1 - 1e-7) as selects (NaN stays NaN); loss = l / N or l;
 *     dpred = (-e / pc) / N or (-e / pc), 0 where p != pc. MSE per sample of K elements:
 *     q = sum of (d * d) with d = p - e; then l = sum over samples of (q / K); loss = l / N or l;
 *     dpred = (2 * d) / K, then / N.
 * LOSS_CCE_LOGITS  as LOSS_CCE, with pred the logits z: the cross-entropy of softmax(z) over
 *     pred's last dimension (a row of C classes), as Keras's from_logits=True and PyTorch's
 *     CrossEntropyLoss take it. numerics, per row in increasing index: m = z_0, then m = z > m ?
 *     z : m; t_i = z_i - m; s = sum of clt_exp(t_i); g = clt_log(s); l = l + (-e_i) * (t_i - g)
 *     over the rows in order, then loss = l / N or l. Backward, per row: se = sum of e_i; dz_i =
 *     (clt_exp(t_i) / s) * se - e_i, then / N (the exact derivative; softmax(z) - e for one-hot e).
 * LSTM_CELL_STATE  fwd in [z, c_prev] out [c]: one LSTM step's cell state from its gate
 *     pre-activations z [.., 4H] (four parts of H along the last axis) and c_prev [.., H];
 *     params.perm[0..3] the part of the input, forget, cell and output gate (Keras's and PyTorch's
 *     order is 0, 1, 2, 3). Made by a training pass from the graph a converter writes (SLICE, three
 *     LOGISTIC, two TANH, three MUL, one ADD): never in a file. bwd in [z, c_prev, dc, dz_in] out
 *     [dz, dc_prev]: dz's input, forget and cell parts computed, its output part dz_in's (0 where
 *     dz_in is -1; the graph passes LSTM_CELL_OUTPUT's dz as both dz_in and dz); dc_prev may be -1.
 *     numerics restate the unfused ops (LOGISTIC, TANH, MUL, ADD above): i = 1 / (1 + clt_exp(-zi))
 *     and f, g = clt_tanh(zg); c = f * c_prev + i * g (two products, one sum). Backward, from i, f,
 *     g recomputed: dzi = (dc * g) * (i * (1 - i)); dzf = (dc * c_prev) * (f * (1 - f));
 *     dzg = (dc * i) * (1 - g * g); dc_prev = dc * f.
 * LSTM_CELL_OUTPUT  fwd in [z, c] out [h]: h = o * clt_tanh(c) with o = 1 / (1 + clt_exp(-zo));
 *     params as LSTM_CELL_STATE. bwd in [z, c, dh, dc_in] out [dz, dc]: dz's output part
 *     dzo = (dh * t) * (o * (1 - o)) with t = clt_tanh(c), its other parts 0; dc = (dh * o) *
 *     (1 - t * t), plus dc_in where given (dc_in + that, one rounding: the graph passes c's
 *     gradient so far as both dc_in and dc, as ACCUMULATE would add it).
 * GRU_CELL  fwd in [xp, hp, h_prev] out [h]: one GRU step (Keras's reset_after=True, PyTorch's
 *     form) from the input's and the state's projections xp, hp [.., 3H] (three parts of H along
 *     the last axis) and h_prev [.., H]; params.perm[0..2] the part of the update, reset and
 *     candidate gate in xp, perm[3..5] in hp. Made by a training pass as the LSTM cells are.
 *     bwd in [xp, hp, h_prev, dh] out [dxp, dhp, dh_prev] (each may be -1).
 *     numerics restate the unfused ops: z = clt_logistic(xz + hz); r = clt_logistic(xr + hr);
 *     n = clt_tanh(xn + r * hn); h = z * h_prev + (1 - z) * n. Backward, from z, r, n
 *     recomputed: an = (dh * (1 - z)) * (1 - n * n); ar = (an * hn) * (r * (1 - r)); az =
 *     (dh * h_prev + -(dh * n)) * (z * (1 - z)); dxp = [az, ar, an]; dhp = [az, ar, an * r];
 *     dh_prev = dh * z.
 * SLICE  fwd in [x] out [y]: y = x less params.pad_before[d] elements at the start and
 *     pad_after[d] at the end of each axis d (PAD's inverse), y's dims those of the crop with any
 *     of its size-1 axes dropped (same element order); bwd in [dy] out [dx]: dx = dy where x was
 *     kept, 0 elsewhere. Copies only: exact. (Loaded from SLICE, STRIDED_SLICE with unit strides,
 *     SPLIT and UNPACK: one SLICE per output.)
 * FILL  fwd in [] out [y]: every element params.fill_value (an RNN's zero state, of the shape
 *     the batch gives). No backward: its operands (the dims, the value) are constants.
 * ACCUMULATE  bwd in [a] out [acc]: acc += a (acc is read and written).
 * ACCUMULATE_BOX  bwd in [a] out [acc]: acc += a in the box of acc that params.pad_before /
 *     pad_after leave (SLICE's cuts; a holds the box, its size-1 axes may be dropped), acc
 *     elsewhere unchanged (read and written). The backward of a SLICE whose x already has a
 *     gradient: one step and no whole-tensor disposable where SLICE's backward and an ACCUMULATE
 *     were two (a SPLIT's or UNPACK's parts). numerics: acc + a, one rounding per element.
 * ACCUMULATE_FC_GRADS  bwd in [x, dz] out [dW, db]: dW [M, K] += dz^T x and db [M] += the column
 *     sums of dz, with x viewed as [N, K] and dz as [N, M] (dz: FULLY_CONNECTED's dy after its
 *     backward applied the activation's derivative in place); dW or db may be -1. The weight
 *     gradients of a FULLY_CONNECTED whose weight already has a gradient (a recurrent step's
 *     shared W, U and bias): one step into the gradient, where a disposable and an ACCUMULATE
 *     were two. numerics: each sum as FULLY_CONNECTED's dW and db (over n in increasing order),
 *     then acc + sum, one rounding per element (what an ACCUMULATE of the disposable gave).
 * CHECK_FINITE  bwd in [x0, x1, ...] (1 to 8 float32 tensors) out [flag] (one float32 element,
 *     read and written): flag = 1 where any element of any input is NaN or +-Inf (exponent bits all
 *     set), else flag unchanged. The training graph sets flag to 0 (FILL) and checks the loss and
 *     every gradient before the first update: the host reads flag once and runs the updates only
 *     when it is 0 (a transactional step).
 * UPDATE_SGD  update in [grad] out [W]: W = W - lr * g.
 * UPDATE_ADAM  update in [grad] out [W, m, v] (t = run_args.iteration).
 *     UPDATE_ADAM_SQUARES  update in [grad, gsq] out [W, m, v]: Adam with GATHER's dsq in place of
 *     g * g in v (an embedding table, as Keras updates it).
 *     numerics: step = (float)((double)lr * sqrt(1 - b2^t) / (1 - b1^t)) computed in double;
 *     m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * (g * g) (with (1 - b1), (1 - b2) rounded
 *     to float first); W = W - (step * m) / (sqrt(v) + eps).
 *     Both updates: when params.update_count > 0 only elements [update_offset, update_offset +
 *     update_count) of W (and of grad) are updated; Adam's m and v then have update_count elements.
 */
#ifndef CLTRAIN_OPS_H
#define CLTRAIN_OPS_H

#define CLTRAIN_KIND_MODEL 0
#define CLTRAIN_KIND_LOSS 1
#define CLTRAIN_KIND_GRAPH 2
#define CLTRAIN_KIND_UPDATE 3

#define CLTRAIN_OP_LIST(X)                                                       \
  X(FULLY_CONNECTED, "FullyConnected", 9, CLTRAIN_KIND_MODEL)                    \
  X(RELU, "ReLU", 19, CLTRAIN_KIND_MODEL)                                        \
  X(RESHAPE, "Reshape", 22, CLTRAIN_KIND_MODEL)                                  \
  X(SOFTMAX, "Softmax", 25, CLTRAIN_KIND_MODEL)                                  \
  X(LOSS_MSE, "MeanSquaredError", -1, CLTRAIN_KIND_LOSS)                         \
  X(LOSS_CCE, "CategoricalCrossEntropy", -1, CLTRAIN_KIND_LOSS)                  \
  X(ACCUMULATE, "Accumulate", -1, CLTRAIN_KIND_GRAPH)                            \
  X(UPDATE_SGD, "SGD", -1, CLTRAIN_KIND_UPDATE)                                  \
  X(UPDATE_ADAM, "Adam", -1, CLTRAIN_KIND_UPDATE)                                \
  X(CONV_2D, "Conv2D", 3, CLTRAIN_KIND_MODEL)                                    \
  X(DEPTHWISE_CONV_2D, "DepthwiseConv2D", 4, CLTRAIN_KIND_MODEL)                 \
  X(MAX_POOL_2D, "MaxPool2D", 17, CLTRAIN_KIND_MODEL)                            \
  X(AVERAGE_POOL_2D, "AveragePool2D", 1, CLTRAIN_KIND_MODEL)                     \
  X(MEAN, "Mean", 40, CLTRAIN_KIND_MODEL)                                        \
  X(PAD, "Pad", 34, CLTRAIN_KIND_MODEL)                                          \
  X(ADD, "Add", 0, CLTRAIN_KIND_MODEL)                                           \
  X(SUB, "Sub", 41, CLTRAIN_KIND_MODEL)                                          \
  X(MUL, "Mul", 18, CLTRAIN_KIND_MODEL)                                          \
  X(DIV, "Div", 42, CLTRAIN_KIND_MODEL)                                          \
  X(RELU6, "ReLU6", 21, CLTRAIN_KIND_MODEL)                                      \
  X(TANH, "Tanh", 28, CLTRAIN_KIND_MODEL)                                        \
  X(LOGISTIC, "Logistic", 14, CLTRAIN_KIND_MODEL)                                \
  X(CONCATENATION, "Concatenation", 2, CLTRAIN_KIND_MODEL)                       \
  X(HARD_SWISH, "HardSwish", 117, CLTRAIN_KIND_MODEL)                            \
  X(NEG, "Neg", 59, CLTRAIN_KIND_MODEL)                                          \
  X(RSQRT, "Rsqrt", 76, CLTRAIN_KIND_MODEL)                                      \
  X(SQUARED_DIFFERENCE, "SquaredDifference", 99, CLTRAIN_KIND_MODEL)             \
  X(TRANSPOSE, "Transpose", 39, CLTRAIN_KIND_MODEL)                              \
  X(GATHER, "Gather", 36, CLTRAIN_KIND_MODEL)                                    \
  X(UPDATE_ADAM_SQUARES, "AdamSquares", -1, CLTRAIN_KIND_UPDATE)                 \
  X(BATCH_MATMUL, "BatchMatMul", 126, CLTRAIN_KIND_MODEL)                        \
  X(SLICE, "Slice", 65, CLTRAIN_KIND_MODEL)                                      \
  X(FILL, "Fill", 94, CLTRAIN_KIND_MODEL)                                        \
  X(CHECK_FINITE, "CheckFinite", -1, CLTRAIN_KIND_GRAPH)                         \
  X(GELU, "Gelu", 150, CLTRAIN_KIND_MODEL)                                       \
  X(PADV2, "PadV2", 60, CLTRAIN_KIND_MODEL)                                      \
  X(REDUCE_MAX, "ReduceMax", 82, CLTRAIN_KIND_MODEL)                             \
  X(REDUCE_MIN, "ReduceMin", 89, CLTRAIN_KIND_MODEL)                             \
  X(LEAKY_RELU, "LeakyReLU", 98, CLTRAIN_KIND_MODEL)                             \
  X(ELU, "ELU", 111, CLTRAIN_KIND_MODEL)                                         \
  X(ABS, "Abs", 101, CLTRAIN_KIND_MODEL)                                         \
  X(SQUARE, "Square", 92, CLTRAIN_KIND_MODEL)                                    \
  X(EXP, "Exp", 47, CLTRAIN_KIND_MODEL)                                          \
  X(SQRT, "Sqrt", 75, CLTRAIN_KIND_MODEL)                                        \
  X(LOG, "Log", 73, CLTRAIN_KIND_MODEL)                                          \
  X(LOSS_CCE_LOGITS, "CategoricalCrossEntropyFromLogits", -1, CLTRAIN_KIND_LOSS) \
  X(LOG_SOFTMAX, "LogSoftmax", 50, CLTRAIN_KIND_MODEL)                           \
  X(SUM, "Sum", 74, CLTRAIN_KIND_MODEL)                                          \
  X(MAXIMUM, "Maximum", 55, CLTRAIN_KIND_MODEL)                                  \
  X(MINIMUM, "Minimum", 57, CLTRAIN_KIND_MODEL)                                  \
  X(TILE, "Tile", 69, CLTRAIN_KIND_MODEL)                                        \
  X(ACCUMULATE_BOX, "AccumulateBox", -1, CLTRAIN_KIND_GRAPH)                     \
  X(LSTM_CELL_STATE, "LstmCellState", -1, CLTRAIN_KIND_MODEL)                    \
  X(LSTM_CELL_OUTPUT, "LstmCellOutput", -1, CLTRAIN_KIND_MODEL)                  \
  X(GRU_CELL, "GruCell", -1, CLTRAIN_KIND_MODEL)                                 \
  X(ACCUMULATE_FC_GRADS, "AccumulateFcGrads", -1, CLTRAIN_KIND_GRAPH)            \
  X(GREATER, "Greater", 61, CLTRAIN_KIND_MODEL)                                  \
  X(GREATER_EQUAL, "GreaterEqual", 62, CLTRAIN_KIND_MODEL)                       \
  X(LESS, "Less", 58, CLTRAIN_KIND_MODEL)                                        \
  X(LESS_EQUAL, "LessEqual", 63, CLTRAIN_KIND_MODEL)                             \
  X(EQUAL, "Equal", 71, CLTRAIN_KIND_MODEL)                                      \
  X(NOT_EQUAL, "NotEqual", 72, CLTRAIN_KIND_MODEL)                               \
  X(TRANSPOSE_CONV, "TransposeConv", 67, CLTRAIN_KIND_MODEL)                     \
  X(RESIZE_BILINEAR, "ResizeBilinear", 23, CLTRAIN_KIND_MODEL)                   \
  X(RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighbor", 97, CLTRAIN_KIND_MODEL)

typedef enum cltrain_op {
#define CLTRAIN_X_ENUM(e, name, code, kind) CLTRAIN_OP_##e,
  CLTRAIN_OP_LIST(CLTRAIN_X_ENUM)
#undef CLTRAIN_X_ENUM
      CLTRAIN_OP_COUNT
} cltrain_op;

/* Fused activation, values as tflite's ActivationFunctionType. */
typedef enum cltrain_activation {
  CLTRAIN_ACT_NONE = 0,
  CLTRAIN_ACT_RELU = 1,
  CLTRAIN_ACT_RELU_N1_TO_1 = 2,
  CLTRAIN_ACT_RELU6 = 3,
  CLTRAIN_ACT_TANH = 4
} cltrain_activation;

/* Padding of convolutions and pools, values as tflite's Padding. SAME pads (out - 1) * stride +
 * (filter - 1) * dilation + 1 - in in total (at least 0), the smaller half before, where
 * out = ceil(in / stride); VALID pads nothing, out = ceil((in - (filter - 1) * dilation) / stride). */
typedef enum cltrain_padding { CLTRAIN_PADDING_SAME = 0, CLTRAIN_PADDING_VALID = 1 } cltrain_padding;

typedef enum cltrain_loss_reduction {
  CLTRAIN_REDUCTION_SUM_OVER_BATCH_SIZE = 0,
  CLTRAIN_REDUCTION_SUM = 1
} cltrain_loss_reduction;

/* Name of an op ("FullyConnected"), or "?" for a value outside the list. */
static inline const char* cltrain_op_name(int op) {
  switch (op) {
#define CLTRAIN_X_NAME(e, name, code, kind) \
  case CLTRAIN_OP_##e: return name;
    CLTRAIN_OP_LIST(CLTRAIN_X_NAME)
#undef CLTRAIN_X_NAME
    default: return "?";
  }
}

#endif /* CLTRAIN_OPS_H */
