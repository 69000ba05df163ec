// Tensor: a cheap handle onto shared storage.
//
// A Tensor is (storage, shape, strides, offset, dtype). Copying a Tensor copies
// the handle, not the data. Views — reshape, permute/transpose, slice, select,
// expand, (un)squeeze — share the storage and only change shape/strides/offset;
// `contiguous()` and `clone()` are the ways to get a fresh dense copy.
// Strides and offsets count elements, not bytes. A stride of 0 is a broadcast.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace ordo {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);                   // "[2, 3]"
int64_t shape_numel(const Shape& s);                     // product, 1 for []
Shape contiguous_strides(const Shape& s);                // row-major
// NumPy rules; a mismatch throws ordo::Error starting with `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");
int normalize_dim(int dim, int ndim, const char* what);  // -1 -> ndim-1, checked

// One block of memory on one device. Freed (or returned to the device's
// caching allocator) when the last Tensor that views it goes away.
class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // ---- creation ----------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu());
  static Tensor scalar(double value, DType dtype = DType::f32, Device device = Device::cpu());
  // 0, 1, ..., n-1
  static Tensor arange(int64_t n, DType dtype = DType::i64, Device device = Device::cpu());
  // Copies host values in; values.size() must equal the shape's element count.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device device = Device::cpu());
  template <class T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }

  // ---- reading back ------------------------------------------------------
  // Host copy in row-major order. T must match dtype() exactly.
  template <class T>
  std::vector<T> to_vector() const;
  // Any numeric dtype, any device, as doubles: the convenient form for tests and printing.
  std::vector<double> to_doubles() const;
  // The single element of a one-element tensor, as a double.
  double item() const;

  // ---- metadata ----------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int d) const;  // negative d counts from the end
  int64_t stride(int d) const;
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to element 0 of this view. T must match dtype() (checked).
  template <class T>
  T* data() const;
  void* raw_data() const;  // untyped, at the view's offset

  // ---- views (no copy) ---------------------------------------------------
  // reshape returns a view when the strides allow it and a contiguous copy
  // otherwise; view() never copies and throws instead. One dim may be -1.
  Tensor reshape(const Shape& shape) const;
  Tensor view(const Shape& shape) const;
  Tensor flatten() const { return reshape({-1}); }
  Tensor permute(const std::vector<int>& order) const;
  Tensor transpose(int a, int b) const;
  Tensor slice(int dim, int64_t start, int64_t end, int64_t step = 1) const;  // [start, end)
  Tensor select(int dim, int64_t index) const;                                // removes dim
  Tensor expand(const Shape& shape) const;  // size-1 dims (or new leading dims) get stride 0
  Tensor unsqueeze(int dim) const;
  Tensor squeeze(int dim) const;
  // The parts as one view along axis 0 (their rows one after another) when
  // they lie so in one storage: contiguous, one dtype and row shape, each
  // starting where the one before ends. Undefined otherwise (the caller
  // copies them together instead).
  static Tensor joined_rows(const std::vector<Tensor>& parts);
  // All of this view's storage as one contiguous 1-D tensor of its dtype.
  Tensor whole_storage() const;
  // This view's shape, strides and offset on `twin`'s storage, which must
  // hold as many elements as this one's: the same elements of another block
  // laid out alike (a rounded copy of whole_storage()).
  Tensor same_view_on(const Tensor& twin) const;

  // ---- copies ------------------------------------------------------------
  Tensor contiguous() const;  // this if already contiguous
  Tensor clone() const;       // always a fresh dense copy
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  // Writes src (broadcast to this shape, cast to this dtype) into this view.
  void copy_from(const Tensor& src) const;
  void fill_(double value) const;

  // Readable printout: shape, dtype, device and the values (abbreviated when large).
  std::string str(int max_per_dim = 6) const;

  // True when both handles view the same storage block.
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

 private:
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);
  Tensor with_view(Shape shape, Shape strides, int64_t offset) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// Validation helpers used by every op: each throws ordo::Error naming the op,
// the argument and what was expected.
void check_defined(const Tensor& t, const char* op, const char* arg);
void check_dtype(const Tensor& t, DType expected, const char* op, const char* arg);
void check_float(const Tensor& t, const char* op, const char* arg);  // f32 or f64
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);
void check_dim(const Tensor& t, int ndim, const char* op, const char* arg);
void check_shape(const Tensor& t, const Shape& expected, const char* op, const char* arg);
// An output (or gradient) `arg` asked in dtype `wanted` from `source` values:
// theirs, or bf16 from f32 (a product's operand, rounded as it is written).
void check_output_dtype(DType source, DType wanted, const char* op, const char* arg);

}  // namespace ordo
