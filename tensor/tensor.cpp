#include "tensor/tensor.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "tensor/backend.h"
#include "tensor/device_runtime.h"

namespace ordo {

// ---- shape helpers --------------------------------------------------------------

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape strides(s.size());
  int64_t stride = 1;
  for (size_t i = s.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(s[i], 1);
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ORDO_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
               " cannot be broadcast together (axis ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_dim(int dim, int ndim, const char* what) {
  int d = dim < 0 ? dim + ndim : dim;
  ORDO_CHECK(d >= 0 && d < ndim, what, ": axis ", dim, " is out of range for a tensor with ",
             ndim, " dims (expected ", -ndim, " <= axis < ", ndim, ")");
  return d;
}

// ---- storage ----------------------------------------------------------------------

namespace {
constexpr size_t kHostAlignment = 64;  // a cache line; also what AVX-512 loads like

// Host memory held by tensors, for peak-memory figures.
std::atomic<size_t> g_host_in_use{0}, g_host_peak{0};
std::atomic<int64_t> g_host_allocations{0};

void host_track(size_t nbytes) {
  size_t now = g_host_in_use += nbytes;
  size_t peak = g_host_peak.load();
  while (now > peak && !g_host_peak.compare_exchange_weak(peak, now)) {
  }
  ++g_host_allocations;
}

// Large host blocks go back into this cache instead of to the system: a
// training step allocates the same sizes every step, and a fresh block costs
// a page fault and a kernel zeroing per page (a few percent of a CPU step).
// Blocks are rounded to 64 KiB and reused only at exactly that size. The
// cache holds at most twice the peak of bytes in use (at least 1 GiB): a
// step's blocks of one size are freed and asked for again at different
// moments, so serving a step takes the sum over sizes of each one's most
// blocks alive at once, more than the peak. At a fixed 1 GiB a mini
// fine-tuning step (peak ~2.5 GB) met ~430,000 page faults again every step;
// at 1x the peak ~200,000; at 2x none.
class HostCache {
 public:
  static constexpr size_t kMinBlock = size_t{1} << 20;  // smaller ones: malloc's own bins do well
  static constexpr size_t kMinBound = size_t{1} << 30;

  static size_t round(size_t nbytes) {
    constexpr size_t kGranule = size_t{1} << 16;
    return nbytes >= kMinBlock ? (nbytes + kGranule - 1) / kGranule * kGranule
                               : (std::max<size_t>(nbytes, 1) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  }
  void* take(size_t rounded) {
    if (rounded < kMinBlock) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(rounded);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    cached_ -= rounded;
    return p;
  }
  // False when the block is not kept (the caller frees it).
  bool give(void* p, size_t rounded) {
    if (rounded < kMinBlock) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + rounded > std::max(kMinBound, 2 * g_host_peak.load())) return false;  // then freed
    free_.emplace(rounded, p);
    cached_ += rounded;
    return true;
  }
  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, p] : free_) std::free(p);
    free_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
};

HostCache& host_cache() {
  static HostCache* cache = new HostCache;  // never destroyed: tensors may outlive static destructors
  return *cache;
}
}  // namespace

namespace detail {
AllocatorStats host_allocator_stats() {
  AllocatorStats s;
  s.bytes_in_use = g_host_in_use;
  s.peak_bytes_in_use = g_host_peak;
  s.bytes_cached = host_cache().cached();
  s.allocations = g_host_allocations;
  return s;
}
void host_reset_peak() { g_host_peak = g_host_in_use.load(); }
void host_empty_cache() { host_cache().release(); }
}  // namespace detail

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device.is_cpu()) {
    size_t rounded = HostCache::round(nbytes);
    data_ = host_cache().take(rounded);
    if (!data_) data_ = std::aligned_alloc(kHostAlignment, rounded);
    ORDO_CHECK(data_ != nullptr, "out of host memory allocating ", nbytes, " bytes");
    host_track(nbytes);
  } else {
    data_ = detail::device_allocate(device, nbytes);
  }
}

Storage::~Storage() {
  if (device_.is_cpu()) {
    if (!host_cache().give(data_, HostCache::round(nbytes_))) std::free(data_);
    g_host_in_use -= nbytes_;
  } else {
    detail::device_release(device_, data_, nbytes_);
  }
}

// ---- construction ---------------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset,
               DType dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {}

Tensor Tensor::with_view(Shape shape, Shape strides, int64_t offset) const {
  return Tensor(storage_, std::move(shape), std::move(strides), offset, dtype_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  // Checked before multiplying: a shape from a file must not overflow into a small allocation.
  int64_t numel = 1;
  for (int64_t d : shape) {
    ORDO_CHECK(d >= 0, "Tensor::empty: negative size in shape ", shape_str(shape));
    ORDO_CHECK(d == 0 || numel <= (int64_t{1} << 56) / d, "Tensor::empty: shape ", shape_str(shape),
               " has too many elements");
    numel *= d;
  }
  size_t nbytes = static_cast<size_t>(numel) * dtype_size(dtype);
  return Tensor(std::make_shared<Storage>(nbytes, device), shape, contiguous_strides(shape), 0,
                dtype);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}

Tensor Tensor::scalar(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}

Tensor Tensor::arange(int64_t n, DType dtype, Device device) {
  ORDO_CHECK(n >= 0, "Tensor::arange: n must be >= 0, got ", n);
  std::vector<int64_t> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), 0);
  return from_vector(values, {n}, device).to(dtype);
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  ORDO_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "Tensor::from_vector: ",
             values.size(), " values do not fill shape ", shape_str(shape), " (",
             shape_numel(shape), " elements)");
  Tensor host = empty(shape, dtype_of<T>::value, Device::cpu());
  if (!values.empty()) std::memcpy(host.raw_data(), values.data(), values.size() * sizeof(T));
  return host.to(device);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  check_defined(*this, "to_vector", "tensor");
  ORDO_CHECK(dtype_ == dtype_of<T>::value, "to_vector: tensor has dtype ", dtype_name(dtype_),
             ", asked for ", dtype_name(dtype_of<T>::value));
  Tensor host = to(Device::cpu()).contiguous();
  std::vector<T> out(static_cast<size_t>(numel()));
  if (!out.empty()) std::memcpy(out.data(), host.raw_data(), out.size() * sizeof(T));
  return out;
}

#define ORDO_INSTANTIATE_VECTOR_IO(T)                                                 \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&, Device); \
  template std::vector<T> Tensor::to_vector<T>() const;
ORDO_INSTANTIATE_VECTOR_IO(float)
ORDO_INSTANTIATE_VECTOR_IO(double)
ORDO_INSTANTIATE_VECTOR_IO(int64_t)
ORDO_INSTANTIATE_VECTOR_IO(int32_t)
ORDO_INSTANTIATE_VECTOR_IO(uint8_t)
#undef ORDO_INSTANTIATE_VECTOR_IO

std::vector<double> Tensor::to_doubles() const {
  check_defined(*this, "to_doubles", "tensor");
  return to(Device::cpu()).to(DType::f64).to_vector<double>();
}

double Tensor::item() const {
  ORDO_CHECK(defined() && numel() == 1, "item: expected a one-element tensor, got shape ",
             defined() ? shape_str(shape_) : "undefined");
  return to_doubles()[0];
}

// ---- metadata -------------------------------------------------------------------------

int64_t Tensor::size(int d) const { return shape_[normalize_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int d) const { return strides_[normalize_dim(d, dim(), "stride")]; }

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;  // the stride of a size-1 axis never matters
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

template <class T>
T* Tensor::data() const {
  ORDO_CHECK(dtype_ == dtype_of<T>::value, "data<", dtype_name(dtype_of<T>::value),
             ">: tensor has dtype ", dtype_name(dtype_));
  return static_cast<T*>(raw_data());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int64_t* Tensor::data<int64_t>() const;
template int32_t* Tensor::data<int32_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;

void* Tensor::raw_data() const {
  check_defined(*this, "raw_data", "tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

// ---- views -------------------------------------------------------------------------------

namespace {
// Resolves one -1 in a requested shape against the element count.
Shape infer_shape(const Shape& requested, int64_t numel, const Shape& from) {
  Shape shape = requested;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      ORDO_CHECK(infer < 0, "reshape: more than one -1 in ", shape_str(requested));
      infer = static_cast<int>(i);
    } else {
      ORDO_CHECK(shape[i] >= 0, "reshape: negative size in ", shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    ORDO_CHECK(known != 0 && numel % known == 0, "reshape: cannot reshape ", shape_str(from),
               " into ", shape_str(requested));
    shape[infer] = numel / known;
  }
  ORDO_CHECK(shape_numel(shape) == numel, "reshape: cannot reshape ", shape_str(from), " (",
             numel, " elements) into ", shape_str(requested));
  return shape;
}

// Strides for viewing (shape, strides) as new_shape without copying, or an
// empty result when the memory layout does not allow it. Walks both shapes
// in chunks of equal element count; each old chunk must be one contiguous run.
bool view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape, Shape& out) {
  out.assign(new_shape.size(), 0);
  if (shape_numel(shape) == 0) {
    out = contiguous_strides(new_shape);
    return true;
  }
  size_t oi = 0, ni = 0;
  const size_t on = shape.size(), nn = new_shape.size();
  while (oi < on || ni < nn) {
    // Skip size-1 axes on both sides (their stride is arbitrary).
    if (oi < on && shape[oi] == 1) { ++oi; continue; }
    if (ni < nn && new_shape[ni] == 1) { out[ni] = 1; ++ni; continue; }
    if (oi >= on || ni >= nn) return false;
    // Grow a chunk [oi, oe) of old axes and [ni, ne) of new axes with equal products.
    size_t oe = oi + 1, ne = ni + 1;
    int64_t op = shape[oi], np = new_shape[ni];
    while (op != np) {
      if (op < np) {
        if (oe >= on) return false;
        op *= shape[oe++];
      } else {
        if (ne >= nn) return false;
        np *= new_shape[ne++];
      }
    }
    // The old chunk must be contiguous within itself (ignoring size-1 axes).
    for (size_t k = oi; k + 1 < oe; ++k) {
      if (shape[k] == 1) continue;
      size_t next = k + 1;
      while (next < oe && shape[next] == 1) ++next;
      if (next < oe && strides[k] != strides[next] * shape[next]) return false;
    }
    // Innermost stride of the chunk, then row-major strides for the new axes.
    size_t last = oe - 1;
    while (last > oi && shape[last] == 1) --last;
    int64_t stride = strides[last];
    for (size_t k = ne; k-- > ni;) {
      out[k] = stride;
      stride *= new_shape[k];
    }
    oi = oe;
    ni = ne;
  }
  return true;
}
}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  check_defined(*this, "view", "tensor");
  Shape resolved = infer_shape(shape, numel(), shape_);
  Shape strides;
  ORDO_CHECK(view_strides(shape_, strides_, resolved, strides), "view: a tensor of shape ",
             shape_str(shape_), " with strides ", shape_str(strides_), " cannot be viewed as ",
             shape_str(resolved), " without a copy (use reshape or contiguous)");
  return with_view(resolved, strides, offset_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  check_defined(*this, "reshape", "tensor");
  Shape resolved = infer_shape(shape, numel(), shape_);
  Shape strides;
  if (view_strides(shape_, strides_, resolved, strides)) return with_view(resolved, strides, offset_);
  return contiguous().view(resolved);
}

Tensor Tensor::permute(const std::vector<int>& order) const {
  check_defined(*this, "permute", "tensor");
  ORDO_CHECK(static_cast<int>(order.size()) == dim(), "permute: order has ", order.size(),
             " axes, tensor has ", dim());
  Shape shape(order.size()), strides(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    int d = normalize_dim(order[i], dim(), "permute");
    ORDO_CHECK(!seen[d], "permute: axis ", d, " appears twice");
    seen[d] = true;
    shape[i] = shape_[d];
    strides[i] = strides_[d];
  }
  return with_view(shape, strides, offset_);
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> order(dim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[normalize_dim(a, dim(), "transpose")], order[normalize_dim(b, dim(), "transpose")]);
  return permute(order);
}

Tensor Tensor::slice(int d, int64_t start, int64_t end, int64_t step) const {
  check_defined(*this, "slice", "tensor");
  d = normalize_dim(d, dim(), "slice");
  ORDO_CHECK(step >= 1, "slice: step must be >= 1, got ", step);
  int64_t n = shape_[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  ORDO_CHECK(start >= 0 && start <= end && end <= n, "slice: range [", start, ", ", end,
             ") is out of bounds for axis ", d, " of size ", n);
  Shape shape = shape_, strides = strides_;
  shape[d] = (end - start + step - 1) / step;
  strides[d] = strides_[d] * step;
  return with_view(shape, strides, offset_ + start * strides_[d]);
}

Tensor Tensor::joined_rows(const std::vector<Tensor>& parts) {
  if (parts.empty() || !parts[0].defined() || parts[0].dim() < 1) return Tensor();
  const Tensor& first = parts[0];
  const Shape row_shape(first.shape_.begin() + 1, first.shape_.end());
  int64_t rows = 0, next = first.offset_;
  for (const Tensor& p : parts) {
    if (!p.defined() || p.storage_ != first.storage_ || p.dtype_ != first.dtype_ || p.dim() != first.dim() ||
        !p.is_contiguous() || p.offset_ != next || Shape(p.shape_.begin() + 1, p.shape_.end()) != row_shape)
      return Tensor();
    rows += p.shape_[0];
    next += p.numel();
  }
  Shape shape = first.shape_;
  shape[0] = rows;
  return first.with_view(shape, contiguous_strides(shape), first.offset_);
}

Tensor Tensor::whole_storage() const {
  check_defined(*this, "whole_storage", "tensor");
  const int64_t n = static_cast<int64_t>(storage_->nbytes() / dtype_size(dtype_));
  return with_view({n}, {1}, 0);
}

Tensor Tensor::same_view_on(const Tensor& twin) const {
  check_defined(*this, "same_view_on", "tensor");
  check_defined(twin, "same_view_on", "twin");
  const int64_t n = static_cast<int64_t>(storage_->nbytes() / dtype_size(dtype_));
  ORDO_CHECK(twin.storage_->nbytes() / dtype_size(twin.dtype_) == static_cast<size_t>(n),
             "same_view_on: the twin's storage holds ", twin.storage_->nbytes() / dtype_size(twin.dtype_),
             " elements, this view's ", n);
  return Tensor(twin.storage_, shape_, strides_, offset_, twin.dtype_);
}

Tensor Tensor::select(int d, int64_t index) const {
  check_defined(*this, "select", "tensor");
  d = normalize_dim(d, dim(), "select");
  int64_t n = shape_[d];
  if (index < 0) index += n;
  ORDO_CHECK(index >= 0 && index < n, "select: index ", index, " is out of bounds for axis ", d,
             " of size ", n);
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return with_view(shape, strides, offset_ + index * strides_[d]);
}

Tensor Tensor::expand(const Shape& shape) const {
  check_defined(*this, "expand", "tensor");
  ORDO_CHECK(shape.size() >= shape_.size(), "expand: cannot expand ", shape_str(shape_), " to ",
             shape_str(shape), " (fewer dims)");
  size_t lead = shape.size() - shape_.size();
  Shape strides(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    int64_t want = shape[lead + i];
    if (shape_[i] == want) {
      strides[lead + i] = strides_[i];
    } else {
      ORDO_CHECK(shape_[i] == 1, "expand: cannot expand ", shape_str(shape_), " to ",
                 shape_str(shape), " (axis ", i, " has size ", shape_[i], ", not 1)");
    }
  }
  return with_view(shape, strides, offset_);
}

Tensor Tensor::unsqueeze(int d) const {
  check_defined(*this, "unsqueeze", "tensor");
  d = normalize_dim(d, dim() + 1, "unsqueeze");
  Shape shape = shape_, strides = strides_;
  int64_t stride = d < dim() ? strides_[d] * shape_[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return with_view(shape, strides, offset_);
}

Tensor Tensor::squeeze(int d) const {
  check_defined(*this, "squeeze", "tensor");
  d = normalize_dim(d, dim(), "squeeze");
  ORDO_CHECK(shape_[d] == 1, "squeeze: axis ", d, " has size ", shape_[d], ", not 1");
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return with_view(shape, strides, offset_);
}

// ---- copies --------------------------------------------------------------------------------

Tensor Tensor::contiguous() const {
  check_defined(*this, "contiguous", "tensor");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  check_defined(*this, "clone", "tensor");
  Tensor out = empty(shape_, dtype_, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  check_defined(*this, "to", "tensor");
  if (dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(Device device) const {
  check_defined(*this, "to", "tensor");
  if (device == this->device()) return *this;
  Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, device);
  detail::copy_bytes(out.raw_data(), device, src.raw_data(), src.device(),
                     static_cast<size_t>(numel()) * dtype_size(dtype_));
  return out;
}

void Tensor::copy_from(const Tensor& src) const {
  check_defined(*this, "copy_from", "destination");
  check_defined(src, "copy_from", "source");
  Tensor source = src.expand(shape_);
  if (source.device().is_cpu() && device().is_cuda() && source.dtype() == dtype_ && source.is_contiguous() &&
      is_contiguous()) {
    // Host values into a dense device tensor: one copy, no staging tensor or kernel.
    detail::copy_bytes(raw_data(), device(), source.raw_data(), source.device(),
                       static_cast<size_t>(numel()) * dtype_size(dtype_));
    return;
  }
  if (source.device() != device()) source = source.contiguous().to(device());
  ORDO_BACKEND(device(), copy)(*this, source);
}

void Tensor::fill_(double value) const {
  check_defined(*this, "fill_", "tensor");
  if (is_contiguous()) {
    ORDO_BACKEND(device(), fill)(*this, value);
  } else {
    copy_from(full({}, value, dtype_, device()));
  }
}

// ---- printing ------------------------------------------------------------------------------

namespace {
void print_values(std::ostringstream& out, const std::vector<double>& v, const Shape& shape,
                  const Shape& strides, size_t axis, int64_t base, int max_per_dim, int indent,
                  bool integral) {
  if (axis == shape.size()) {
    if (integral) {
      out << static_cast<int64_t>(v[base]);
    } else {
      out << std::setprecision(6) << v[base];
    }
    return;
  }
  int64_t n = shape[axis];
  out << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (n > max_per_dim && i == max_per_dim / 2) {
      out << "...";
      i = n - max_per_dim / 2 - 1;
      out << (axis + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    print_values(out, v, shape, strides, axis + 1, base + i * strides[axis], max_per_dim,
                 indent + 1, integral);
    if (i + 1 < n) out << (axis + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  out << "]";
}
}  // namespace

std::string Tensor::str(int max_per_dim) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out << "Tensor(shape=" << shape_str(shape_) << ", dtype=" << dtype_name(dtype_)
      << ", device=" << device().str() << ")\n";
  std::vector<double> values = to_doubles();
  print_values(out, values, shape_, contiguous_strides(shape_), 0, 0, std::max(max_per_dim, 2), 0,
               !is_floating(dtype_));
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.str(); }

// ---- validation helpers ----------------------------------------------------------------------

void check_defined(const Tensor& t, const char* op, const char* arg) {
  ORDO_CHECK(t.defined(), op, ": ", arg, " is an undefined tensor");
}

void check_dtype(const Tensor& t, DType expected, const char* op, const char* arg) {
  check_defined(t, op, arg);
  ORDO_CHECK(t.dtype() == expected, op, ": ", arg, " has dtype ", dtype_name(t.dtype()),
             ", expected ", dtype_name(expected));
}

void check_float(const Tensor& t, const char* op, const char* arg) {
  check_defined(t, op, arg);
  ORDO_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, op, ": ", arg, " has dtype ",
             dtype_name(t.dtype()), ", expected f32 or f64");
  ORDO_CHECK(t.dtype() == DType::f32 || t.device().is_cpu(), op, ": ", arg,
             " is f64 on ", t.device().str(), "; f64 is computed on the CPU only");
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  ORDO_CHECK(a.device() == b.device(), op, ": operands are on different devices (",
             a.device().str(), " and ", b.device().str(), "); move one with .to(device)");
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  ORDO_CHECK(a.dtype() == b.dtype(), op, ": operands have different dtypes (",
             dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")");
}

void check_output_dtype(DType source, DType wanted, const char* op, const char* arg) {
  ORDO_CHECK(wanted == source || (wanted == DType::bf16 && source == DType::f32), op, ": a ", dtype_name(wanted), " ",
             arg, " from ", dtype_name(source), " values (theirs, or bf16 from f32)");
}

void check_dim(const Tensor& t, int ndim, const char* op, const char* arg) {
  check_defined(t, op, arg);
  ORDO_CHECK(t.dim() == ndim, op, ": ", arg, " has ", t.dim(), " dims (shape ",
             shape_str(t.shape()), "), expected ", ndim);
}

void check_shape(const Tensor& t, const Shape& expected, const char* op, const char* arg) {
  check_defined(t, op, arg);
  ORDO_CHECK(t.shape() == expected, op, ": ", arg, " has shape ", shape_str(t.shape()),
             ", expected ", shape_str(expected));
}

}  // namespace ordo
