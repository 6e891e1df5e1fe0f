// The decode steps (one token) of the families beyond plain Llama (stages_family.h) on the fused
// kernels, as llama's fused_layer_stages run: the norms inside the mat-vecs
// (matvec_fused*.comp), the residual adds inside the output and down projections, the gate's
// activation inside gate/up, the attention split over positions (attention.comp SPLIT_KV
// FAMILY) or, where one run a head covers the context, with the output projection in the same
// dispatch (WO FAMILY: Wo's products added into x, or into tmp before Gemma's post-norm), and
// Q/K/V with their biases, q/k norms, rope and the KV store in one dispatch (FusedMode::Heads;
// qkv_rope.comp after the mat-vecs where the weights do not allow it: Phi-3's joined attn_qkv).
// Gemma's post-norms fold into the next mat-vec's input, or take a small op of their own with
// their residual add.
#pragma once

#include <vector>

#include "vulkan/stages.h"

namespace ember::vulkan {

// Whether every layer's matrices (and the output's) are of one piece and of types the fused
// mat-vecs read here: then decode steps take family_decode_stages().
bool family_fused_layers(const Adapter& a, const Plan& plan, const DeviceModel& m);

// The stages of a decode step (step.n == 1) of a family model with m.fused_layers.
std::vector<Stage> family_decode_stages(const Recorder& rec, const DeviceModel& m,
                                        const Step& step);

// StageOp::FamDec*: recorded by record_family_decode_stage (with the barrier after it).
bool is_family_decode_stage(StageOp op);
Status record_family_decode_stage(Recorder& rec, const DeviceModel& m, const Buffers& b,
                                  const Stage& st);

}  // namespace ember::vulkan
