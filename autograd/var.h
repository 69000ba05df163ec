// Reverse-mode automatic differentiation, define-by-run (as micrograd and
// PyTorch): applying a differentiable op to Vars computes the value at once
// and, when some input requires a gradient, records a Node holding the
// inputs and a backward closure (which captures what the backward needs).
// Var::backward() walks the recorded graph in reverse topological order —
// iteratively, since BERT graphs are deep — calls each backward once with the
// summed gradient of its output, accumulates into the leaves' .grad with +=,
// and frees the graph as it goes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ordo {

struct Node;
class Var;

// The gradients of a node's inputs given the gradient of its output. `needs[i]`
// says whether input i wants one; return an undefined Tensor for the others
// (needs_input_grad in tinygrad: unneeded gradients are never computed).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out, const std::vector<bool>& needs)>;

// What a Var handle points to. Shared: copies of a Var are the same variable.
struct VarState {
  Tensor value;
  Tensor grad;                 // leaves: accumulated by backward(); others: only with retain_grad
  bool requires_grad = false;
  bool retain_grad = false;    // keep the gradient of a non-leaf after backward()
  std::shared_ptr<Node> node;  // the op that produced value; null for leaves
  std::string name;            // optional, used in messages (e.g. a parameter's name)
};

class Var {
 public:
  Var() = default;
  // A leaf. requires_grad = true makes it a parameter-like input whose .grad backward() fills.
  explicit Var(Tensor value, bool requires_grad = false, std::string name = "");

  bool defined() const { return state_ != nullptr; }
  const Tensor& value() const;
  const Tensor& grad() const;  // undefined until a backward reaches this Var
  bool requires_grad() const { return state_ && state_->requires_grad; }
  bool is_leaf() const { return state_ && !state_->node; }
  const std::string& name() const;
  void set_name(std::string name);

  // The accumulated gradient is dropped (the next backward starts from zero).
  void zero_grad() const;
  void set_grad(Tensor grad) const;
  void retain_grad() const;

  const Shape& shape() const { return value().shape(); }
  int dim() const { return value().dim(); }
  int64_t size(int d) const { return value().size(d); }
  int64_t numel() const { return value().numel(); }
  DType dtype() const { return value().dtype(); }
  Device device() const { return value().device(); }

  // Back-propagates from this Var. Without a seed it must have one element
  // (the loss) and is seeded with 1. The graph is freed afterwards unless
  // retain_graph; a second backward through a freed graph is an error.
  // `on_leaf_done`, if given, is called for each leaf as soon as its .grad
  // holds all of this backward's contributions — while the rest of the graph
  // is still being walked (data parallelism reduces gradients meanwhile).
  void backward(const Tensor& seed = Tensor(), bool retain_graph = false,
                const std::function<void(VarState& leaf)>& on_leaf_done = {}) const;

  // The same value, cut from the graph.
  Var detach() const { return Var(value()); }

  const std::shared_ptr<VarState>& state() const { return state_; }

 private:
  explicit Var(std::shared_ptr<VarState> state) : state_(std::move(state)) {}
  friend Var record_op(const char*, Tensor, std::vector<Var>, BackwardFn);
  std::shared_ptr<VarState> state_;
};

// The part of its input a slice node reads (Tensor::slice's arguments).
struct SliceRegion {
  int axis = 0;
  int64_t start = 0, end = 0, step = 1;
};

struct Node {
  const char* op = "";  // one of differentiable_ops()
  std::vector<Var> inputs;
  BackwardFn backward;
  bool freed = false;   // backward() ran and released inputs and saved tensors
  // Set for a slice: backward() may write its gradient straight into the
  // input's region instead of calling `backward` (see Var::backward).
  bool is_slice = false;
  SliceRegion region;
  // The backward reads a bf16 gradient of its (bf16) output as it reads an
  // f32 one, so a product that makes that gradient may write it in bf16:
  // half the bytes, and the rounding the backward's own products would make.
  bool takes_bf16_gradient = false;
};

// Records `value` as the output of op applied to inputs. When gradients are
// off (NoGradGuard) or no input requires one, nothing is recorded and the
// closure (with whatever it saved) is dropped at once.
Var record_op(const char* op, Tensor value, std::vector<Var> inputs, BackwardFn backward);

// Gradient recording is on by default; a NoGradGuard turns it off in its scope
// (evaluation, optimizer updates). Per thread.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Every op that records a Node, by name. record_op rejects names not in the
// list, and the gradient-check suite proves each one is covered.
const std::vector<std::string>& differentiable_ops();

// The op names of every Node reachable from v (what a gradient check of v covers).
std::vector<std::string> graph_ops(const Var& v);

}  // namespace ordo
