// Module and Parameter: the registry every layer builds on.
//
// A Module owns its parameters and its child modules, each under a name; the
// full name of a parameter is the path of names down to it, joined by dots
// ("bert.encoder.layer.0.attention.self.query.weight"). ordo's BERT uses
// HuggingFace's names for the same tensors, so a checkpoint's names are the
// parameters' own names.
//
// Forward passes take a Context: whether the model trains (dropout on),
// where the dropout masks come from, and how its products multiply. Each dropout call takes the next Philox
// stream, so a step's masks are a function of (seed, step) alone and are the
// same on the CPU and the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/var.h"
#include "tensor/backend.h"
#include "tensor/ops.h"

namespace ordo::nn {

// How a parameter starts: BERT's rules are normal(0, initializer_range) for
// weight matrices and embeddings, zeros for biases, ones for LayerNorm gains.
struct Init {
  enum class Kind { zeros, ones, normal, constant, values } kind = Kind::zeros;
  double value = 0;  // the std of `normal`, the value of `constant`
  Tensor values;     // `values`: the parameter's starting entries (its shape, any dtype and device)
  static Init zeros() { return {Kind::zeros, 0, {}}; }
  static Init ones() { return {Kind::ones, 1, {}}; }
  static Init normal(double std) { return {Kind::normal, std, {}}; }
  static Init constant(double v) { return {Kind::constant, v, {}}; }
  // Entries computed by the variant (the paper's A* starts from Eq. 9's matrix).
  static Init from(Tensor t) { return {Kind::values, 0, std::move(t)}; }
};

struct Parameter {
  Var var;            // a leaf that requires a gradient
  Init init;          // applied by initialize()
  bool decay = true;  // AdamW weight decay applies (false for biases and LayerNorm)
  bool product_weight = false;  // a Linear's weight: an operand of a product every forward
};

using NamedParameter = std::pair<std::string, Parameter*>;

// An ablation of a score term (nn/position.h, the PE seam, defines it);
// declared here for Context's inference-time switch.
enum class Ablation;

// What the host knows of a forward's positions and segment ids (the batch is
// made there): their ranges, so that no encoding reads a device tensor back —
// a host synchronisation — to check a table's bounds or size its rows.
// BertModel::forward puts them in the Context for its duration.
struct InputFacts {
  int64_t position_min = 0, position_max = 0;
  int64_t widest = 0;           // max over rows of (largest - smallest position): every p_j - p_i is within +-widest
  bool rows_identical = true;   // every row's positions equal the first row's
  bool consecutive = true;      // every row counts up by one (p, p + 1, ...): p_j - p_i = j - i
  int64_t segment_min = 0, segment_max = 0;
};
// From row-major host arrays [batch, length]; `segments` null: all 0.
InputFacts input_facts(const int64_t* positions, const int64_t* segments, int64_t batch, int64_t length);

// The randomness and mode of one forward pass.
struct Context {
  bool training = false;
  // How the forward's products multiply (tensor/device_runtime.h): every op
  // of the model whose result depends on it is handed this value (and its
  // backward keeps it). The run's train.precision or --precision, resolved
  // once (train::resolve_precision); fp32 when a caller names none.
  MatmulPrecision precision = MatmulPrecision::fp32;
  uint64_t seed = 0;         // Philox seed of the dropout masks
  uint64_t next_stream = 0;  // stream of the next dropout call
  // An inference-time ablation (ordo forward --ablate); a model trained with
  // one (pe_options.ablate) applies its own and this must be none or equal.
  // Value-initialised: Ablation::none.
  Ablation ablate{};
  // The current forward's InputFacts (set by BertModel::forward); empty
  // outside one, where an encoding reads what it needs from the tensors.
  std::optional<InputFacts> facts;
  // Values every layer of the current forward shares, made once and kept
  // here under a key their maker names (pe::TableSet's tables shared by the
  // layers, rpe_sin's P(r)): one node, so the layers' gradients sum there and
  // reach the parameters once instead of once a layer (and head). Empty
  // outside a forward, as facts.
  std::map<std::string, Var> layer_shared;

  // Kernels fused where ordo has them (residual + dropout + LayerNorm, bias
  // + activation, on CUDA the attention: nn/bert.h); false runs the unfused
  // ops, the reference.
  bool fused = true;
  // The fused attention on the CPU too, with its reference kernels (plain
  // loops in double: slow): for recording the fused step's kernel calls
  // there (ordo bench step's MODELED figures). Off: the CPU runs the unfused ops.
  bool fused_attention_on_cpu = false;
  // Where the streams count from when the step is replayed from a CUDA
  // graph: one i64 on the model's device holding the step's first stream
  // (then next_stream counts from 0). Undefined: next_stream alone.
  Tensor stream_base;
  // The packed product weights' bf16 rounding kept current by the optimizer
  // (AdamW::keep_weights_rounding): a forward under bf16 products takes it
  // instead of rounding the weights with a cast. Empty: the forward casts.
  RoundedWeights rounded_weights;

  // Step s, micro-batch m of `micro` uses streams from (s * micro + m) * 2^20:
  // room for 2^20 dropout calls per forward, disjoint across steps.
  static uint64_t first_stream(int64_t step, int64_t micro_batch = 0, int64_t micro_batches = 1) {
    return static_cast<uint64_t>(step * micro_batches + micro_batch) << 20;
  }
  static Context train(uint64_t seed, int64_t step, int64_t micro_batch = 0, int64_t micro_batches = 1) {
    Context c;
    c.training = true;
    c.seed = seed;
    c.next_stream = first_stream(step, micro_batch, micro_batches);
    return c;
  }
  static Context eval(MatmulPrecision precision = MatmulPrecision::fp32) {
    Context c;
    c.precision = precision;
    return c;
  }
  PhiloxStream take_stream() { return PhiloxStream{seed, next_stream++, stream_base}; }
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its descendants with its full name
  // relative to this module, in registration order.
  std::vector<NamedParameter> named_parameters();
  // The parameter with this full name, or nullptr.
  Parameter* find_parameter(const std::string& name);
  int64_t parameter_count();
  // Converts every parameter to `dtype` (f64 for gradient checks of whole
  // layers; gradients and optimizer state start afresh).
  void to_dtype(DType dtype);

  // Registers a parameter of the given shape (contents set by initialize()).
  // Public so that helpers (pe::TableSet) can register on a module they serve.
  Parameter& add_parameter(const std::string& name, const Shape& shape, Init init, bool decay,
                           Device device);
  // Registers and returns a child module.
  template <class M>
  M& add_module(const std::string& name, std::unique_ptr<M> module) {
    M& ref = *module;
    children_.emplace_back(name, std::move(module));
    return ref;
  }

 private:
  void collect(const std::string& prefix, std::vector<NamedParameter>& out);

  std::vector<std::pair<std::string, std::unique_ptr<Parameter>>> parameters_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

// Sets every parameter of `module` from its Init, parameter `name` drawing
// from Philox (seed, stream = a hash of the name): adding a parameter never
// changes the others' initial values, and the CPU and GPU draw the same.
void initialize(Module& module, uint64_t seed);
uint64_t init_stream(const std::string& name);

// Moves the parameters (one dtype and device, one row shape) into one block of
// memory, their rows one after another in the order given, keeping their
// values, names and Inits: a product over all of them (attention's stacked
// Q/K/V) then reads them as one view (Tensor::joined_rows) instead of copying
// them together each forward. Anything that replaces a parameter's tensor later
// (Module::to_dtype) only undoes the joining; the products then copy again.
void join_parameters(const std::vector<Parameter*>& params);

// Moves every product weight of `module` (Parameter::product_weight, f32)
// into one block of memory, keeping values, names, Inits and the joins
// join_parameters made, so that a forward under bf16 products rounds them
// all with one cast (OperandRoundingScope, tensor/ops.h) instead of one each.
// Returns a parameter in the block, which locates it (its storage) for the
// scope, or nullptr when there is none. Undone as join_parameters is.
const Parameter* pack_product_weights(Module& module);

}  // namespace ordo::nn
