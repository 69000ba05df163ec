// The autodiff engine: Var, graph recording, backward.
#include "autograd/var.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "autograd/pending_gradient.h"
#include "tensor/ops.h"

namespace ordo {

namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

const std::vector<std::string>& differentiable_ops() {
  static const std::vector<std::string> ops = {
      // elementwise (autograd/ops_elementwise.cpp): every unary op, every binary op but the comparisons
#define ORDO_UNARY_OP(name, Formula, domain) #name,
#include "tensor/unary_ops.def"
#define ORDO_BINARY_OP(name, Formula) #name,
#define ORDO_COMPARISON_OP(name, Formula)
#include "tensor/binary_ops.def"
      "where",
      // reductions (autograd/ops_reduce.cpp)
      "sum", "mean", "max", "min", "var",
      // shapes (autograd/ops_shape.cpp)
      "reshape", "permute", "slice", "expand", "contiguous", "concat",
      // indexing (autograd/ops_index.cpp)
      "embedding", "embedding_sum", "index_select", "select_rows", "gather",
      // relative position encodings (autograd/ops_relative.cpp)
      "relative_gather", "relative_scatter", "relative_product", "band_scores", "band_apply",
      // fused attention (autograd/ops_attention.cpp)
      "attention",
      // transformer pieces (autograd/ops_nn.cpp)
      "matmul", "linear", "linear_stacked", "softmax", "softmax_dropout", "log_softmax", "layernorm", "cross_entropy",
      "linear_cross_entropy", "dropout",
      // fused transformer pieces (autograd/ops_fused.cpp)
      "residual_layernorm", "bias_activation", "bias_activation_layernorm", "embedding_layernorm", "split_heads",
      "rotary", "operand",
  };
  return ops;
}

namespace {
bool is_differentiable_op(const char* op) {
  static const std::unordered_set<std::string> known(differentiable_ops().begin(), differentiable_ops().end());
  return known.count(op) > 0;
}
}  // namespace

// ---- Var -----------------------------------------------------------------------------

Var::Var(Tensor value, bool requires_grad, std::string name) : state_(std::make_shared<VarState>()) {
  check_defined(value, "Var", "value");
  ORDO_CHECK(!requires_grad || is_floating(value.dtype()), "Var '", name,
             "': only floating-point values can require a gradient (dtype ", dtype_name(value.dtype()), ")");
  state_->value = std::move(value);
  state_->requires_grad = requires_grad;
  state_->name = std::move(name);
}

const Tensor& Var::value() const {
  ORDO_CHECK(state_, "use of an undefined Var");
  return state_->value;
}

const Tensor& Var::grad() const {
  ORDO_CHECK(state_, "use of an undefined Var");
  return state_->grad;
}

const std::string& Var::name() const {
  ORDO_CHECK(state_, "use of an undefined Var");
  return state_->name;
}

void Var::set_name(std::string name) { value(), state_->name = std::move(name); }
void Var::zero_grad() const { value(), state_->grad = Tensor(); }
void Var::set_grad(Tensor grad) const {
  if (grad.defined()) check_shape(grad, shape(), "set_grad", "grad");
  state_->grad = std::move(grad);
}
void Var::retain_grad() const { value(), state_->retain_grad = true; }

Var record_op(const char* op, Tensor value, std::vector<Var> inputs, BackwardFn backward) {
  ORDO_ASSERT(is_differentiable_op(op));
  bool needs_graph = grad_enabled() &&
                     std::any_of(inputs.begin(), inputs.end(), [](const Var& v) { return v.requires_grad(); });
  Var out(std::make_shared<VarState>());
  out.state_->value = std::move(value);
  if (needs_graph) {
    out.state_->requires_grad = true;
    auto node = std::make_shared<Node>();
    node->op = op;
    node->inputs = std::move(inputs);
    node->backward = std::move(backward);
    out.state_->node = std::move(node);
  }
  return out;
}

// ---- backward ------------------------------------------------------------------------

namespace {

// States reachable from root through nodes, each after all states that use it
// (reverse topological order), found with an explicit stack. The order holds
// owning pointers: freeing a node's inputs during backward must not destroy
// a state that is still to be processed.
std::vector<std::shared_ptr<VarState>> topological_order(const std::shared_ptr<VarState>& root) {
  std::vector<std::shared_ptr<VarState>> order;
  std::unordered_set<VarState*> visited;
  std::vector<std::pair<std::shared_ptr<VarState>, size_t>> stack;  // (state, next input to visit)
  stack.emplace_back(root, 0);
  visited.insert(root.get());
  while (!stack.empty()) {
    auto& [state, next] = stack.back();
    Node* node = state->node.get();
    if (node && next < node->inputs.size()) {
      const std::shared_ptr<VarState>& input = node->inputs[next++].state();
      if (input->requires_grad && visited.insert(input.get()).second) stack.emplace_back(input, 0);
      continue;
    }
    order.push_back(std::move(state));
    stack.pop_back();
  }
  std::reverse(order.begin(), order.end());
  return order;
}

// The gradient gathered for one state: a sum, and the slices' gradients
// (region, gradient) not yet added to it, in arrival order. Slices that
// tile the state along one axis are written into one buffer; anything else
// is summed exactly as each slice's own backward and the adds would.
struct SliceGradient {
  SliceRegion region;
  Tensor g;
  BackwardFn pad;  // the slice's own backward: g padded with zeros
};
struct PendingGradient {
  Tensor sum;
  std::vector<SliceGradient> parts;
  Tensor block;  // the buffer its slices' gradients were written into (gradient_destination), if any
};

// The parts' regions, each a step-1 range of one axis, cover `shape` along
// it exactly once.
bool parts_tile(const std::vector<SliceGradient>& parts, const Shape& shape) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const SliceGradient& first = parts[0];
  for (const SliceGradient& p : parts) {
    if (p.region.axis != first.region.axis || p.region.step != 1 || p.g.dtype() != first.g.dtype()) return false;
    ranges.emplace_back(p.region.start, p.region.end);
  }
  std::sort(ranges.begin(), ranges.end());
  int64_t at = 0;
  for (const auto& [start, end] : ranges) {
    if (start != at) return false;
    at = end;
  }
  return at == shape[first.region.axis];
}

// The one buffer of `shape` the tiling parts already lie in, each at its
// region (a backward that wrote its inputs' gradients into one block, as the
// fused attention writes q, k and v's into the stacked product's layout), or
// undefined. Its elements are exactly the parts': nothing else is taken.
Tensor parts_in_place(const std::vector<SliceGradient>& parts, const Shape& shape) {
  const SliceGradient* first = nullptr;
  for (const SliceGradient& p : parts)
    if (p.region.start == 0) first = &p;
  if (first == nullptr) return Tensor();
  const Tensor storage = first->g.whole_storage();
  const int64_t at = first->g.offset(), count = shape_numel(shape);
  if (at + count > storage.numel()) return Tensor();
  const Tensor block = storage.slice(0, at, at + count).view(shape);
  auto same_layout = [](const Tensor& a, const Tensor& b) {
    if (!a.shares_storage_with(b) || a.offset() != b.offset() || a.shape() != b.shape()) return false;
    for (int d = 0; d < a.dim(); ++d)
      if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
    return true;
  };
  for (const SliceGradient& p : parts)
    if (!same_layout(p.g, block.slice(p.region.axis, p.region.start, p.region.end))) return Tensor();
  return block;
}

// The parts added into the sum: one buffer written region by region where
// they tile the state and nothing else arrived (or the buffer they already
// lie in); else each part padded with zeros and added in arrival order (the
// slice's own backward).
Tensor gathered(PendingGradient& p, const Shape& shape) {
  if (p.parts.empty()) return std::move(p.sum);
  const Tensor& first = p.parts[0].g;
  if (!p.sum.defined() && parts_tile(p.parts, shape)) {
    Tensor in_place = parts_in_place(p.parts, shape);
    if (in_place.defined()) {
      p.parts.clear();
      return in_place;
    }
    Tensor g = Tensor::empty(shape, first.dtype(), first.device());
    for (const SliceGradient& part : p.parts) g.slice(part.region.axis, part.region.start, part.region.end).copy_from(part.g);
    p.parts.clear();
    return g;
  }
  for (const SliceGradient& part : p.parts) {
    Tensor g = part.pad(part.g, {true})[0];
    p.sum = p.sum.defined() ? add(p.sum, g) : g;
  }
  p.parts.clear();
  return std::move(p.sum);
}

// Two gradients of one value, summed in f32 where either is bf16 (a product
// wrote it so for an op that takes_bf16_gradient, which reads either).
Tensor sum_of_gradients(const Tensor& a, const Tensor& b) {
  auto wide = [](const Tensor& g) { return g.dtype() == DType::bf16 ? g.to(DType::f32) : g; };
  return add(wide(a), wide(b));
}

// The elements [first, last] of t's storage that t may touch.
std::pair<int64_t, int64_t> storage_span(const Tensor& t) {
  int64_t last = t.offset();
  for (int d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return {t.offset(), last};
}

// The spans of storage this backward gave leaves as their gradient buffers, by storage.
using AdoptedSpans = std::unordered_map<const Storage*, std::vector<std::pair<int64_t, int64_t>>>;

// Whether g may become a leaf's gradient buffer as it is: dense, and every
// other holder of its storage either a gradient still pending in `pending`
// or a leaf's gradient this backward adopted, none over elements g touches —
// a backward that wrote several inputs' gradients into one block (the stacked
// product's weights and biases), each then owned by one leaf. A later
// in-place add onto one of them (gradient accumulation, clipping) cannot
// reach another's elements; anything else holding the storage (a saved
// tensor, the same gradient given to two inputs, a retained gradient) makes
// it a copy.
bool adoptable(const Tensor& g, const VarState& leaf, const std::unordered_map<VarState*, PendingGradient>& pending,
               const AdoptedSpans& adopted) {
  if (!g.is_contiguous() || g.dtype() != leaf.value.dtype() || g.device() != leaf.value.device()) return false;
  if (g.numel() == 0 || g.storage().use_count() == 1) return true;
  const auto [first, last] = storage_span(g);
  auto apart = [&](std::pair<int64_t, int64_t> other) { return other.second < first || last < other.first; };
  long holders = 1;
  for (const auto& [state, p] : pending) {
    std::vector<const Tensor*> held{&p.sum, &p.block};
    for (const SliceGradient& part : p.parts) held.push_back(&part.g);
    for (const Tensor* other : held) {
      if (!other->defined() || !other->shares_storage_with(g)) continue;
      if (other->numel() > 0 && !apart(storage_span(*other))) return false;
      ++holders;
    }
  }
  const auto spans = adopted.find(g.storage().get());
  if (spans != adopted.end()) {
    for (const auto& span : spans->second)
      if (!apart(span)) return false;
    holders += static_cast<long>(spans->second.size());
  }
  return g.storage().use_count() == holders;
}

// Adds g into a leaf's .grad. The leaf owns its gradient buffer, so the add is
// in place: gradient accumulation across backward calls costs no allocation.
// The first gradient is not added to zeros: g becomes the buffer itself where
// it may (adoptable), else it is copied (no memset, no add).
void accumulate_leaf(VarState& leaf, Tensor g, const std::unordered_map<VarState*, PendingGradient>& pending,
                     AdoptedSpans& adopted) {
  if (leaf.grad.defined()) {
    add_(leaf.grad, g);
    return;
  }
  if (!adoptable(g, leaf, pending, adopted)) {
    leaf.grad = g.to(leaf.value.dtype()).clone();
    return;
  }
  if (g.storage().use_count() > 1) adopted[g.storage().get()].push_back(storage_span(g));
  leaf.grad = std::move(g);
}

// The gradients handed over to the node whose backward runs (take_pending_gradient).
thread_local std::vector<Tensor>* handed_over = nullptr;

// The sum gathered for `input` if a backward may add onto it in place: no
// slice part waiting, nothing but the engine holding it, dense, the input's
// dtype and not bf16 (a product adds onto f32; a bf16 gradient is summed by
// sum_of_gradients).
bool can_hand_over(const PendingGradient& p, const VarState& input) {
  const Tensor& g = p.sum;
  return p.parts.empty() && g.defined() && g.storage().use_count() == 1 && g.is_contiguous() && g.offset() == 0 &&
         g.dtype() == input.value.dtype() && g.dtype() != DType::bf16;
}

}  // namespace

Tensor take_pending_gradient(size_t input) {
  if (handed_over == nullptr || input >= handed_over->size()) return Tensor();
  return std::move((*handed_over)[input]);
}

namespace {

// gradient_destination's state for one backward call: the node whose
// backward runs, the gradients gathered so far, the slices given a place
// (each once) and the places given in each source's block.
struct Destinations {
  Node* node = nullptr;
  std::unordered_map<VarState*, PendingGradient>* pending = nullptr;
  std::unordered_set<VarState*> given;                                // the slices' states
  std::unordered_map<VarState*, std::vector<SliceRegion>> regions;    // by source
  std::vector<Tensor> taken;                                          // by input of `node`
};
thread_local Destinations* t_destinations = nullptr;

bool overlap(const SliceRegion& a, const SliceRegion& b) {
  return a.axis != b.axis || !(a.end <= b.start || b.end <= a.start);
}

}  // namespace

// The input reaches a slice of step 1 through reshapes only (select's), no
// gradient has gathered anywhere on that path, and its region is a
// contiguous part of the source's block, apart from every place given
// before: the block (allocated by the first taker, in its dtype) slice
// viewed as the input.
Tensor gradient_destination(size_t input, DType dtype) {
  Destinations* d = t_destinations;
  if (d == nullptr || input >= d->node->inputs.size() || d->taken[input].defined()) return Tensor();
  VarState* const state = d->node->inputs[input].state().get();
  VarState* at = state;
  for (;;) {
    if (!at->node || at->node->freed || d->pending->count(at) || d->given.count(at)) return Tensor();
    if (at->node->is_slice) break;
    if (std::strcmp(at->node->op, "reshape") != 0) return Tensor();
    at = at->node->inputs[0].state().get();
  }
  const SliceRegion region = at->node->region;
  VarState* source = at->node->inputs[0].state().get();
  const Shape& whole = source->value.shape();
  int64_t outer = 1;  // the slice of a contiguous block is contiguous when the axes before it are 1 long
  for (int a = 0; a < region.axis; ++a) outer *= whole[a];
  if (region.step != 1 || outer != 1 || !source->requires_grad) return Tensor();
  for (const SliceRegion& other : d->regions[source])
    if (overlap(region, other)) return Tensor();
  PendingGradient& slot = (*d->pending)[source];
  if (!slot.block.defined()) {
    if (slot.sum.defined() || !slot.parts.empty()) return Tensor();
    slot.block = Tensor::empty(whole, dtype, source->value.device());
  }
  if (slot.block.dtype() != dtype) return Tensor();
  d->regions[source].push_back(region);
  for (VarState* s = state; s != source; s = s->node->inputs[0].state().get()) d->given.insert(s);
  d->taken[input] = slot.block.slice(region.axis, region.start, region.end).view(state->value.shape());
  return d->taken[input];
}

namespace {
// A scalar output's seed, 1: one kept per shape, dtype and device, so that a
// training step makes no fill for it (a launch on a device). Nothing writes
// into it: the engine adds gradients out of place, and hands a sum over for
// in-place use (can_hand_over) or adopts it as a leaf's buffer (adoptable)
// only when it alone holds the storage, which this cache's reference rules
// out. Kept for the process's life (never destroyed: no device memory freed
// after the runtime has gone at exit).
Tensor unit_seed(const Shape& shape, DType dtype, Device device) {
  static std::mutex mutex;
  static auto* seeds = new std::map<std::tuple<Shape, DType, std::string>, Tensor>();
  const std::lock_guard<std::mutex> lock(mutex);
  Tensor& seed = (*seeds)[{shape, dtype, device.str()}];
  if (!seed.defined()) seed = Tensor::ones(shape, dtype, device);
  return seed;
}
}  // namespace

void Var::backward(const Tensor& seed, bool retain_graph,
                   const std::function<void(VarState& leaf)>& on_leaf_done) const {
  ORDO_CHECK(state_, "backward() on an undefined Var");
  ORDO_CHECK(state_->requires_grad, "backward(): '", state_->name.empty() ? "this value" : state_->name,
             "' does not require a gradient (no input of the ops that made it did)");
  Tensor start = seed;
  if (!start.defined()) {
    ORDO_CHECK(numel() == 1, "backward(): a seed gradient is needed for a non-scalar output of shape ",
               shape_str(shape()));
    start = unit_seed(shape(), dtype(), device());
  }
  check_shape(start, shape(), "backward", "seed");

  std::unordered_map<VarState*, PendingGradient> pending;  // summed gradient of each non-leaf
  AdoptedSpans adopted;
  Destinations destinations;
  destinations.pending = &pending;
  pending[state_.get()].sum = start;
  for (const std::shared_ptr<VarState>& owned : topological_order(state_)) {
    VarState* state = owned.get();
    auto it = pending.find(state);
    if (it == pending.end()) continue;  // no gradient flowed here
    Tensor g = gathered(it->second, state->value.shape());
    pending.erase(it);
    if (!g.defined()) continue;  // only a block given out, never filled (the check after each backward rules it out)
    if (!state->node) {
      // Reverse topological order: every consumer of this leaf came before it,
      // so its gradient is complete now.
      accumulate_leaf(*state, std::move(g), pending, adopted);
      if (on_leaf_done) on_leaf_done(*state);
      continue;
    }
    if (state->retain_grad) state->grad = g;
    Node& node = *state->node;
    ORDO_CHECK(!node.freed, "backward(): the graph through '", node.op,
               "' was already freed by an earlier backward (pass retain_graph = true to keep it)");
    if (node.is_slice) {
      // Kept as (region, gradient) until its input's gradient is complete.
      PendingGradient& slot = pending[node.inputs[0].state().get()];
      slot.parts.push_back({node.region, std::move(g), retain_graph ? node.backward : std::move(node.backward)});
      if (!retain_graph) {
        node.freed = true;
        node.backward = nullptr;
        node.inputs.clear();
      }
      continue;
    }
    std::vector<bool> needs(node.inputs.size());
    for (size_t i = 0; i < needs.size(); ++i) needs[i] = node.inputs[i].requires_grad();
    // The inputs' gathered gradients a backward may add onto (each input
    // once); `kept` sees which were taken.
    std::vector<Tensor> offered(needs.size()), kept(needs.size());
    std::unordered_set<VarState*> offered_states;
    for (size_t i = 0; i < needs.size(); ++i) {
      VarState* input = node.inputs[i].state().get();
      auto found = needs[i] ? pending.find(input) : pending.end();
      if (found == pending.end() || !can_hand_over(found->second, *input) || !offered_states.insert(input).second)
        continue;
      offered[i] = kept[i] = std::move(found->second.sum);
    }
    std::vector<Tensor> grads;
    destinations.node = &node;
    destinations.taken.assign(needs.size(), Tensor());
    {
      struct HandOver {  // for this backward only, even if it throws
        HandOver(std::vector<Tensor>* offered, Destinations* places) {
          handed_over = offered;
          t_destinations = places;
        }
        ~HandOver() {
          handed_over = nullptr;
          t_destinations = nullptr;
        }
      } scope(&offered, &destinations);
      grads = node.backward(g, needs);
    }
    ORDO_ASSERT(grads.size() == node.inputs.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      VarState* input = node.inputs[i].state().get();
      const bool taken = kept[i].defined() && !offered[i].defined();
      if (kept[i].defined() && !taken) pending[input].sum = std::move(kept[i]);  // not taken: as it was
      const Tensor& place = destinations.taken[i];
      ORDO_CHECK(!place.defined() || (grads[i].defined() && grads[i].shares_storage_with(place) &&
                                      grads[i].offset() == place.offset()),
                 "internal error: backward of '", node.op, "' took a destination for input ", i,
                 "'s gradient but returned another tensor");
      if (!needs[i] || !grads[i].defined()) {
        ORDO_CHECK(!taken, "internal error: backward of '", node.op, "' took input ", i,
                   "'s gathered gradient and returned none");
        continue;
      }
      ORDO_CHECK(grads[i].shape() == input->value.shape(), "internal error: backward of '", node.op,
                 "' gave input ", i, " a gradient of shape ", shape_str(grads[i].shape()),
                 ", expected ", shape_str(input->value.shape()));
      PendingGradient& slot = pending[input];
      if (taken) {
        // The backward added its term onto the gathered gradient: that is the sum now.
        ORDO_CHECK(grads[i].shares_storage_with(kept[i]), "internal error: backward of '", node.op, "' took input ",
                   i, "'s gathered gradient but returned another tensor");
        slot.sum = grads[i];
        continue;
      }
      if (!slot.parts.empty()) slot.sum = gathered(slot, input->value.shape());  // in arrival order
      slot.sum = slot.sum.defined() ? sum_of_gradients(slot.sum, grads[i]) : grads[i];
    }
    if (!retain_graph) {
      node.freed = true;
      node.backward = nullptr;  // releases the saved tensors
      node.inputs.clear();
    }
  }
}

std::vector<std::string> graph_ops(const Var& v) {
  std::vector<std::string> ops;
  if (!v.defined()) return ops;
  for (const auto& s : topological_order(v.state()))
    if (s->node) ops.push_back(s->node->op);
  return ops;
}

}  // namespace ordo
