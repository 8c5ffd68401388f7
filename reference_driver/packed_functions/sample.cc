// The reference driver's packed-function layer: the probe functions every driver that exports
// functions through tvm-ffi provides (README, "Packed functions"), registered in tvm-ffi's
// global registry under DRIVER_HARNESS_PREFIX ("driver_harness.<driver>.").
//
// Seeded bugs (plugins/mutants) are this file built with one FFI_MUTANT_* flag; deep seeded bugs
// (plugins/deep_bugs) with one FFI_DEEP_* flag.
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <vector>

// The prefix arrives as bare tokens (-DDRIVER_HARNESS_PREFIX_TOKENS=driver_harness.x.): quotes
// would not survive the build tool's shell.
#define DRIVER_HARNESS_STRING_(tokens) #tokens
#define DRIVER_HARNESS_STRING(tokens) DRIVER_HARNESS_STRING_(tokens)
#ifdef DRIVER_HARNESS_PREFIX_TOKENS
#define DRIVER_HARNESS_PREFIX DRIVER_HARNESS_STRING(DRIVER_HARNESS_PREFIX_TOKENS)
#else
#define DRIVER_HARNESS_PREFIX "driver_harness.reference."
#endif

namespace ffi = tvm::ffi;

namespace {

#ifdef FFI_MUTANT_ECHO_OBJECTS_DROPPED
// a binding whose own value type holds numbers, strings and bytes, and nothing for objects
ffi::Any Echo(ffi::Any value) {
  int32_t index = value.type_index();
  bool kept = index < ffi::TypeIndex::kTVMFFIStaticObjectBegin || index == ffi::TypeIndex::kTVMFFIStr ||
              index == ffi::TypeIndex::kTVMFFIBytes;
  return kept ? value : ffi::Any();
}
#else
ffi::Any Echo(ffi::Any value) { return value; }
#endif

int64_t AddInt(int64_t a, int64_t b) {
  uint64_t sum = static_cast<uint64_t>(a) + static_cast<uint64_t>(b);  // wraps like two's complement
#ifdef FFI_MUTANT_INT_TRUNCATED
  return static_cast<int32_t>(sum);  // a binding that carries integers as 32 bits
#else
  return static_cast<int64_t>(sum);
#endif
}

ffi::Any CallBack(ffi::Function callback, ffi::Any value) {
#ifdef FFI_MUTANT_CALLBACK_RESULT_DROPPED
  callback(value);  // a binding that calls back but hands the caller its own argument
  return value;
#else
  return callback(value);
#endif
}

void RaiseError(ffi::String kind, ffi::String message) {
#ifdef FFI_MUTANT_SEGFAULT_ON_EMPTY_MESSAGE
  if (message.size() == 0) *(volatile int *)(uintptr_t)8 = 1;  // an empty message dereferences a bad pointer
#endif
#ifdef FFI_MUTANT_ERROR_KIND_LOST
  throw ffi::Error("RuntimeError", std::string(message), "");  // every error becomes a RuntimeError
#elif defined(FFI_MUTANT_MESSAGE_CUT)
  throw ffi::Error(std::string(kind), std::string(message).substr(0, 200), "");  // a fixed 200-byte message buffer
#else
  throw ffi::Error(std::string(kind), std::string(message), "");
#endif
}

// [address of the first element, shape, strides, dtype code, dtype bits, dtype lanes, device type, device id]
ffi::Array<ffi::Any> TensorInfo(ffi::Tensor tensor) {
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<int64_t> strides(tensor.strides().begin(), tensor.strides().end());
#ifdef FFI_MUTANT_STRIDES_ASSUMED_COMPACT
  int64_t step = 1;  // a binding that assumes every tensor is compact
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
#endif
#ifdef FFI_MUTANT_SCALAR_AS_RANK_1
  if (shape.empty()) {  // a binding whose tensors have one axis at least: a scalar becomes [1]
    shape.push_back(1);
    strides.push_back(1);
  }
#endif
#ifdef FFI_MUTANT_STRIDES_SIGN_DROPPED
  for (int64_t& stride : strides) stride = stride < 0 ? -stride : stride;  // strides taken as distances
#endif
  // DLPack: the first element is at data + byte_offset (zero from numpy, not from a view in TVM's runtime)
#ifdef FFI_MUTANT_BYTE_OFFSET_IGNORED
  uintptr_t first = reinterpret_cast<uintptr_t>(tensor.data_ptr());  // a binding that takes data as the first element
#else
  uintptr_t first = reinterpret_cast<uintptr_t>(tensor.data_ptr()) + tensor.byte_offset();
#endif
  DLDataType dtype = tensor.dtype();
#ifdef FFI_DEEP_UINT64_AS_INT64
  // a binding whose own element-type enum has no 64-bit unsigned entry (its host language has
  // none): a uint64 tensor is described as int64
  if (dtype.code == kDLUInt && dtype.bits == 64) dtype.code = kDLInt;
#endif
  DLDevice device = tensor.device();
#ifdef FFI_MUTANT_DEVICE_ASSUMED_CPU
  device = DLDevice{kDLCPU, 0};  // a binding that only ever met host tensors
#endif
  return ffi::Array<ffi::Any>{static_cast<int64_t>(first),
                              ffi::Shape(shape), ffi::Shape(strides), static_cast<int64_t>(dtype.code),
                              static_cast<int64_t>(dtype.bits), static_cast<int64_t>(dtype.lanes),
                              static_cast<int64_t>(device.device_type), static_cast<int64_t>(device.device_id)};
}

#ifdef FFI_MUTANT_ECHO_REWRAPPED_ON_CPU
// a binding that hands tensors back as new views of the same memory, made as host tensors
ffi::Tensor TensorEcho(ffi::Tensor tensor) {
  DLManagedTensor* view = tensor.ToDLPack();  // holds a reference to ``tensor`` until released
  view->dl_tensor.device = DLDevice{kDLCPU, 0};
  return ffi::Tensor::FromDLPack(view);
}
#else
ffi::Tensor TensorEcho(ffi::Tensor tensor) { return tensor; }
#endif

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
#ifdef FFI_MUTANT_CRASH_ON_LOAD
  *(volatile int *)(uintptr_t)8 = 1;  // a static initializer that dereferences a bad pointer
#endif
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def(DRIVER_HARNESS_PREFIX "echo", Echo)
      .def(DRIVER_HARNESS_PREFIX "add_int", AddInt)
      .def(DRIVER_HARNESS_PREFIX "call_back", CallBack)
      .def(DRIVER_HARNESS_PREFIX "raise_error", RaiseError)
      .def(DRIVER_HARNESS_PREFIX "tensor_info", TensorInfo)
#ifdef FFI_MUTANT_PROBE_UNREGISTERED
      ;  // a library whose registration list lost its last entry
#else
      .def(DRIVER_HARNESS_PREFIX "tensor_echo", TensorEcho);
#endif
}
