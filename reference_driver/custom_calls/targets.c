/* The reference driver's custom-call targets, in C, called with XLA's conventions.
 *
 * Seeded bugs (plugins/mutants) are this same file built with one CC_MUTANT_* flag, correct
 * variants (plugins/variants) with one CC_VARIANT_* flag, and deep seeded bugs (plugins/deep_bugs)
 * with one CC_DEEP_* flag.
 * Shapes travel in `opaque` as little-endian int64 words, as XLA users pass them.
 */
#include <stdint.h>
#include <string.h>

#include "harness_custom_call.h"

/* ---------------------------------------------------------------- A[i] = B[i % 128] + C[i] */

/* The seed's host target: F32[128], F32[2048] -> F32[2048]; sizes fixed, as in the seed. */
void add_mod128_host(void *out, const void **ins) {
    float *a = (float *)out;
    const float *b = (const float *)ins[0];
    const float *c = (const float *)ins[1];
    for (int i = 0; i < 2048; ++i) a[i] = b[i % 128] + c[i];
}

#ifdef CC_MUTANT_SHORT_COUNT
#define ADD_MOD128_COUNT(n) ((int64_t)(uint16_t)(n)) /* a 16-bit element count */
#else
#define ADD_MOD128_COUNT(n) (n)
#endif

#define ADD_MOD128(T)                                                     \
    static void add_mod128_##T(T *a, const T *b, T *c, int64_t n) {       \
        int64_t end = ADD_MOD128_COUNT(n);                                \
        ADD_MOD128_END                                                    \
        for (int64_t i = 0; i < end; ++i) a[i] = b[i % 128] + c[i];      \
        ADD_MOD128_IN_PLACE                                               \
    }

#ifdef CC_MUTANT_WRITE_PAST
#define ADD_MOD128_END end = n + 1; /* one element past the output */
#else
#define ADD_MOD128_END
#endif
#ifdef CC_MUTANT_INPUT_IN_PLACE
#define ADD_MOD128_IN_PLACE for (int64_t i = 0; i < n; ++i) c[i] = a[i]; /* keeps the sum in its input */
#else
#define ADD_MOD128_IN_PLACE
#endif

ADD_MOD128(float)
ADD_MOD128(double)
ADD_MOD128(int32_t)

/* Device style: buffers = {B, C, A}; opaque = {n, dtype (0 f32, 1 f64, 2 s32)}. */
#ifdef CC_MUTANT_SYMBOL_HIDDEN
__attribute__((visibility("hidden"))) /* built as if with -fvisibility=hidden: the declared symbol is not exported */
#endif
void add_mod128_device(CUstream stream, void **buffers, const char *opaque, size_t opaque_len) {
    (void)stream;
    int64_t header[2];
    if (opaque_len != sizeof header) return;
    memcpy(header, opaque, sizeof header);
#ifdef CC_MUTANT_LEAF_ORDER
    void *b = buffers[1], *c = buffers[0]; /* operands taken in the wrong order */
#else
    void *b = buffers[0], *c = buffers[1];
#endif
    switch (header[1]) {
    case 0: add_mod128_float(buffers[2], b, c, header[0]); break;
    case 1: add_mod128_double(buffers[2], b, c, header[0]); break;
    case 2: add_mod128_int32_t(buffers[2], b, c, header[0]); break;
    }
}

/* ---------------------------------------------------------------- tuples and scratch */

/* opaque describes the operands as a tree of int64 words: a leaf is {0, bytes}, a tuple is
 * {1, count, elements...}; the operand list itself is the outermost tuple.  The output is a
 * tuple (U8[total], U8[total]) whose second leaf is scratch: the leaves are gathered there
 * in pre-order, then copied to the first leaf. */

#define MAX_LEAVES 512

typedef struct {
    const int64_t *words;
    size_t count, at;
    const void *pointers[MAX_LEAVES];
    int64_t sizes[MAX_LEAVES];
    size_t leaves;
    void **buffers;   /* device style: the flat array, taken in visiting order */
    size_t next_buffer;
    int broken;
} walk_t;

static int64_t next_word(walk_t *w) {
    if (w->at >= w->count) { w->broken = 1; return 0; }
    return w->words[w->at++];
}

/* Skips a node, returning the number of leaves it holds. */
static size_t skip(walk_t *w) {
    int64_t tag = next_word(w), value = next_word(w);
    if (w->broken) return 0;
    if (tag == 0) return 1;
    size_t leaves = 0;
    for (int64_t i = 0; i < value && !w->broken; ++i) leaves += skip(w);
    return leaves;
}

static void add_leaf(walk_t *w, const void *pointer, int64_t size) {
#ifdef CC_DEEP_LEAF_TABLE_24
    /* The host walker's table is sized for the most leaves its author expected three operands
       to hold; a leaf past it is dropped without a word, and the output's tail is never written. */
    if (!w->buffers && w->leaves >= 24) return;
#endif
    if (w->leaves >= MAX_LEAVES) { w->broken = 1; return; }
    w->pointers[w->leaves] = pointer;
    w->sizes[w->leaves++] = size;
}

/* Visits the node at w->at.  `node` is its pointer (host style; NULL for device style). */
static void visit(walk_t *w, const void *node) {
    int64_t tag = next_word(w), value = next_word(w);
    if (w->broken) return;
    if (tag == 0) {
        add_leaf(w, w->buffers ? w->buffers[w->next_buffer++] : node, value);
        return;
    }
    const void *const *elements = (const void *const *)node;
#ifdef CC_MUTANT_POSTORDER
    /* Flattens nested tuples before the leaves beside them. */
    size_t start = w->at;
    for (int pass = 0; pass < 2 && !w->broken; ++pass) {
        w->at = start;
        for (int64_t i = 0; i < value && !w->broken; ++i) {
            int64_t child_tag = w->words[w->at];
            if ((pass == 0) == (child_tag == 1)) visit(w, elements ? elements[i] : NULL);
            else skip(w);
        }
    }
#else
    for (int64_t i = 0; i < value && !w->broken; ++i) visit(w, elements ? elements[i] : NULL);
#endif
}

static int gather(walk_t *w, unsigned char *first, unsigned char *scratch) {
    int64_t offset = 0;
    for (size_t i = 0; i < w->leaves; ++i) {
        memcpy(scratch + offset, w->pointers[i], (size_t)w->sizes[i]);
        offset += w->sizes[i];
    }
    memcpy(first, scratch, (size_t)offset);
#ifdef CC_VARIANT_SCRATCH_LEFT_DIRTY
    memset(scratch, 0xEE, (size_t)offset); /* CC-5 lets a target leave anything in a scratch leaf */
#endif
    return 0;
}

static void start_walk(walk_t *w, const char *opaque, size_t opaque_len) {
    memset(w, 0, sizeof *w);
    w->words = (const int64_t *)opaque;
    w->count = opaque_len / sizeof(int64_t);
    if (opaque_len % sizeof(int64_t) != 0) w->broken = 1;
}

void tuple_concat_host(void *out, const void **ins, const char *opaque, size_t opaque_len,
                       XlaCustomCallStatus *status) {
    walk_t w;
    start_walk(&w, opaque, opaque_len);
    visit(&w, (const void *)ins);
    if (w.broken) {
        static const char message[] = "tuple_concat: malformed operand description in opaque";
        XlaCustomCallStatusSetFailure(status, message, sizeof message - 1);
        return;
    }
    void **outputs = (void **)out;
    gather(&w, outputs[0], outputs[1]);
}

void tuple_concat_device(CUstream stream, void **buffers, const char *opaque, size_t opaque_len) {
    (void)stream;
    walk_t w;
    start_walk(&w, opaque, opaque_len);
    w.buffers = buffers;
    visit(&w, NULL);
    if (w.broken) return;
    gather(&w, buffers[w.next_buffer], buffers[w.next_buffer + 1]);
}

/* ---------------------------------------------------------------- opaque */

/* Output U8[8 + opaque_len]: the length as int64, then the bytes. */
static void echo(unsigned char *out, const char *opaque, size_t opaque_len) {
#ifdef CC_MUTANT_OPAQUE_NUL
    opaque_len = strnlen(opaque, opaque_len); /* treats opaque as a C string */
#endif
    int64_t length = (int64_t)opaque_len;
    memcpy(out, &length, sizeof length);
    memcpy(out + sizeof length, opaque, opaque_len);
}

void echo_opaque_device(CUstream stream, void **buffers, const char *opaque, size_t opaque_len) {
    (void)stream;
    echo(buffers[0], opaque, opaque_len);
}

void echo_opaque_host(void *out, const void **ins, const char *opaque, size_t opaque_len,
                      XlaCustomCallStatus *status) {
    (void)ins;
    (void)status;
    echo(out, opaque, opaque_len);
}

/* ---------------------------------------------------------------- errors */

/* Fails with "fail_with_status: " followed by the opaque bytes (any bytes, NULs included). */
static void fail(XlaCustomCallStatus *status, float *out, const char *opaque, size_t opaque_len) {
#ifdef CC_MUTANT_SEGFAULT
    if (opaque_len == 0) *(volatile int *)(uintptr_t)8 = 1; /* an empty message dereferences a bad pointer */
#endif
#ifdef CC_MUTANT_STATUS_SWALLOWED
    (void)status; (void)opaque; (void)opaque_len;
    out[0] = 0.0f; /* reports success with a made-up result */
#else
    static const char prefix[] = "fail_with_status: ";
    char message[4096];
    size_t kept = opaque_len < sizeof message - sizeof prefix ? opaque_len : sizeof message - sizeof prefix;
#ifdef CC_MUTANT_MESSAGE_CUT
    if (kept > 200 - (sizeof prefix - 1)) kept = 200 - (sizeof prefix - 1); /* a 200-byte message buffer */
#endif
    memcpy(message, prefix, sizeof prefix - 1);
    memcpy(message + sizeof prefix - 1, opaque, kept);
    (void)out;
    XlaCustomCallStatusSetFailure(status, message, sizeof prefix - 1 + kept);
#endif
}

void fail_with_status_device(CUstream stream, void **buffers, const char *opaque, size_t opaque_len,
                             XlaCustomCallStatus *status) {
    (void)stream;
    fail(status, buffers[0], opaque, opaque_len);
}

void fail_with_status_host(void *out, const void **ins, const char *opaque, size_t opaque_len,
                           XlaCustomCallStatus *status) {
    (void)ins;
    fail(status, out, opaque, opaque_len);
}
