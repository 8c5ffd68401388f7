// The reference driver's custom-call targets again, written against XLA's typed FFI
// (the header jaxlib ships), for running under real XLA through jax.ffi.  They compute
// what targets.c computes; the harness compares both with the same numpy references.
// Seeded bugs: the flags of targets.c this file also knows, and XLA_MUTANT_* flags of its own (a
// vendor's typed-FFI handler is code of its own beside its C target): XLA_FLAGS in __init__.py.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// A[i] = B[i % 128] + C[i]
static ffi::Error AddMod128Impl(ffi::Buffer<ffi::F32> b, ffi::Buffer<ffi::F32> c, ffi::ResultBuffer<ffi::F32> a) {
  if (b.element_count() != 128) {
    return ffi::Error::InvalidArgument("add_mod128: B must hold 128 elements, got " + std::to_string(b.element_count()));
  }
  if (a->element_count() != c.element_count()) {
    return ffi::Error::InvalidArgument("add_mod128: A and C must have the same size");
  }
  const float *bp = b.typed_data(), *cp = c.typed_data();
  float *ap = a->typed_data();
  for (size_t i = 0; i < c.element_count(); ++i) ap[i] = bp[i % 128] + cp[i];
#ifdef XLA_MUTANT_INPUT_IN_PLACE
  std::memcpy(const_cast<float *>(cp), ap, c.size_bytes());  // the result stored into C as well
#endif
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(HarnessAddMod128, AddMod128Impl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// Every operand leaf's bytes, in order, gathered in the scratch result and copied to the first.
static ffi::Error TupleConcatImpl(ffi::RemainingArgs leaves, ffi::ResultBuffer<ffi::U8> joined,
                                  ffi::ResultBuffer<ffi::U8> scratch) {
  size_t at = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    auto leaf = leaves.get<ffi::AnyBuffer>(i);
    if (leaf.has_error()) return leaf.error();
    size_t size = leaf->size_bytes();
    if (at + size > scratch->element_count()) return ffi::Error::InvalidArgument("tuple_concat: result too small");
    std::memcpy(scratch->typed_data() + at, leaf->untyped_data(), size);
    at += size;
  }
  if (at != joined->element_count()) return ffi::Error::InvalidArgument("tuple_concat: result size mismatch");
  std::memcpy(joined->typed_data(), scratch->typed_data(), at);
#ifdef CC_VARIANT_SCRATCH_LEFT_DIRTY
  std::memset(scratch->typed_data(), 0xEE, at);  // CC-5 lets a target leave anything in a scratch leaf
#endif
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(HarnessTupleConcat, TupleConcatImpl,
                              ffi::Ffi::Bind().RemainingArgs().Ret<ffi::Buffer<ffi::U8>>().Ret<ffi::Buffer<ffi::U8>>());

// Output U8[8 + n]: n as int64, then the n opaque bytes (an array attribute: length-delimited).
static ffi::Error EchoOpaqueImpl(ffi::Span<const uint8_t> opaque, ffi::ResultBuffer<ffi::U8> out) {
  int64_t length = static_cast<int64_t>(opaque.size());
  if (out->element_count() != 8 + opaque.size()) return ffi::Error::InvalidArgument("echo_opaque: wrong output size");
  std::memcpy(out->typed_data(), &length, sizeof length);
#ifdef XLA_MUTANT_ONE_BYTE_OPAQUE_DROPPED
  if (opaque.size() > 1) std::memcpy(out->typed_data() + 8, opaque.begin(), opaque.size());  // "empty" taken as "< 2"
#else
  if (opaque.size() != 0) std::memcpy(out->typed_data() + 8, opaque.begin(), opaque.size());
#endif
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(HarnessEchoOpaque, EchoOpaqueImpl,
                              ffi::Ffi::Bind().Attr<ffi::Span<const uint8_t>>("opaque").Ret<ffi::Buffer<ffi::U8>>());

// Always fails: "fail_with_status: " followed by the opaque bytes.
static ffi::Error FailWithStatusImpl(ffi::Span<const uint8_t> opaque, ffi::ResultBuffer<ffi::F32> out) {
  (void)out;
#ifdef CC_MUTANT_SEGFAULT
  if (opaque.size() == 0) *(volatile int *)(uintptr_t)8 = 1; /* an empty message dereferences a bad pointer */
#endif
  std::string message = "fail_with_status: ";
  message.append(reinterpret_cast<const char *>(opaque.begin()), opaque.size());
  return ffi::Error::Internal(message);
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(HarnessFailWithStatus, FailWithStatusImpl,
                              ffi::Ffi::Bind().Attr<ffi::Span<const uint8_t>>("opaque").Ret<ffi::Buffer<ffi::F32>>());

// A probe for input_output_aliases: copies x to y and reports both addresses.
static ffi::Error AliasProbeImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                                 ffi::ResultBuffer<ffi::U64> addresses) {
  if (x.untyped_data() != y->untyped_data()) std::memcpy(y->untyped_data(), x.untyped_data(), x.size_bytes());
  addresses->typed_data()[0] = reinterpret_cast<uintptr_t>(x.untyped_data());
  addresses->typed_data()[1] = reinterpret_cast<uintptr_t>(y->untyped_data());
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(HarnessAliasProbe, AliasProbeImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::U64>>());
