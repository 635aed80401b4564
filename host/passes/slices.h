// The file's STRIDED_SLICE (unit strides), SPLIT and UNPACK of a float tensor load as one SLICE
// model operator per output (ops/slice.cc: the cuts at either end of each axis), each
// marked as a part of the file's operator, which export keeps as it was. What GRU and LSTM layers
// convert to cut their gate pre-activations this way.
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace cltrain {

struct FileOperator;

// Appends the SLICEs of file operator f to m.operators and returns true, or returns false for an
// operator that is not one of those three on a float input. Throws ModelError naming the operator
// (its label) for one it cannot load.
bool load_slices(Model& m, const FileOperator& f, const std::string& what);

// A TRANSPOSE whose output only an UNPACK reads, the other axes in their order (an LSTM's
// [1,0,2] to step through time, then UNPACK on axis 0): the UNPACK's parts slice the TRANSPOSE's
// input along the axis it moved instead, and the TRANSPOSE is folded (Model::folded_ops). The
// batch then stays the first axis.
void fold_transposed_unpacks(Model& m);

}  // namespace cltrain
