// Ops of CLTRAIN_OP_LIST that have no OpenCL implementation yet: an empty family makes supports()
// return 0, so these ops run on the CPU backend. Remove an op's line here when its op file defines
// kOp_<ENUM> (and add that file to CMakeLists.txt).
#include "ops/ops.h"

namespace cltrain::ocl {

const OpFamily kOp_CONV_2D = {};
const OpFamily kOp_DEPTHWISE_CONV_2D = {};

}  // namespace cltrain::ocl
