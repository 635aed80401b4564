/* cltrain — the one op list.
 *
 * Every op the runtime knows is one line of CLTRAIN_OP_LIST. The loader (builtin code -> op),
 * each backend's supports() and dispatch, and the op test suite are all driven from this list,
 * so they cannot drift apart.
 *
 *   X(ENUM, "Name", tflite_builtin_code, kind)
 *     tflite_builtin_code: the BuiltinOperator value in tflite/circle models, -1 for ops that the
 *                          training graph adds (losses, accumulation, optimizer updates).
 *     kind: CLTRAIN_KIND_MODEL (a model operator with forward and backward steps),
 *           CLTRAIN_KIND_LOSS (forward computes the loss, backward the gradient of the prediction),
 *           CLTRAIN_KIND_GRAPH (a step the training graph inserts, backward phase only),
 *           CLTRAIN_KIND_UPDATE (an optimizer update, update phase only).
 *
 * Append only: the enum values cross the plugin ABI.
 */
#ifndef CLTRAIN_OPS_H
#define CLTRAIN_OPS_H

#define CLTRAIN_KIND_MODEL 0
#define CLTRAIN_KIND_LOSS 1
#define CLTRAIN_KIND_GRAPH 2
#define CLTRAIN_KIND_UPDATE 3

#define CLTRAIN_OP_LIST(X)                                        \
  X(FULLY_CONNECTED, "FullyConnected", 9, CLTRAIN_KIND_MODEL)     \
  X(RELU, "ReLU", 19, CLTRAIN_KIND_MODEL)                         \
  X(RESHAPE, "Reshape", 22, CLTRAIN_KIND_MODEL)                   \
  X(SOFTMAX, "Softmax", 25, CLTRAIN_KIND_MODEL)                   \
  X(LOSS_MSE, "MeanSquaredError", -1, CLTRAIN_KIND_LOSS)          \
  X(LOSS_CCE, "CategoricalCrossEntropy", -1, CLTRAIN_KIND_LOSS)   \
  X(ACCUMULATE, "Accumulate", -1, CLTRAIN_KIND_GRAPH)             \
  X(UPDATE_SGD, "SGD", -1, CLTRAIN_KIND_UPDATE)                   \
  X(UPDATE_ADAM, "Adam", -1, CLTRAIN_KIND_UPDATE)                 \
  X(CONV_2D, "Conv2D", 3, CLTRAIN_KIND_MODEL)                     \
  X(DEPTHWISE_CONV_2D, "DepthwiseConv2D", 4, CLTRAIN_KIND_MODEL)  \
  X(MAX_POOL_2D, "MaxPool2D", 17, CLTRAIN_KIND_MODEL)             \
  X(AVERAGE_POOL_2D, "AveragePool2D", 1, CLTRAIN_KIND_MODEL)      \
  X(MEAN, "Mean", 40, CLTRAIN_KIND_MODEL)                         \
  X(PAD, "Pad", 34, CLTRAIN_KIND_MODEL)                           \
  X(ADD, "Add", 0, CLTRAIN_KIND_MODEL)                            \
  X(SUB, "Sub", 41, CLTRAIN_KIND_MODEL)                           \
  X(MUL, "Mul", 18, CLTRAIN_KIND_MODEL)                           \
  X(DIV, "Div", 42, CLTRAIN_KIND_MODEL)                           \
  X(RELU6, "ReLU6", 21, CLTRAIN_KIND_MODEL)                       \
  X(TANH, "Tanh", 28, CLTRAIN_KIND_MODEL)                         \
  X(LOGISTIC, "Logistic", 14, CLTRAIN_KIND_MODEL)                 \
  X(CONCATENATION, "Concatenation", 2, CLTRAIN_KIND_MODEL)

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
  case CLTRAIN_OP_##e:                      \
    return name;
    CLTRAIN_OP_LIST(CLTRAIN_X_NAME)
#undef CLTRAIN_X_NAME
    default:
      return "?";
  }
}

#endif /* CLTRAIN_OPS_H */
