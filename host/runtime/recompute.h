// Recomputation (gradient checkpointing, as in Chen et al. 2016): a forward step runs again during
// backward, right before the first step that needs its outputs there, so that those outputs need
// not live from forward to backward. The repeat runs the same op on the same inputs (each one the
// original, or the repeat of another recomputed step), so it writes the same bits, and the backward
// steps read its outputs instead of the originals: per-step losses stay what they were.
#pragma once

#include <cstdint>
#include <vector>

#include "training_graph.h"

namespace cltrain {

// The forward steps whose outputs may be recomputed: a model operator's forward step none of
// whose outputs is persistent, holds data, is the input, prediction or loss, is read by the loss or
// written by another step, and (read_after_loss_only) some of whose outputs a step after the loss
// reads. Without that last condition: the steps that may be repeated to feed a candidate's repeat.
std::vector<int32_t> recompute_candidates(const TrainingGraph& g, bool read_after_loss_only = true);

// The steps of g with the given forward steps (indices into g.steps) recomputed: each repeat goes
// right before the first step after the loss that reads an output of it (or before a repeat that
// reads it), writes new tensors (ids g.tensors.size() on, copies of its outputs' descriptors, listed
// in `copies_of`), and every step after the loss reads those instead of the originals.
struct RecomputedSteps {
  std::vector<cltrain_step_desc> steps;
  std::vector<int32_t> owner_step;  // as TrainingGraph's, renumbered
  std::vector<int32_t> recomputes;  // per step: the forward step of g it repeats, -1 for none
  std::vector<int32_t> origin;      // per step: its index in g (a repeat: the step it repeats)
  std::vector<int32_t> copies_of;   // per new tensor: the tensor of g it is the recomputed copy of
};
RecomputedSteps recompute_steps(const TrainingGraph& g, std::vector<int32_t> forward_steps);

// A new graph: base with the given forward steps recomputed (recompute_steps), its tensors named
// "recompute/<name>". base is not changed.
TrainingGraph with_recomputation(const TrainingGraph& base, const std::vector<int32_t>& forward_steps);

// Per step of r, the bytes of the tensors live there (lifetimes from the steps' accesses, persistent
// ones over all steps) plus extra[origin] (a backend's kernel scratch of the step it comes from).
std::vector<uint64_t> live_bytes_per_step(const TrainingGraph& g, const RecomputedSteps& r,
                                          const std::vector<uint64_t>& extra);

// Adds forward steps to `chosen` (greedily, each time the move that takes the most bytes off the
// steps above target per FLOP it repeats: a candidate with the repeatable steps that write its
// inputs, up to 12 producers back) until no step's live bytes (live_bytes_per_step) exceed
// target or no candidate takes any off. Returns the largest live bytes of a step with them.
uint64_t choose_recomputation(const TrainingGraph& g, const std::vector<uint64_t>& extra, uint64_t target,
                              std::vector<int32_t>* chosen);

}  // namespace cltrain
