"""SPEC §6 packed functions (FFI-1..4): tvm-ffi conventions of a driver that exports functions."""
