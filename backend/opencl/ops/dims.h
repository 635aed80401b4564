// Shapes as the index arithmetic of the broadcasting, reduction and padding kernels sees them:
// always six dims, outermost first, padded at the front with size-1 dims, after dropping size-1
// dims and merging neighbours whose merge keeps every tensor's index linear. The kernels take the
// sizes and strides as -D definitions (Y0..Y5, SA0..SA5, ...), so a trivial dim costs nothing.
//
// Merging never changes the order of elements: the flat index of a tensor in the merged view is
// its flat index in the original shape, so "increasing flat index" orders carry over.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.h"

namespace cltrain::ocl {

constexpr int kViewDims = 6;
using View6 = std::array<uint64_t, kViewDims>;

// The dims of a tensor descriptor, as unsigned sizes.
std::vector<uint64_t> dims_of(const cltrain_tensor_desc& t);

// "[2, 3, 4]"
std::string dims_string(const std::vector<uint64_t>& dims);

// A view of tensors that all index the same dims. masks[d] has bit t set where tensor t spans dim
// d (its stride there is non-zero); a tensor without the bit has size 1 there (broadcast, or
// reduced away). Size-1 dims are dropped and neighbours with equal masks merged.
struct SpanView {
  View6 size{};  // merged sizes, outermost first; 1 where unused
  std::array<unsigned, kViewDims> mask{};
  // Contiguous strides of tensor `bit` over the dims it spans, 0 where it does not.
  View6 strides(unsigned bit) const;
};

// sizes and masks have one entry per original dim. Fails if more than six dims remain (only
// possible with more than six original dims).
SpanView make_span_view(const std::vector<uint64_t>& sizes, const std::vector<unsigned>& masks);

// Adds -D<prefix>0 .. -D<prefix>5.
void define_view(Defines& d, const char* prefix, const View6& v);

// unary_pair's x and y (the input and output, or their gradients) and their dims, of equal rank.
std::string same_rank_pair(const StepView& s, int32_t* x, int32_t* y, std::vector<uint64_t>* xd,
                           std::vector<uint64_t>* yd);

// Product of the sizes.
uint64_t view_count(const View6& v);

// Runs k once per element of the written tensor w: dimension 0 its innermost dim (dim 5, padded
// to whole work-groups, which the kernel checks), dimension 1 its rows (never padded: work-groups
// take whole rows); nothing for no elements.
StepRun row_launch(const OpContext& c, const Kernel& k, const View6& w);

}  // namespace cltrain::ocl
