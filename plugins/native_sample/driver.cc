// A sample native driver in C++: ADD and MUL on TENSOR_FLOAT32 and TENSOR_INT32 with memory
// pools (CONSTANT_COPY, CONSTANT_REFERENCE, request pools) and memory domains (allocation with
// role validation, copies, tokens in requests), exposed through tvm-ffi with the module
// functions of the driver-harness native ABI (README, "Native drivers").
//
// Memories arrive as (kind, file descriptor, offset, size, described); the driver reads and
// writes them with pread/pwrite, so a handle that is closed, shrunk or not a file is an error
// status, never a fault.  Errors are tvm-ffi errors of kind "DriverError" whose message starts
// with the ErrorStatus name.  Seeded bugs: NATIVE_MUTANT_* flags (plugins/mutants), and deep ones,
// NATIVE_DEEP_* flags (plugins/deep_bugs/native.py): each behind a conjunction of conditions, one
// branch each, so that a coverage-guided fuzzer sees every condition met as an edge of its own.
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace ffi = tvm::ffi;

namespace {

// ---------------------------------------------------------------- the data model (SPEC section 1)

enum Status { NONE = 0, GENERAL_FAILURE = 2, OUTPUT_INSUFFICIENT_SIZE = 3, INVALID_ARGUMENT = 4 };
enum Type { INT32 = 1, TENSOR_FLOAT32 = 3, TENSOR_INT32 = 4 };
enum Lifetime { TEMPORARY = 0, SUBGRAPH_INPUT = 1, SUBGRAPH_OUTPUT = 2, CONSTANT_COPY = 3, CONSTANT_REFERENCE = 4,
                NO_VALUE = 5 };
enum Op { ADD = 0, MUL = 18 };
using Dims = std::vector<int64_t>;

struct Location { int64_t pool = 0, offset = 0, length = 0, padding = 0; };
struct Operand { int64_t type; Dims dims; double scale; int64_t zero_point, lifetime; Location loc; };
struct Operation { int64_t type; std::vector<int64_t> inputs, outputs; };
struct Memory { std::string kind; int fd; int64_t offset, size; bool described; };
struct Argument { bool no_value; Location loc; Dims dims; };

[[noreturn]] void Fail(Status status, const std::string& rule, const std::string& detail) {
  static const char* names[] = {"NONE", "DEVICE_UNAVAILABLE", "GENERAL_FAILURE", "OUTPUT_INSUFFICIENT_SIZE",
                                "INVALID_ARGUMENT"};
  throw ffi::Error("DriverError", std::string(names[status]) + ": [" + rule + "] " + detail, "");
}

void Require(bool ok, Status status, const std::string& rule, const std::string& detail) {
  if (!ok) Fail(status, rule, detail);
}

bool IsScalar(int64_t type) { return type == INT32; }
int64_t ElementSize(int64_t) { return 4; }  // every type this driver takes is 4 bytes wide

bool FullySpecified(int64_t type, const Dims& dims) {
  if (IsScalar(type)) return true;
  if (dims.empty()) return false;
  for (int64_t d : dims) if (d <= 0) return false;
  return true;
}

int64_t ByteSize(int64_t type, const Dims& dims) {
  if (IsScalar(type)) return ElementSize(type);
  if (!FullySpecified(type, dims)) return 0;
  int64_t n = ElementSize(type);
  for (int64_t d : dims) n *= d;
  return n;
}

// Merges two partial shapes: empty is unknown rank, 0 an unknown extent.  False on conflict.
bool Combine(const Dims& a, const Dims& b, Dims* out) {
  if (a.empty()) { *out = b; return true; }
  if (b.empty()) { *out = a; return true; }
  if (a.size() != b.size()) return false;
  out->resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != 0 && b[i] != 0 && a[i] != b[i]) return false;
    (*out)[i] = a[i] ? a[i] : b[i];
  }
  return true;
}

bool Broadcast(const Dims& a, const Dims& b, Dims* out) {
  size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    (*out)[i] = x == 1 ? y : x;
  }
  return true;
}

// ---------------------------------------------------------------- decoding what crosses the ABI

int64_t Int(const ffi::Any& v) { return v.cast<int64_t>(); }
Dims DimsOf(const ffi::Any& v) {
  ffi::Shape shape = v.cast<ffi::Shape>();
  return Dims(shape.begin(), shape.end());
}
ffi::Array<ffi::Any> Arr(const ffi::Any& v) { return v.cast<ffi::Array<ffi::Any>>(); }

Location LocationOf(const ffi::Array<ffi::Any>& a, size_t at) {
  return Location{Int(a[at]), Int(a[at + 1]), Int(a[at + 2]), Int(a[at + 3])};
}

Memory MemoryOf(const ffi::Any& v) {
  auto a = Arr(v);
  return Memory{std::string(a[0].cast<ffi::String>()), static_cast<int>(Int(a[1])), Int(a[2]), Int(a[3]),
                a[4].cast<bool>()};
}

bool KindKnown(const Memory& m) {
  if (m.kind == "ashmem" || m.kind == "mmap_fd") return true;
  return (m.kind == "hardware_buffer_blob" || m.kind == "hardware_buffer") && m.described;
}

// Reads or writes `length` bytes at `offset` of a memory's region; false when the handle is
// unusable: closed, not a file (a pipe), or a file shorter than the region it claims.
bool Transfer(const Memory& m, int64_t offset, void* data, int64_t length, bool write) {
  if (offset < 0 || length < 0 || offset + length > m.size) return false;
  struct stat info;
  if (fstat(m.fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size < m.offset + m.size) return false;
  char* bytes = static_cast<char*>(data);
  int64_t done = 0;
  while (done < length) {
    ssize_t n = write ? pwrite(m.fd, bytes + done, length - done, m.offset + offset + done)
                      : pread(m.fd, bytes + done, length - done, m.offset + offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += n;
  }
  return true;
}

// ---------------------------------------------------------------- models

struct Tensor { Dims dims; std::vector<uint8_t> bytes; };

struct Model {
  std::vector<Operand> operands;
  std::vector<Operation> operations;
  std::vector<int64_t> inputs, outputs;
  std::map<int64_t, Tensor> constants;
};

std::mutex models_lock;
std::map<int64_t, std::shared_ptr<Model>> models;
std::atomic<int64_t> next_model{1};

bool OperationValid(const Model& m, const Operation& op) {
  if (op.type != ADD && op.type != MUL) return false;
  if (op.inputs.size() != 3 || op.outputs.size() != 1) return false;
  const Operand &a = m.operands[op.inputs[0]], &b = m.operands[op.inputs[1]], &act = m.operands[op.inputs[2]];
  const Operand& out = m.operands[op.outputs[0]];
  if ((a.type != TENSOR_FLOAT32 && a.type != TENSOR_INT32) || b.type != a.type || out.type != a.type) return false;
  if (act.type != INT32) return false;
  Dims shape;
  bool known = !a.dims.empty() && !b.dims.empty();
  for (int64_t d : a.dims) known = known && d != 0;
  for (int64_t d : b.dims) known = known && d != 0;
  return !known || Broadcast(a.dims, b.dims, &shape);
}

std::shared_ptr<Model> Decode(const ffi::Array<ffi::Any>& encoded) {
  auto model = std::make_shared<Model>();
  for (const ffi::Any& o : Arr(encoded[0])) {
    auto a = Arr(o);
    model->operands.push_back(Operand{Int(a[0]), DimsOf(a[1]), a[2].cast<double>(), Int(a[3]), Int(a[4]),
                                      LocationOf(a, 5)});
  }
  for (const ffi::Any& o : Arr(encoded[1])) {
    auto a = Arr(o);
    Dims ins = DimsOf(a[1]), outs = DimsOf(a[2]);
    model->operations.push_back(Operation{Int(a[0]), ins, outs});
  }
  model->inputs = DimsOf(encoded[2]);
  model->outputs = DimsOf(encoded[3]);
  return model;
}

// The model's CONSTANT_COPY bytes, which cross as a DLPack tensor (no copy on the way in).
struct Values {
  const uint8_t* data;
  int64_t size;
};

Values ValuesOf(const ffi::Tensor& tensor) {
  DLDataType dtype = tensor.dtype();
  Require(tensor.ndim() == 1 && dtype.code == kDLUInt && dtype.bits == 8 && dtype.lanes == 1 && tensor.IsContiguous()
              && tensor.device().device_type == kDLCPU,
          INVALID_ARGUMENT, "MODEL", "operand values must be a contiguous 1-d uint8 CPU tensor");
  return Values{static_cast<const uint8_t*>(tensor.data_ptr()) + tensor.byte_offset(), tensor.shape()[0]};
}

void Validate(Model& m, const Values& values, const std::vector<Memory>& pools) {
  int64_t count = static_cast<int64_t>(m.operands.size());
  auto in_range = [&](int64_t i) { return 0 <= i && i < count; };
  for (int64_t i : m.inputs) Require(in_range(i), INVALID_ARGUMENT, "MODEL", "input index out of range");
  for (int64_t i : m.outputs) Require(in_range(i), INVALID_ARGUMENT, "MODEL", "output index out of range");
  for (auto& op : m.operations) {
    for (int64_t i : op.inputs) Require(in_range(i), INVALID_ARGUMENT, "MODEL", "operation input out of range");
    for (int64_t i : op.outputs) Require(in_range(i), INVALID_ARGUMENT, "MODEL", "operation output out of range");
  }
  std::vector<int64_t> ins, outs;
  for (int64_t i = 0; i < count; ++i) {
    if (m.operands[i].lifetime == SUBGRAPH_INPUT) ins.push_back(i);
    if (m.operands[i].lifetime == SUBGRAPH_OUTPUT) outs.push_back(i);
  }
  auto sorted = [](std::vector<int64_t> v) { std::sort(v.begin(), v.end()); return v; };
  Require(sorted(m.inputs) == ins && sorted(m.outputs) == outs, INVALID_ARGUMENT, "MODEL", "I/O lifetimes");
  std::vector<bool> defined(count, false);
  for (int64_t i = 0; i < count; ++i) {
    int64_t l = m.operands[i].lifetime;
    defined[i] = l == SUBGRAPH_INPUT || l == CONSTANT_COPY || l == CONSTANT_REFERENCE || l == NO_VALUE;
  }
  for (auto& op : m.operations) {
    for (int64_t i : op.inputs) Require(defined[i], INVALID_ARGUMENT, "MODEL", "operation reads an undefined operand");
    for (int64_t i : op.outputs) {
      int64_t l = m.operands[i].lifetime;
      Require(!defined[i] && (l == TEMPORARY || l == SUBGRAPH_OUTPUT), INVALID_ARGUMENT, "MODEL", "operand written twice");
      defined[i] = true;
    }
  }
  for (int64_t i : m.outputs) Require(defined[i], INVALID_ARGUMENT, "MODEL", "an output is never written");
  for (size_t p = 0; p < pools.size(); ++p) {
    Require(KindKnown(pools[p]), INVALID_ARGUMENT, "POOL-5", "model pool of unknown kind " + pools[p].kind);
    Require(pools[p].kind != "hardware_buffer", INVALID_ARGUMENT, "POOL-3", "non-BLOB hardware buffer as a model pool");
  }
  for (int64_t i = 0; i < count; ++i) {
    const Operand& o = m.operands[i];
    const Location& loc = o.loc;
    if (o.lifetime == CONSTANT_COPY || o.lifetime == CONSTANT_REFERENCE) {
      int64_t capacity = o.lifetime == CONSTANT_COPY ? (loc.pool == 0 ? values.size : -1)
                         : (0 <= loc.pool && loc.pool < static_cast<int64_t>(pools.size()) ? pools[loc.pool].size : -1);
      Require(capacity >= 0 && FullySpecified(o.type, o.dims) && loc.offset >= 0 && loc.length == ByteSize(o.type, o.dims)
                  && loc.offset + loc.length <= capacity,
              INVALID_ARGUMENT, "POOL-1", "operand " + std::to_string(i) + ": constant location");
    } else {
      Require(loc.pool == 0 && loc.offset == 0 && loc.length == 0 && loc.padding == 0, INVALID_ARGUMENT, "POOL-1",
              "operand " + std::to_string(i) + ": a location on a non-constant");
    }
    Require(o.scale == 0 && o.zero_point == 0, INVALID_ARGUMENT, "MODEL", "scale and zeroPoint of a non-quantized operand");
    Require(!(IsScalar(o.type) && !o.dims.empty()), INVALID_ARGUMENT, "MODEL", "a scalar with dimensions");
  }
  for (size_t n = 0; n < m.operations.size(); ++n) {
    Require(OperationValid(m, m.operations[n]), INVALID_ARGUMENT, "MODEL", "operation " + std::to_string(n) + " has invalid operands");
  }
}

#ifdef NATIVE_DEEP_REFERENCE_CONSTANT_SHIFTED
bool FirstOperandOfMul(const Model& m, int64_t operand) {
  for (const Operation& op : m.operations) {
    if (op.type == MUL && op.inputs[0] == operand) return true;
  }
  return false;
}

// Deep bug: a FLOAT32 constant of rank 3 or more and 8 elements or more, past the first 4 bytes
// of an mmap_fd pool and the first operand of a MUL, is read from 4 bytes before its offset.
int64_t ConstantOffset(const Model& m, const std::vector<Memory>& pools, int64_t operand) {
  const Operand& o = m.operands[operand];
  if (o.type != TENSOR_FLOAT32) return o.loc.offset;
  if (o.dims.size() < 3) return o.loc.offset;
  if (o.loc.length < 32) return o.loc.offset;
  if (o.loc.offset < 4) return o.loc.offset;
  if (pools[o.loc.pool].kind != "mmap_fd") return o.loc.offset;
  if (!FirstOperandOfMul(m, operand)) return o.loc.offset;
  return o.loc.offset - 4;
}
#else
int64_t ConstantOffset(const Model& m, const std::vector<Memory>&, int64_t operand) { return m.operands[operand].loc.offset; }
#endif

void LoadConstants(Model& m, const Values& values, const std::vector<Memory>& pools) {
  for (size_t i = 0; i < m.operands.size(); ++i) {
    const Operand& o = m.operands[i];
    if (o.lifetime != CONSTANT_COPY && o.lifetime != CONSTANT_REFERENCE) continue;
    Tensor t{o.dims, std::vector<uint8_t>(o.loc.length)};
    if (o.lifetime == CONSTANT_COPY) {
      std::memcpy(t.bytes.data(), values.data + o.loc.offset, o.loc.length);
    } else {
      // Copied out now: a pool shrunk or closed later cannot make execution fault (SVC-3).
      Require(Transfer(pools[o.loc.pool], ConstantOffset(m, pools, static_cast<int64_t>(i)), t.bytes.data(), o.loc.length, false),
              GENERAL_FAILURE, "POOL-4",
              "model pool " + std::to_string(o.loc.pool) + " cannot be read");
    }
    m.constants[i] = std::move(t);
  }
}

// ---------------------------------------------------------------- driver-managed buffers (SPEC section 3)

struct Role {
  int64_t model, input, io_index;  // input: 1 for an input role, 0 for an output role
  bool operator<(const Role& o) const { return std::tie(model, input, io_index) < std::tie(o.model, o.input, o.io_index); }
};

struct Buffer {
  int64_t token, type;
  Dims initial, dims;  // dims: of the current contents
  std::set<Role> roles;
  bool initialized = false;
  std::vector<uint8_t> data;
  std::shared_mutex lock;  // readers: copy_to and executions reading it; writers: the rest

  int64_t KnownSize() const { return FullySpecified(type, dims) ? ByteSize(type, dims) : -1; }
};

std::mutex buffers_lock;
std::map<int64_t, std::shared_ptr<Buffer>> buffers;
int64_t next_token = 1;

std::shared_ptr<Buffer> FindBuffer(int64_t token, const std::string& where) {
  Require(token > 0, INVALID_ARGUMENT, "DOM-ROLE-1", where + ": token " + std::to_string(token));
  std::lock_guard<std::mutex> guard(buffers_lock);
  auto found = buffers.find(token);
  Require(found != buffers.end(), INVALID_ARGUMENT, "DOM-ROLE-1", where + ": token " + std::to_string(token) +
          " names no live buffer");
  return found->second;
}

std::shared_ptr<Model> FindModel(int64_t id) {
  std::lock_guard<std::mutex> guard(models_lock);
  auto found = models.find(id);
  return found == models.end() ? nullptr : found->second;
}

// ---------------------------------------------------------------- kernels

template <typename T>
T Activate(T v, int64_t activation) {
  if (activation == 1) return v < T(0) ? T(0) : v;
  if (activation == 2) return v < T(-1) ? T(-1) : (v > T(1) ? T(1) : v);
  if (activation == 3) return v < T(0) ? T(0) : (v > T(6) ? T(6) : v);
  return v;
}

template <typename T>
void Arithmetic(int64_t op, const Tensor& a, const Tensor& b, int64_t activation, Tensor* out) {
  size_t rank = out->dims.size();
  int64_t total = 1;
  for (int64_t d : out->dims) total *= d;
  out->bytes.assign(total * sizeof(T), 0);
  const T* x = reinterpret_cast<const T*>(a.bytes.data());
  const T* y = reinterpret_cast<const T*>(b.bytes.data());
  T* z = reinterpret_cast<T*>(out->bytes.data());
  if (a.dims == out->dims && b.dims == out->dims) {  // no broadcasting: one straight loop
    for (int64_t i = 0; i < total; ++i) {
      if constexpr (std::is_same_v<T, int32_t>) {
        uint32_t u = op == ADD ? static_cast<uint32_t>(x[i]) + static_cast<uint32_t>(y[i])
                               : static_cast<uint32_t>(x[i]) * static_cast<uint32_t>(y[i]);
#ifdef NATIVE_DEEP_INT_MUL_SATURATES
        // Deep bug: an INT32 MUL of rank 4 and 16 elements or more, without broadcasting,
        // saturates the product of two negative numbers instead of wrapping it.
        if (op == MUL) {
          if (rank == 4) {
            if (total >= 16) {
              if (x[i] < 0) {
                if (y[i] < 0) {
                  if (static_cast<int64_t>(x[i]) * y[i] > INT32_MAX) u = static_cast<uint32_t>(INT32_MAX);
                }
              }
            }
          }
        }
#endif
        z[i] = Activate(static_cast<int32_t>(u), activation);
      } else {
        z[i] = Activate(op == ADD ? x[i] + y[i] : x[i] * y[i], activation);
      }
    }
    return;
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {  // broadcasting: a dimension of 1 repeats
      size_t da = d + a.dims.size() - rank, db = d + b.dims.size() - rank;
      if (d >= rank - a.dims.size()) ia = ia * a.dims[da] + (a.dims[da] == 1 ? 0 : index[d]);
      if (d >= rank - b.dims.size()) ib = ib * b.dims[db] + (b.dims[db] == 1 ? 0 : index[d]);
    }
    T value;
    if constexpr (std::is_same_v<T, int32_t>) {  // two's complement wrap-around
      uint32_t u = op == ADD ? static_cast<uint32_t>(x[ia]) + static_cast<uint32_t>(y[ib])
                             : static_cast<uint32_t>(x[ia]) * static_cast<uint32_t>(y[ib]);
      value = static_cast<int32_t>(u);
    } else {
      value = op == ADD ? x[ia] + y[ib] : x[ia] * y[ib];
    }
    z[flat] = Activate(value, activation);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out->dims[d]) break;
      index[d] = 0;
    }
  }
#ifdef NATIVE_DEEP_BROADCAST_TAIL_DROPPED
  // Deep bug: a FLOAT32 ADD of rank 3 or more whose second operand, of the same rank, is broadcast
  // along the first axis, with rows of 5 or more, loses its last element (a loop's tail skipped).
  if constexpr (std::is_same_v<T, float>) {
    if (op == ADD) {
      if (rank >= 3) {
        if (b.dims.size() == rank) {
          if (b.dims[0] == 1) {
            if (out->dims[0] > 1) {
              if (out->dims[rank - 1] >= 5) z[total - 1] = T(0);
            }
          }
        }
      }
    }
  }
#endif
}

// What only the values show (shapes known at run time, the activation's value) fails the
// execution with GENERAL_FAILURE, as a kernel error does.
void Run(const Model& m, size_t number, const Operation& op, std::map<int64_t, Tensor>& values) {
  std::string where = "operation " + std::to_string(number);
  const Tensor &a = values.at(op.inputs[0]), &b = values.at(op.inputs[1]);
  int32_t activation;
  std::memcpy(&activation, values.at(op.inputs[2]).bytes.data(), 4);
  Require(activation >= 0 && activation <= 3, GENERAL_FAILURE, "MODEL", where + ": unknown fused activation");
  const Operand& output = m.operands[op.outputs[0]];
  Require(output.type != TENSOR_INT32 || activation == 0, GENERAL_FAILURE, "MODEL",
          where + ": TENSOR_INT32 takes no fused activation");
  Tensor out;
  Require(Broadcast(a.dims, b.dims, &out.dims), GENERAL_FAILURE, "MODEL", where + ": shapes do not broadcast");
  Dims merged;
  Require(output.lifetime != TEMPORARY || Combine(output.dims, out.dims, &merged), GENERAL_FAILURE, "MODEL",
          where + ": produced a shape its operand does not declare");
  if (output.type == TENSOR_FLOAT32) Arithmetic<float>(op.type, a, b, activation, &out);
  else Arithmetic<int32_t>(op.type, a, b, activation, &out);
  values[op.outputs[0]] = std::move(out);
}

// ---------------------------------------------------------------- the ABI

ffi::String Capabilities() {
  return ffi::String(R"({"name": "native-sample", "version": "0.1", "memory_kinds": ["ashmem", "mmap_fd",)"
                     R"( "hardware_buffer_blob", "hardware_buffer"], "memory_domains": true,)"
                     R"( "operations": ["ADD", "MUL"], "operand_types": ["TENSOR_FLOAT32", "TENSOR_INT32", "INT32"]})");
}

std::vector<Memory> Pools(const ffi::Any& v) {
  std::vector<Memory> pools;
  for (const ffi::Any& p : Arr(v)) pools.push_back(MemoryOf(p));
  return pools;
}

ffi::Array<bool> SupportedOperations(ffi::Array<ffi::Any> encoded) {
  auto model = Decode(encoded);
  ffi::Array<bool> supported;
  int64_t count = static_cast<int64_t>(model->operands.size());
  for (auto& op : model->operations) {
    bool ok = true;
    for (int64_t i : op.inputs) ok = ok && 0 <= i && i < count;
    for (int64_t i : op.outputs) ok = ok && 0 <= i && i < count;
    Require(ok, INVALID_ARGUMENT, "MODEL", "operand index out of range");
    supported.push_back(OperationValid(*model, op));
  }
  return supported;
}

int64_t Prepare(ffi::Array<ffi::Any> encoded) {
  auto model = Decode(encoded);
  ffi::Tensor tensor = encoded[4].cast<ffi::Tensor>();
  Values values = ValuesOf(tensor);
  std::vector<Memory> pools = Pools(encoded[5]);
  Validate(*model, values, pools);
  LoadConstants(*model, values, pools);
  std::lock_guard<std::mutex> guard(models_lock);
  int64_t id = next_model++;
  models[id] = model;
  return id;
}

void ReleaseModel(int64_t id) {
  std::lock_guard<std::mutex> guard(models_lock);
  models.erase(id);
}

struct Binding {
  int64_t operand, io_index;
  Argument argument;
  Dims dims;
  std::shared_ptr<Buffer> buffer;  // set when the argument's pool is a token
};

// Locks every buffer a request uses, in token order (no lock-order deadlock), each once:
// shared for buffers only read, exclusive for buffers written.
class BufferLocks {
 public:
  BufferLocks(const std::vector<Binding>& ins, const std::vector<Binding>& outs) {
    std::map<int64_t, std::pair<std::shared_ptr<Buffer>, bool>> wanted;
    for (const Binding& b : ins) if (b.buffer) wanted.emplace(b.buffer->token, std::make_pair(b.buffer, false));
    for (const Binding& b : outs) if (b.buffer) wanted[b.buffer->token] = std::make_pair(b.buffer, true);
    for (auto& [token, entry] : wanted) {
      if (entry.second) entry.first->lock.lock(); else entry.first->lock.lock_shared();
      held_.push_back(entry);
    }
  }
  ~BufferLocks() {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
      if (it->second) it->first->lock.unlock(); else it->first->lock.unlock_shared();
    }
  }
 private:
  std::vector<std::pair<std::shared_ptr<Buffer>, bool>> held_;
};

ffi::Array<ffi::Any> Outcome(Status status, const std::vector<Binding>& outs, std::map<int64_t, Tensor>& values,
                             const std::vector<bool>& fits) {
  ffi::Array<ffi::Any> shapes;
  ffi::Array<bool> sufficient;
  for (size_t i = 0; i < outs.size(); ++i) {
    shapes.push_back(ffi::Shape(values.at(outs[i].operand).dims));
    sufficient.push_back(fits[i]);
  }
  return ffi::Array<ffi::Any>{static_cast<int64_t>(status), shapes, sufficient};
}

// Phase 2 and 3 of an execution, under the buffers' locks.
ffi::Array<ffi::Any> Compute(const Model& m, const std::vector<Memory>& pools, const std::vector<Binding>& ins,
                             const std::vector<Binding>& outs) {
  std::map<int64_t, Tensor> values = m.constants;
  for (const Binding& b : ins) {
    std::string where = "input " + std::to_string(b.io_index);
    if (b.buffer) {
      Require(b.buffer->initialized, GENERAL_FAILURE, "DOM-STATE-2", where + ": the buffer is uninitialized");
      Dims merged;
      Require(Combine(b.dims, b.buffer->dims, &merged), INVALID_ARGUMENT, "DOM-DYN-2",
              where + ": dimensions conflict with the buffer's");
      values[b.operand] = Tensor{b.buffer->dims, b.buffer->data};
      continue;
    }
    Tensor t{b.dims, std::vector<uint8_t>(b.argument.loc.length)};
    Require(Transfer(pools[b.argument.loc.pool], b.argument.loc.offset, t.bytes.data(), b.argument.loc.length, false),
            GENERAL_FAILURE, "POOL-4", where + ": pool " + std::to_string(b.argument.loc.pool) + " cannot be read");
    values[b.operand] = std::move(t);
  }
  for (size_t n = 0; n < m.operations.size(); ++n) Run(m, n, m.operations[n], values);
  std::vector<bool> fits;
  for (const Binding& b : outs) {
    const Tensor& t = values.at(b.operand);
    Dims merged;
    Require(Combine(b.dims, t.dims, &merged), GENERAL_FAILURE, b.buffer ? "DOM-DYN-2" : "REQ-2",
            "output " + std::to_string(b.io_index) + ": produced shape cannot be stored as declared");
    fits.push_back(b.argument.no_value || b.buffer || static_cast<int64_t>(t.bytes.size()) <= b.argument.loc.length);
  }
  for (bool fit : fits) if (!fit) return Outcome(OUTPUT_INSUFFICIENT_SIZE, outs, values, fits);
  for (const Binding& b : outs) {
    Tensor& t = values.at(b.operand);
    if (b.buffer) {
      b.buffer->data = t.bytes;
      b.buffer->dims = t.dims;
      b.buffer->initialized = true;
    } else if (!b.argument.no_value) {
      Require(Transfer(pools[b.argument.loc.pool], b.argument.loc.offset, t.bytes.data(), t.bytes.size(), true),
              GENERAL_FAILURE, "POOL-4", "output pool " + std::to_string(b.argument.loc.pool) + " cannot be written");
    }
  }
  return Outcome(NONE, outs, values, fits);
}

// [status, [output shapes], [is sufficient]]: NONE, or OUTPUT_INSUFFICIENT_SIZE with the shapes.
ffi::Array<ffi::Any> Execute(int64_t id, ffi::Array<ffi::Any> request) {
  std::shared_ptr<Model> model = FindModel(id);
  Require(model != nullptr, INVALID_ARGUMENT, "REQ-1", "not a model prepared by this driver");
  const Model& m = *model;
  auto inputs = Arr(request[0]), outputs = Arr(request[1]);
  std::vector<Memory> pools = Pools(request[2]);
  Require(inputs.size() == m.inputs.size() && outputs.size() == m.outputs.size(), INVALID_ARGUMENT, "REQ-1",
          "argument counts differ from the model's");
  std::vector<std::shared_ptr<Buffer>> tokens(pools.size());
  for (size_t p = 0; p < pools.size(); ++p) {
    std::string where = "pool " + std::to_string(p);
    if (pools[p].kind == "token") tokens[p] = FindBuffer(pools[p].fd, where);
    else Require(KindKnown(pools[p]), INVALID_ARGUMENT, "POOL-5", where + " of unknown kind");
  }
  std::vector<Binding> ins, outs;
  // token -> directions (1 input, 0 output): the same buffer listed in two pool slots is one buffer
  // (DOM-ROLE-3); keyed by pool index, it was an output and an input at once
  std::map<int64_t, std::vector<int>> token_uses;
  for (int pass = 0; pass < 2; ++pass) {
    auto& args = pass == 0 ? inputs : outputs;
    const auto& indexes = pass == 0 ? m.inputs : m.outputs;
    for (size_t k = 0; k < args.size(); ++k) {
      auto a = Arr(args[k]);
      Argument arg{a[0].cast<bool>(), LocationOf(a, 1), DimsOf(a[5])};
      std::string where = std::string(pass == 0 ? "input " : "output ") + std::to_string(k);
      const Operand& o = m.operands[indexes[k]];
      const Location& loc = arg.loc;
      Require(!arg.no_value || (loc.pool == 0 && loc.offset == 0 && loc.length == 0 && loc.padding == 0 && arg.dims.empty()),
              INVALID_ARGUMENT, "REQ-2", where + ": hasNoValue with a location or dimensions");
      if (arg.no_value) {
        Require(pass == 1, INVALID_ARGUMENT, "REQ-1", where + ": a required input has no value");
        outs.push_back(Binding{indexes[k], static_cast<int64_t>(k), arg, o.dims, nullptr});
        continue;
      }
      Require(0 <= loc.pool && loc.pool < static_cast<int64_t>(pools.size()), INVALID_ARGUMENT, "REQ-2", where + ": pool index");
      Dims dims;
      bool ok = IsScalar(o.type) ? arg.dims.empty() : Combine(o.dims, arg.dims, &dims);
      Require(ok, INVALID_ARGUMENT, "REQ-2", where + ": dimensions conflict with the model's");
      Binding binding{indexes[k], static_cast<int64_t>(k), arg, dims, tokens[loc.pool]};
      if (binding.buffer) {
        Require(loc.offset == 0 && loc.length == 0 && loc.padding == 0, INVALID_ARGUMENT, "DOM-ROLE-4",
                where + ": a token pool with a location");
#ifndef NATIVE_MUTANT_ROLE_CHECK_DISABLED
        Require(binding.buffer->roles.count(Role{id, pass == 0 ? 1 : 0, static_cast<int64_t>(k)}) == 1, INVALID_ARGUMENT,
                "DOM-ROLE-2", where + ": the buffer was not allocated for this use");
#endif
        Dims combined;
        Require(Combine(binding.buffer->initial, dims, &combined), INVALID_ARGUMENT, "DOM-DYN-2",
                where + ": dimensions conflict with the buffer's");
        binding.dims = combined;
        token_uses[binding.buffer->token].push_back(pass == 0 ? 1 : 0);  // as BufferLocks keys them
      } else {
        Require(std::min({loc.offset, loc.length, loc.padding}) >= 0, INVALID_ARGUMENT, "REQ-2", where + ": negative region");
        int64_t padding = loc.padding;
#ifdef NATIVE_DEEP_OUTPUT_PADDING_UNCHECKED
        // Deep bug: the padding of an output of rank 3 or more, in an mmap_fd pool after the
        // first, is not counted in its region.
        if (pass == 1) {
          if (loc.padding > 0) {
            if (loc.pool > 0) {
              if (dims.size() >= 3) {
                if (pools[loc.pool].kind == "mmap_fd") padding = 0;
              }
            }
          }
        }
#endif
#ifdef NATIVE_MUTANT_REGION_OFF_BY_ONE
        Require(loc.offset + loc.length + padding <= pools[loc.pool].size + 1, INVALID_ARGUMENT, "REQ-2", where + ": region");
#else
        Require(loc.offset + loc.length + padding <= pools[loc.pool].size, INVALID_ARGUMENT, "REQ-2", where + ": region");
#endif
        if (pass == 0) Require(FullySpecified(o.type, dims), INVALID_ARGUMENT, "REQ-2", where + ": not fully specified");
        Require(!FullySpecified(o.type, dims) || loc.length == ByteSize(o.type, dims), INVALID_ARGUMENT, "REQ-2",
                where + ": length differs from dimensions");
      }
      (pass == 0 ? ins : outs).push_back(binding);
    }
  }
  for (auto& [token, uses] : token_uses) {
    bool output = std::count(uses.begin(), uses.end(), 0) > 0;
    Require(!output || uses.size() == 1, INVALID_ARGUMENT, "DOM-ROLE-3", "a token used as an output is used again");
  }
  BufferLocks locks(ins, outs);
  try {
    return Compute(m, pools, ins, outs);
  } catch (...) {
    for (const Binding& b : outs) if (b.buffer) b.buffer->initialized = false;  // DOM-STATE-1
    throw;
  }
}

// [token, token]: the buffer id is its token.
ffi::Array<int64_t> Allocate(ffi::Shape desc, ffi::Array<int64_t> model_ids, ffi::Array<ffi::Any> input_roles,
                             ffi::Array<ffi::Any> output_roles) {
  size_t role_count = input_roles.size() + output_roles.size();
  Require(!model_ids.empty() && role_count > 0, INVALID_ARGUMENT, "DOM-ALLOC-1", "no prepared model or no role");
  auto buffer = std::make_shared<Buffer>();
  std::vector<const Operand*> operands;
  for (int pass = 0; pass < 2; ++pass) {
    for (const ffi::Any& r : pass == 0 ? input_roles : output_roles) {
      auto role = Arr(r);
      int64_t model_index = Int(role[0]), io_index = Int(role[1]);
      double probability = role[2].cast<double>();
      Require(0 <= model_index && model_index < static_cast<int64_t>(model_ids.size()), INVALID_ARGUMENT, "DOM-ALLOC-1",
              "role model index out of range");
      std::shared_ptr<Model> model = FindModel(model_ids[model_index]);
      Require(model != nullptr, INVALID_ARGUMENT, "DOM-ALLOC-1", "not a model prepared by this driver");
      const auto& indexes = pass == 0 ? model->inputs : model->outputs;
      Require(0 <= io_index && io_index < static_cast<int64_t>(indexes.size()), INVALID_ARGUMENT, "DOM-ALLOC-1",
              "role io index out of range");
      Require(probability > 0.0 && probability <= 1.0, INVALID_ARGUMENT, "DOM-ALLOC-1", "role probability");
      bool added = buffer->roles.insert(Role{model_ids[model_index], pass == 0 ? 1 : 0, io_index}).second;
      Require(added, INVALID_ARGUMENT, "DOM-ALLOC-1", "a role is given twice");
      operands.push_back(&model->operands[indexes[io_index]]);
    }
  }
  const Operand& first = *operands[0];
  for (const Operand* o : operands) {
    Require(o->type == first.type && o->scale == first.scale && o->zero_point == first.zero_point, INVALID_ARGUMENT,
            "DOM-ALLOC-2", "role operands differ in type, scale or zeroPoint");
  }
  Dims dims(desc.begin(), desc.end());
  Require(!(IsScalar(first.type) && !dims.empty()), INVALID_ARGUMENT, "DOM-ALLOC-2", "a scalar role with dimensions");
  for (int64_t d : dims) Require(d >= 0, INVALID_ARGUMENT, "DOM-ALLOC-2", "a negative descriptor dimension");
  for (const Operand* o : operands) {
    Dims combined;
    Require(Combine(dims, o->dims, &combined), INVALID_ARGUMENT, "DOM-ALLOC-2", "role and descriptor dimensions conflict");
    dims = combined;
  }
  buffer->type = first.type;
  buffer->initial = buffer->dims = dims;
  std::lock_guard<std::mutex> guard(buffers_lock);
  buffer->token = next_token++;
  buffers[buffer->token] = buffer;
  return ffi::Array<int64_t>{buffer->token, buffer->token};
}

// The dimensions a copy_from writes (DOM-COPY-2); false when they are not acceptable.
bool CopyDimensions(int64_t type, const Dims& initial, const Dims& given, Dims* out) {
  if (given.empty()) {
    *out = initial;
    return FullySpecified(type, initial);
  }
  if (IsScalar(type)) return false;
  for (int64_t d : given) if (d <= 0) return false;
  return Combine(initial, given, out) && FullySpecified(type, *out);
}

void CopyFrom(int64_t token, ffi::Array<ffi::Any> memory, ffi::Shape given) {
  std::shared_ptr<Buffer> buffer = FindBuffer(token, "copy_from");
  Memory m = MemoryOf(memory);
#ifdef NATIVE_MUTANT_CRASH_ON_ZERO_SIZE
  if (m.size == 0) *(volatile int*)nullptr = 0;  // a memory of 0 bytes dereferences NULL
#endif
  std::unique_lock<std::shared_mutex> guard(buffer->lock);
  try {
    Require(KindKnown(m), INVALID_ARGUMENT, "POOL-5", "copy_from: memory of unknown kind");
    Dims dims;
    Require(CopyDimensions(buffer->type, buffer->initial, Dims(given.begin(), given.end()), &dims), INVALID_ARGUMENT,
            "DOM-COPY-2", "copy_from: dimensions not acceptable for this buffer");
    Require(m.size == ByteSize(buffer->type, dims), INVALID_ARGUMENT, "DOM-COPY-1", "copy_from: memory size differs");
    std::vector<uint8_t> data(m.size);
#ifdef NATIVE_MUTANT_COPY_IGNORES_FILE_OFFSET
    Memory from_file_start = m;  // copy_from forgets where an mmap_fd region starts in its file
    if (m.kind == "mmap_fd") from_file_start.offset = 0;
    Require(Transfer(from_file_start, 0, data.data(), m.size, false), GENERAL_FAILURE, "DOM-COPY-1",
            "copy_from: memory cannot be read");
#else
    Require(Transfer(m, 0, data.data(), m.size, false), GENERAL_FAILURE, "DOM-COPY-1", "copy_from: memory cannot be read");
#endif
    buffer->data = std::move(data);
    buffer->dims = dims;
    buffer->initialized = true;
  } catch (...) {
    buffer->initialized = false;  // DOM-STATE-1: a failed copy_from leaves it uninitialized
    throw;
  }
}

void CopyTo(int64_t token, ffi::Array<ffi::Any> memory) {
  std::shared_ptr<Buffer> buffer = FindBuffer(token, "copy_to");
  Memory m = MemoryOf(memory);
#ifdef NATIVE_MUTANT_CRASH_ON_ZERO_SIZE
  if (m.size == 0) *(volatile int*)nullptr = 0;  // a memory of 0 bytes dereferences NULL
#endif
  std::shared_lock<std::shared_mutex> guard(buffer->lock);
  Require(KindKnown(m), INVALID_ARGUMENT, "POOL-5", "copy_to: memory of unknown kind");
  int64_t size = buffer->KnownSize();
  Require(size < 0 || m.size == size, INVALID_ARGUMENT, "DOM-COPY-1", "copy_to: memory size differs");
  Require(buffer->initialized, GENERAL_FAILURE, "DOM-STATE-2", "copy_to: the buffer is uninitialized");
  std::vector<uint8_t> data = buffer->data;
  Require(Transfer(m, 0, data.data(), static_cast<int64_t>(data.size()), true), GENERAL_FAILURE, "DOM-COPY-1",
          "copy_to: memory cannot be written");
}

void ReleaseBuffer(int64_t token) {
  std::lock_guard<std::mutex> guard(buffers_lock);
  buffers.erase(token);  // executions and copies in flight keep their reference until they end
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_capabilities, Capabilities);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_get_supported_operations, SupportedOperations);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_prepare, Prepare);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_release_model, ReleaseModel);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_execute, Execute);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_allocate, Allocate);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_copy_from, CopyFrom);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_copy_to, CopyTo);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(harness_release_buffer, ReleaseBuffer);
