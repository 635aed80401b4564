// Models whose operands do not fit their operators (the convolution family, pools, Mean, Pad,
// broadcasting arithmetic, Concatenation, Reshape): each gives one ModelError line that names the
// file, the operator and what is wrong (the descriptors' checks, host/ops/).
#include <functional>

#include "negative_util.h"

namespace cltrain {
namespace {

using test::edit_raw;
using test::load_error;
using ::testing::HasSubstr;

using test::every_op_model;
using test::find_operator;
using test::find_tensor;
using test::reshape_constant;

std::vector<uint8_t> bytes_of(const Model& m) { return write_model(m, "circle"); }

// The every-op model with operator `output`'s params edited.
Model with_params(const std::string& output, const std::function<void(cltrain_op_params&)>& edit) {
  Model m = every_op_model();
  edit(m.operators[static_cast<size_t>(find_operator(m, output))].params);
  return m;
}

size_t tensor_index(const Model& m, const std::string& name) {
  const int32_t t = find_tensor(m, name);
  EXPECT_GE(t, 0) << name;
  return static_cast<size_t>(t);
}

TEST(ModelLoadCnn, neg_ConvWeightsChannels) {
  Model m = every_op_model();
  reshape_constant(m, tensor_index(m, "conv/weights"), {3, 3, 3, 4});  // input has 2 channels
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Conv2D): weights shape [3,3,3,4] does not fit input [2,6,6,2]");
}

TEST(ModelLoadCnn, neg_ConvWeightsRank) {
  Model m = every_op_model();
  reshape_constant(m, tensor_index(m, "conv/weights"), {3, 9, 2});
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Conv2D): weights shape [3,9,2] is not [O,KH,KW,I]");
}

TEST(ModelLoadCnn, neg_ConvInputRank) {
  ModelBuilder b;
  int x = b.input({2, 6, 6, 2});
  b.output(b.conv2d(x, 3, 3, 3, 1, CLTRAIN_PADDING_SAME, 0));
  Model m = b.build();
  m.tensors[0].shape = {2, 36, 2};
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Conv2D): input shape [2,36,2] is not [N,H,W,C]");
}

TEST(ModelLoadCnn, neg_ConvBiasShape) {
  Model m = every_op_model();
  reshape_constant(m, tensor_index(m, "conv/bias"), {4});
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Conv2D): bias shape [4] is not [3]");
}

TEST(ModelLoadCnn, neg_DepthwiseWeights) {
  Model m = every_op_model();
  reshape_constant(m, tensor_index(m, "dw/weights"), {2, 2, 2, 3});
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 1 (DepthwiseConv2D): weights shape [2,2,2,3] is not [1,KH,KW,C*M]");
  Model m2 = every_op_model();
  reshape_constant(m2, tensor_index(m2, "dw/weights"), {1, 2, 2, 7});  // 7 is no multiple of 3
  EXPECT_LOAD_ERROR(bytes_of(m2), "weights shape [1,2,2,7] is not [1,KH,KW,C*M] for input [2,6,6,3]");
}

TEST(ModelLoadCnn, neg_DepthMultiplierMismatch) {
  const Model m = with_params("dw", [](cltrain_op_params& p) { p.depth_multiplier = 3; });
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 1 (DepthwiseConv2D): depth multiplier 3 does not match weights [1,2,2,6]");
}

TEST(ModelLoadCnn, neg_ConvWrongOutputShape) {
  Model m = every_op_model();
  m.tensors[tensor_index(m, "conv")].shape = {2, 3, 3, 3};  // SAME at stride 1 keeps 6x6
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Conv2D): output shape [2,3,3,3] differs from the computed [2,6,6,3]");
  // Stride 2 would give 3x3: now the declared [2,6,6,3] is wrong.
  const Model s = with_params("conv", [](cltrain_op_params& p) { p.stride_h = p.stride_w = 2; });
  EXPECT_LOAD_ERROR(bytes_of(s), "output shape [2,6,6,3] differs from the computed [2,3,3,3]");
  // VALID padding shrinks the output.
  const Model v = with_params("conv", [](cltrain_op_params& p) { p.padding = CLTRAIN_PADDING_VALID; });
  EXPECT_LOAD_ERROR(bytes_of(v), "output shape [2,6,6,3] differs from the computed [2,2,2,3]");
}

TEST(ModelLoadCnn, neg_PoolWrongOutputShape) {
  Model m = every_op_model();
  m.tensors[tensor_index(m, "maxpool")].shape = {2, 2, 2, 6};
  EXPECT_LOAD_ERROR(bytes_of(m), "(MaxPool2D): output shape [2,2,2,6] differs from the computed [2,2,3,6]");
  const Model f = with_params("avgpool", [](cltrain_op_params& p) { p.filter_w = 0; });
  EXPECT_LOAD_ERROR(bytes_of(f), "(AveragePool2D): filter width 0 is less than 1");
}

TEST(ModelLoadCnn, neg_ValidFilterLargerThanInput) {
  ModelBuilder b;
  int x = b.input({1, 4, 4, 1});
  b.output(b.conv2d(x, 1, 3, 3, 1, CLTRAIN_PADDING_VALID, 0, 1, true, "c"));  // [1,2,2,1]
  Model m = b.build();
  m.operators[0].params.dilation_h = 2;  // spans 5 rows
  EXPECT_LOAD_ERROR(bytes_of(m),
                    "operator 0 (Conv2D): filter height 3 (dilation 2) does not fit input height 4 with VALID padding");
}

TEST(ModelLoadCnn, neg_BadWindowParams) {
  EXPECT_LOAD_ERROR(bytes_of(with_params("conv", [](cltrain_op_params& p) { p.stride_h = 0; })),
                    "operator 0 (Conv2D): stride height 0 is less than 1");
  EXPECT_LOAD_ERROR(bytes_of(with_params("dw", [](cltrain_op_params& p) { p.dilation_w = -1; })),
                    "operator 1 (DepthwiseConv2D): dilation width -1 is less than 1");
  EXPECT_LOAD_ERROR(bytes_of(with_params("maxpool", [](cltrain_op_params& p) { p.padding = 2; })),
                    "(MaxPool2D): padding 2 is not SAME (0) or VALID (1)");
}

TEST(ModelLoadCnn, neg_UnsupportedFusedActivation) {
  EXPECT_LOAD_ERROR(bytes_of(with_params("conv", [](cltrain_op_params& p) { p.activation = 5; })),
                    "operator 0 (Conv2D): fused activation SIGN_BIT is not supported");
  EXPECT_LOAD_ERROR(bytes_of(with_params("add", [](cltrain_op_params& p) { p.activation = 5; })),
                    "(Add): fused activation SIGN_BIT is not supported");
}

TEST(ModelLoadCnn, neg_UnsupportedPoolActivation) {
  EXPECT_LOAD_ERROR(bytes_of(with_params("maxpool", [](cltrain_op_params& p) { p.activation = CLTRAIN_ACT_RELU; })),
                    "operator 3 (MaxPool2D): fused activation RELU is not supported (only NONE)");
  EXPECT_LOAD_ERROR(bytes_of(with_params("avgpool", [](cltrain_op_params& p) { p.activation = CLTRAIN_ACT_RELU6; })),
                    "operator 4 (AveragePool2D): fused activation RELU6 is not supported (only NONE)");
  EXPECT_LOAD_ERROR(bytes_of(with_params("concat", [](cltrain_op_params& p) { p.activation = CLTRAIN_ACT_TANH; })),
                    "operator 5 (Concatenation): fused activation TANH is not supported (only NONE)");
}

TEST(ModelLoadCnn, neg_MissingOptions) {
  const Model m = every_op_model();
  for (const char* name : {"conv", "dw", "maxpool", "concat"}) {
    const int32_t i = find_operator(m, name);
    const std::vector<uint8_t> b = edit_raw(bytes_of(m), [&](fb::ModelT& fm) {
      fm.subgraphs[0]->operators[static_cast<size_t>(i)]->builtin_options.Reset();
    });
    const std::string label = "operator " + std::to_string(i);
    EXPECT_LOAD_ERROR(b, label.c_str(), "options missing");
  }
}

TEST(ModelLoadCnn, neg_WrongOptionsTypeOnNewOp) {
  const int32_t i = find_operator(every_op_model(), "maxpool");
  const std::vector<uint8_t> b = edit_raw(bytes_of(every_op_model()), [&](fb::ModelT& fm) {
    fb::Conv2DOptionsT o;
    fm.subgraphs[0]->operators[static_cast<size_t>(i)]->builtin_options.Set(o);
  });
  EXPECT_LOAD_ERROR(b, "operator 3 (MaxPool2D): has options of union type 1, expected 5");
}

TEST(ModelLoadCnn, neg_NonConstantAxes) {
  // A computed (float) tensor as the axes.
  Model m = every_op_model();
  Operator& mean = m.operators[static_cast<size_t>(find_operator(m, "mean"))];
  mean.inputs[1] = find_tensor(m, "concat");
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 6 (Mean): axes operand tensor ",
                    "'concat' is not a constant int32 tensor (computed axes are not supported)");
  // An int32 tensor without data (a graph input or another op's result in the original model).
  Model e = every_op_model();
  const size_t axes = tensor_index(e, "mean/axes");
  e.tensors[axes].data.clear();
  e.tensors[axes].buffer = 0;
  EXPECT_LOAD_ERROR(bytes_of(e), "(Mean): axes operand tensor", "'mean/axes' is not a constant int32 tensor",
                    "computed axes are not supported");
  // Constant but float.
  Model f = every_op_model();
  f.tensors[axes].dtype = CLTRAIN_FLOAT32;
  EXPECT_LOAD_ERROR(bytes_of(f), "'mean/axes' is not a constant int32 tensor");
}

TEST(ModelLoadCnn, neg_NonConstantPaddings) {
  Model m = every_op_model();
  const size_t p = tensor_index(m, "pad/paddings");
  m.tensors[p].data.clear();
  m.tensors[p].buffer = 0;
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 2 (Pad): paddings operand tensor",
                    "is not a constant int32 tensor (computed paddings are not supported)");
}

// int32 activations (token ids) go only where an op takes them: GATHER's ids.
TEST(ModelLoadCnn, neg_Int32InputToAFloatOp) {
  Model m = every_op_model();
  m.tensors[static_cast<size_t>(m.inputs[0])].dtype = CLTRAIN_INT32;
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Conv2D): input 0 tensor 0 'input' is not float32");
}

TEST(ModelLoadCnn, UnusedInt32ActivationLoads) {
  Model m = every_op_model();
  Tensor t;
  t.name = "stray";
  t.shape = {2};
  t.dtype = CLTRAIN_INT32;
  m.tensors.push_back(t);
  EXPECT_NO_THROW(load_model_from_memory(bytes_of(m), "m.circle"));
}

TEST(ModelLoadCnn, neg_GatherIds) {
  {
    Model m = test::embedding_model();  // float ids
    m.tensors[static_cast<size_t>(m.inputs[0])].dtype = CLTRAIN_FLOAT32;
    EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Gather): ids tensor 0 'ids' are not int32");
  }
  {
    Model m = test::embedding_model();  // ids as the table, the table as ids
    std::swap(m.operators[0].inputs[0], m.operators[0].inputs[1]);
    EXPECT_LOAD_ERROR(bytes_of(m), "operator 0 (Gather): input 0 tensor 0 'ids' is not float32");
  }
  {
    Model m = test::embedding_model();  // an int32 input read by the mean
    m.operators[1].inputs[0] = m.inputs[0];
    EXPECT_LOAD_ERROR(bytes_of(m), "operator 1 (Mean): input 0 tensor 0 'ids' is not float32");
  }
}

TEST(ModelLoadCnn, neg_BadAxesAndPaddings) {
  Model m = every_op_model();
  const size_t axes = tensor_index(m, "mean/axes");
  std::memcpy(m.tensors[axes].data.data(), "\x04\0\0\0", 4);
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 6 (Mean): axis 4 is out of range for input [2,2,3,12]");
  Model k = every_op_model();
  k.operators[static_cast<size_t>(find_operator(k, "mean"))].params.keep_dims = 0;
  EXPECT_LOAD_ERROR(bytes_of(k), "(Mean): output shape [2,2,1,12] differs from the computed [2,2,12]");
  Model p = every_op_model();
  reshape_constant(p, tensor_index(p, "pad/paddings"), {3, 2});
  EXPECT_LOAD_ERROR(bytes_of(p), "operator 2 (Pad): paddings shape [3,2] is not [4,2] for input [2,3,3,6]");
  Model n = every_op_model();
  const int32_t minus = -1;
  std::memcpy(n.tensors[tensor_index(n, "pad/paddings")].data.data() + 12, &minus, 4);  // axis 1, after
  EXPECT_LOAD_ERROR(bytes_of(n), "operator 2 (Pad): paddings of axis 1 (1,-1) are negative");
}

TEST(ModelLoadCnn, neg_BadPerm) {
  auto with_perm = [](std::vector<int32_t> perm) {
    Model m = every_op_model();
    const size_t t = tensor_index(m, "transpose/perm");
    reshape_constant(m, t, {static_cast<int32_t>(perm.size())});
    std::memcpy(m.tensors[t].data.data(), perm.data(), perm.size() * 4);
    return bytes_of(m);
  };
  EXPECT_LOAD_ERROR(with_perm({0, 3, 1}), "(Transpose): perm shape [3] is not [4] for input [2,2,3,12]");
  EXPECT_LOAD_ERROR(with_perm({0, 3, 1, 3}), "(Transpose): perm [0,3,1,3] is not a permutation of the axes");
  EXPECT_LOAD_ERROR(with_perm({0, 4, 1, 2}), "(Transpose): perm [0,4,1,2] is not a permutation of the axes");
  EXPECT_LOAD_ERROR(with_perm({0, 1, 2, 3}),
                    "(Transpose): output shape [2,12,2,3] differs from the computed [2,2,3,12]");
}

// Two inputs into one Add, to change their shapes freely.
Model two_input_add(std::vector<int32_t> a, std::vector<int32_t> b) {
  ModelBuilder mb;
  const int x = mb.input({2, 3, 4}, "a");
  const int y = mb.input({2, 1, 4}, "b");
  mb.output(mb.add(x, y, CLTRAIN_ACT_NONE, "sum"));
  Model m = mb.build();
  m.tensors[0].shape = std::move(a);
  m.tensors[1].shape = std::move(b);
  return m;
}

TEST(ModelLoadCnn, neg_BadBroadcast) {
  EXPECT_LOAD_ERROR(
      bytes_of(two_input_add({2, 3, 4}, {2, 2, 4})),
      "operator 0 (Add): cannot broadcast [2,3,4] with [2,2,4] (dimension 1: 3 vs 2; each must be equal or 1)");
  // Ranks differ: the lower is aligned from the right with leading 1s (numpy), through a RESHAPE.
  EXPECT_EQ(load_error(bytes_of(two_input_add({2, 3, 4}, {3, 4}))), "");
  EXPECT_LOAD_ERROR(bytes_of(two_input_add({2, 3, 4}, {5, 4})),
                    "operator 0 (Add): cannot broadcast [2,3,4] with [1,5,4] (dimension 1: 3 vs 5");
  // Broadcasting both ways is fine, but the output must be the broadcast shape.
  EXPECT_EQ(load_error(bytes_of(two_input_add({2, 1, 4}, {2, 3, 1}))), "");
  EXPECT_EQ(load_error(bytes_of(two_input_add({1, 3, 4}, {2, 1, 4}))), "");
  EXPECT_LOAD_ERROR(bytes_of(two_input_add({2, 3, 1}, {2, 1, 1})),
                    "operator 0 (Add): output shape [2,3,4] differs from the computed [2,3,1]");
}

TEST(ModelLoadCnn, neg_ConcatShapes) {
  Model m = every_op_model();
  m.operators[static_cast<size_t>(find_operator(m, "concat"))].params.axis = 2;
  EXPECT_LOAD_ERROR(bytes_of(m),
                    "operator 5 (Concatenation): output shape [2,2,3,12] differs from the computed [2,2,6,6]");
  Model a = every_op_model();
  a.operators[static_cast<size_t>(find_operator(a, "concat"))].params.axis = -5;
  EXPECT_LOAD_ERROR(bytes_of(a), "operator 5 (Concatenation): axis -5 is out of range for rank 4");
  Model d = every_op_model();
  Operator& c = d.operators[static_cast<size_t>(find_operator(d, "concat"))];
  c.inputs[1] = find_tensor(d, "pad");  // [2,4,5,6]
  EXPECT_LOAD_ERROR(bytes_of(d),
                    "input 1 shape [2,4,5,6] does not fit input 0 [2,2,3,6] (all dimensions but axis 3 must be equal)");
  ModelBuilder rb;
  const int x = rb.input({2, 3, 4}, "x");
  const int y = rb.input({2, 12}, "y");
  rb.output(rb.concat({x, x}, 2));
  Model r = rb.build();
  r.operators[0].inputs[1] = y;
  EXPECT_LOAD_ERROR(bytes_of(r),
                    "operator 0 (Concatenation): input 1 shape [2,12] differs in rank from input 0 [2,3,4]");
  Model many = every_op_model();
  many.operators[static_cast<size_t>(find_operator(many, "concat"))].inputs.assign(9, find_tensor(many, "maxpool"));
  EXPECT_LOAD_ERROR(bytes_of(many), "operator 5 (Concatenation): has 9 inputs, expected 1 to 8");
}

TEST(ModelLoadCnn, neg_WrongArity) {
  Model m = every_op_model();
  m.operators[static_cast<size_t>(find_operator(m, "mean"))].inputs.pop_back();
  EXPECT_LOAD_ERROR(bytes_of(m), "operator 6 (Mean): has 1 inputs, expected 2");
  Model p = every_op_model();
  p.operators[static_cast<size_t>(find_operator(p, "maxpool"))].inputs.push_back(0);
  EXPECT_LOAD_ERROR(bytes_of(p), "operator 3 (MaxPool2D): has 2 inputs, expected 1");
}

TEST(ModelLoadCnn, neg_ReshapeTargetMismatch) {
  Model m = every_op_model();
  const int32_t bad[2] = {3, -1};
  std::memcpy(m.tensors[tensor_index(m, "flat/shape")].data.data(), bad, 8);
  EXPECT_LOAD_ERROR(bytes_of(m), "(Reshape): shape operand [3,-1] does not match output shape [2,48]");
}

TEST(ModelLoadCnn, neg_SetBatchSizeAcrossSamples) {
  auto expect_batch_error = [](Model m, const char* part) {
    const Model before = m;
    try {
      set_batch_size(m, 5);
      ADD_FAILURE() << "set_batch_size accepted it";
    } catch (const ModelError& e) {
      EXPECT_THAT(e.what(), HasSubstr(part));
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
    for (size_t i = 0; i < m.tensors.size(); ++i) {  // unchanged
      EXPECT_EQ(m.tensors[i].shape, before.tensors[i].shape);
      EXPECT_TRUE(m.tensors[i].data == before.tensors[i].data);
    }
  };
  {
    ModelBuilder b;
    b.output(b.softmax(b.mean(b.input({2, 3, 4}), {0, 2}, true)));
    expect_batch_error(b.build(), "batch size 5: operator 0 (Mean): averages over the batch axis");
  }
  {
    ModelBuilder b;
    b.output(b.pad(b.input({2, 3}), {{{1, 0}}, {{0, 0}}}));
    expect_batch_error(b.build(), "batch size 5: operator 0 (Pad): pads the batch axis");
  }
  {
    ModelBuilder b;
    const int x = b.input({2, 3});
    b.output(b.concat({x, x}, 0));
    expect_batch_error(b.build(), "batch size 5: operator 0 (Concatenation): concatenates along the batch axis");
  }
  {
    ModelBuilder b;
    b.output(b.transpose(b.input({2, 3}), {1, 0}));
    expect_batch_error(b.build(), "batch size 5: operator 0 (Transpose): moves the batch axis");
  }
  {
    // A FullyConnected whose rows mix samples ([2,4] seen as [1,8]) and a Reshape moving the
    // batch into the second dimension.
    ModelBuilder b;
    int x = b.input({2, 4});
    x = b.reshape(x, {1, 8});
    b.output(b.fully_connected(x, 3, 0));
    Model m = b.build();
    expect_batch_error(m, "batch size 5: operator 0 (Reshape): cannot reshape [5,4] to [5,8]");
  }
}

}  // namespace
}  // namespace cltrain
