// Bad model files: each must give one ModelError line that names the file and the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "negative_util.h"

namespace cltrain {
namespace {

using test::edit_raw;
using test::load_error;
using test::mlp_bytes;
using ::testing::HasSubstr;

TEST(ModelLoad, neg_ZeroLengthFile) {
  EXPECT_LOAD_ERROR(std::vector<uint8_t>{}, "empty");
  const std::string path = ::testing::TempDir() + "/cltrain_empty.circle";
  save_file_atomic(path, {});
  EXPECT_THROW(
      {
        try {
          load_model(path);
        } catch (const ModelError& e) {
          EXPECT_THAT(e.what(), HasSubstr(path + ": file is empty"));
          throw;
        }
      },
      ModelError);
  std::remove(path.c_str());
}

TEST(ModelLoad, neg_MissingFile) {
  try {
    load_model("/nonexistent/dir/model.circle");
    FAIL() << "loaded a missing file";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/dir/model.circle: cannot open"));
  }
}

TEST(ModelLoad, neg_TooShort) { EXPECT_LOAD_ERROR(std::vector<uint8_t>(5, 0), "not a circle or tflite file"); }

TEST(ModelLoad, neg_WrongIdentifier) {
  std::vector<uint8_t> b = mlp_bytes();
  std::memcpy(b.data() + 4, "ABC\x01", 4);
  EXPECT_LOAD_ERROR(b, "not a circle or tflite file", "identifier 'ABC\\x01'");
}

TEST(ModelLoad, neg_TruncatedFile) {
  std::vector<uint8_t> b = mlp_bytes();
  b.resize(b.size() / 2);
  EXPECT_LOAD_ERROR(b, "corrupt or truncated circle file");
}

TEST(ModelLoad, neg_OperatorInputOutOfRange) {
  Model m = make_named_model("mlp", 4);
  m.operators[1].inputs[0] = 99;
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "operator 1 (FullyConnected): input 0: tensor index 99 out of range");
}

TEST(ModelLoad, neg_SubgraphOutputOutOfRange) {
  Model m = make_named_model("mlp", 4);
  m.outputs = {-3};
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "subgraph output 0: tensor index -3 out of range");
}

TEST(ModelLoad, neg_BufferIndexOutOfRange) {
  Model m = make_named_model("mlp", 4);
  m.tensors[3].buffer = 99;  // fc1 output, not a constant
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "tensor 3 'fc1': buffer index 99 out of range");
}

TEST(ModelLoad, neg_BufferShorterThanTensor) {
  Model m = make_named_model("mlp", 4);
  m.tensors[1].data.resize(1000);
  EXPECT_LOAD_ERROR(write_model(m, "circle"),
                    "tensor 1 'fc1/weights': buffer holds 1000 bytes, shape [128,784] float32 needs 401408");
}

TEST(ModelLoad, neg_NonEmptyBufferZero) {
  const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [](fb::ModelT& m) { m.buffers[0]->data = {1, 2, 3, 4}; });
  EXPECT_LOAD_ERROR(b, "buffer 0 must be empty");
}

TEST(ModelLoad, neg_ExternalBufferOutsideFile) {
  const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [](fb::ModelT& m) {
    m.buffers[1]->data.clear();
    m.buffers[1]->offset = 1u << 30;
    m.buffers[1]->size = 401408;
  });
  EXPECT_LOAD_ERROR(b, "buffer 1: data at offset 1073741824", "outside the file");
}

TEST(ModelLoad, neg_UnsupportedOp) {
  for (int32_t code : {27, 26, 81}) {
    const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [&](fb::ModelT& m) {
      m.operator_codes[0]->deprecated_builtin_code = static_cast<int8_t>(std::min(code, 127));
      m.operator_codes[0]->builtin_code = code;
    });
    const std::string name = code == 27 ? "SVDF" : code == 26 ? "SPACE_TO_DEPTH" : "REDUCE_PROD";
    // The mlp's two FullyConnected share the operator code.
    const std::string expected = "2 operators are not supported: " + name + " (builtin " + std::to_string(code) +
                                 ") x2 (the first is operator 0)";
    EXPECT_LOAD_ERROR(b, expected.c_str());
  }
}

// One operator no descriptor knows: named with its index.
TEST(ModelLoad, neg_OneUnsupportedOperator) {
  const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [&](fb::ModelT& m) {
    m.operator_codes.push_back(std::make_unique<fb::OperatorCodeT>());
    m.operator_codes.back()->deprecated_builtin_code = 77;
    m.operator_codes.back()->builtin_code = 77;
    m.subgraphs[0]->operators[1]->opcode_index = static_cast<uint32_t>(m.operator_codes.size() - 1);
  });
  EXPECT_LOAD_ERROR(b, "operator 1: SHAPE (builtin 77) is not supported");
}

// Every operator no descriptor knows is in the one line, by name and count, in order of first use.
TEST(ModelLoad, neg_EveryUnsupportedOperatorIsNamedWithItsCount) {
  const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [&](fb::ModelT& m) {
    for (auto& code : m.operator_codes) {
      const int32_t c = code->builtin_code == 9 ? 77 : 27;  // FULLY_CONNECTED -> SHAPE, the other -> SVDF
      code->deprecated_builtin_code = static_cast<int8_t>(c);
      code->builtin_code = c;
    }
  });
  EXPECT_LOAD_ERROR(b,
                    "3 operators are not supported: SHAPE (builtin 77) x2, SVDF (builtin 27) x1 "
                    "(the first is operator 0)");
}

TEST(ModelLoad, neg_CustomOp) {
  const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [](fb::ModelT& m) {
    m.operator_codes[0]->deprecated_builtin_code = 32;
    m.operator_codes[0]->builtin_code = 32;
    m.operator_codes[0]->custom_code = "MyOp";
  });
  EXPECT_LOAD_ERROR(b, "2 operators are not supported: custom operator 'MyOp' x2 (the first is operator 0)");
}

TEST(ModelLoad, neg_OpcodeIndexOutOfRange) {
  const std::vector<uint8_t> b =
      edit_raw(mlp_bytes(), [](fb::ModelT& m) { m.subgraphs[0]->operators[2]->opcode_index = 7; });
  EXPECT_LOAD_ERROR(b, "operator 2: opcode index 7 out of range");
}

TEST(ModelLoad, neg_TwoSubgraphs) {
  const std::vector<uint8_t> b =
      edit_raw(mlp_bytes(), [](fb::ModelT& m) { m.subgraphs.push_back(std::make_unique<fb::SubGraphT>()); });
  EXPECT_LOAD_ERROR(b, "2 subgraphs");
}

TEST(ModelLoad, neg_UnsupportedTensorType) {
  const std::vector<uint8_t> b =
      edit_raw(mlp_bytes(), [](fb::ModelT& m) { m.subgraphs[0]->tensors[0]->type = fb::TensorType::INT8; });
  EXPECT_LOAD_ERROR(b, "tensor 0 'input': INT8 tensors are not supported");
}

TEST(ModelLoad, neg_NegativeDimension) {
  Model m = make_named_model("mlp", 4);
  m.tensors[3].shape = {4, -128};
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "tensor 3 'fc1': shape [4,-128] has a negative dimension");
}

TEST(ModelLoad, neg_HugeShape) {
  Model m = make_named_model("mlp", 4);
  m.tensors[3].shape = {65536, 65536, 65536, 65536};
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "tensor 3 'fc1'", "too large");
}

TEST(ModelLoad, neg_ShapeMismatch) {
  Model m = make_named_model("mlp", 4);
  m.tensors[3].shape = {4, 127};
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "operator 0 (FullyConnected): output shape [4,127] does not match");
}

TEST(ModelLoad, neg_OperatorsOutOfOrder) {
  Model m = make_named_model("mlp", 4);
  std::swap(m.operators[0], m.operators[1]);
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "operator 0 (FullyConnected): input 0 tensor 3 'fc1' is read before");
}

TEST(ModelLoad, neg_OutputNotComputed) {
  Model m = make_named_model("mlp", 4);
  m.outputs = {1};
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "subgraph output 0: tensor 1 'fc1/weights' is not computed");
}

TEST(ModelLoad, neg_MissingRequiredInput) {
  Model m = make_named_model("mlp", 4);
  m.operators[0].inputs[1] = -1;
  EXPECT_LOAD_ERROR(write_model(m, "circle"), "operator 0 (FullyConnected): input 1 is required");
}

TEST(ModelLoad, neg_UnsupportedActivation) {
  Model m = make_named_model("mlp", 4);
  m.operators[0].params.activation = 5;  // SIGN_BIT
  EXPECT_LOAD_ERROR(write_model(m, "circle"),
                    "operator 0 (FullyConnected): fused activation SIGN_BIT is not supported");
}

TEST(ModelLoad, neg_WrongOptionsType) {
  const std::vector<uint8_t> b = edit_raw(mlp_bytes(), [](fb::ModelT& m) {
    fb::SoftmaxOptionsT o;
    o.beta = 2.0f;
    m.subgraphs[0]->operators[0]->builtin_options.Set(o);
  });
  EXPECT_LOAD_ERROR(b, "operator 0 (FullyConnected): has options of union type 9, expected 8");
}

TEST(ModelLoad, neg_SetBatchSize) {
  Model m = make_named_model("mlp", 4);
  EXPECT_THROW(set_batch_size(m, 0), ModelError);
  EXPECT_THROW(set_batch_size(m, -2), ModelError);
  m.tensors[0].shape.clear();
  try {
    set_batch_size(m, 8);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 0 'input': has rank 0"));
  }
}

TEST(ModelLoad, neg_UnknownNamedModel) {
  try {
    make_named_model("resnet", 4);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown model 'resnet' (known: mlp"));
  }
}

TEST(ModelLoad, neg_SaveIntoMissingDirectory) {
  try {
    save_file_atomic("/nonexistent/dir/x.circle", {1, 2, 3});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/dir/x.circle: cannot create"));
  }
}

}  // namespace
}  // namespace cltrain
