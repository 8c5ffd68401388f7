/* The edge-coverage runtime linked into every library the harness builds with coverage asked
 * for (`harness.tooling.coverage`).  The compiler's -fsanitize-coverage=trace-pc calls
 * __sanitizer_cov_trace_pc at each basic block; an edge is the pair (previous block, block),
 * hashed into a 64 KiB byte map as AFL does.  A block is named by its address less the
 * library's load base, so the same edge has the same index in every process, wherever the
 * library was mapped.
 *
 * Each library holds its own copy: the callback and the map are hidden, so an instrumented
 * library's calls bind to its own callback, never to another library's.  The map is read by
 * the process that loaded the library, through harness_coverage_map; it is written only here.
 *
 * Valid C and C++: a C++ build (tvm-ffi's, XLA's handlers) compiles it with its own sources.
 */
#include <stddef.h>
#include <stdint.h>

#define HARNESS_COVERAGE_MAP_SIZE 65536u

#if defined(__clang__)
#define HARNESS_NOT_INSTRUMENTED __attribute__((no_sanitize("coverage")))
#else
#define HARNESS_NOT_INSTRUMENTED __attribute__((no_sanitize_coverage))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The linker's symbol for this library's own ELF header: its load base. */
extern const char __ehdr_start __attribute__((visibility("hidden")));

__attribute__((visibility("hidden"))) unsigned char harness_coverage_edges[HARNESS_COVERAGE_MAP_SIZE];
/* The previous block, per thread (calls run on many threads at once).  Initial-exec: the default
 * model for a loaded library calls __tls_get_addr at every block, which doubled what
 * instrumenting adds to a small call; this one takes 4 bytes of the static TLS that the C library
 * keeps for libraries loaded later. */
static __thread uint32_t harness_coverage_previous __attribute__((tls_model("initial-exec")));

__attribute__((visibility("hidden"))) HARNESS_NOT_INSTRUMENTED void __sanitizer_cov_trace_pc(void) {
    uintptr_t offset = (uintptr_t)__builtin_return_address(0) - (uintptr_t)&__ehdr_start;
    /* a multiplicative hash spreads block offsets, which cluster, over the map */
    uint32_t location = (uint32_t)((offset * 0x9E3779B1u) >> 7) & (HARNESS_COVERAGE_MAP_SIZE - 1);
    harness_coverage_edges[location ^ harness_coverage_previous] = 1;
    /* halved, so that A -> B and B -> A are different edges, and so is a block's loop on itself */
    harness_coverage_previous = location >> 1;
}

/* The map's address; its size in *size. */
__attribute__((visibility("default"))) HARNESS_NOT_INSTRUMENTED unsigned char *harness_coverage_map(size_t *size) {
    *size = HARNESS_COVERAGE_MAP_SIZE;
    return harness_coverage_edges;
}

#ifdef __cplusplus
}
#endif
