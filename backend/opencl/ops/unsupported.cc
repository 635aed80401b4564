// Ops of CLTRAIN_OP_LIST that have no OpenCL implementation yet: an empty family makes supports()
// return 0, so these ops run on the CPU backend. Remove an op's line here when its op file defines
// kOp_<ENUM> (and add that file to CMakeLists.txt).
#include "ops/ops.h"

namespace cltrain::ocl {

const OpFamily kOp_CONV_2D = {};
const OpFamily kOp_DEPTHWISE_CONV_2D = {};
const OpFamily kOp_MAX_POOL_2D = {};
const OpFamily kOp_AVERAGE_POOL_2D = {};
const OpFamily kOp_MEAN = {};
const OpFamily kOp_PAD = {};
const OpFamily kOp_ADD = {};
const OpFamily kOp_SUB = {};
const OpFamily kOp_MUL = {};
const OpFamily kOp_DIV = {};
const OpFamily kOp_RELU6 = {};
const OpFamily kOp_TANH = {};
const OpFamily kOp_LOGISTIC = {};
const OpFamily kOp_CONCATENATION = {};

}  // namespace cltrain::ocl
