/* What a custom-call target written in C includes to be called by driver-harness.
 *
 * The calling conventions are XLA's (SPEC section 5):
 *   host          void f(void *out, const void **ins)
 *   host-unified  void f(void *out, const void **ins, const char *opaque, size_t opaque_len,
 *                        XlaCustomCallStatus *status)
 *   device        void f(CUstream stream, void **buffers, const char *opaque, size_t opaque_len)
 *   device-status void f(CUstream stream, void **buffers, const char *opaque, size_t opaque_len,
 *                        XlaCustomCallStatus *status)
 * A tuple is an array of pointers to its elements (nested tuples nest).  Host memory stands
 * in for device memory, so the stream is unused.  The status functions are defined here,
 * inline, so a target library needs nothing else at load time.
 */
#ifndef HARNESS_CUSTOM_CALL_H
#define HARNESS_CUSTOM_CALL_H

#include <stddef.h>
#include <string.h>

#define HARNESS_STATUS_CAPACITY 65536

typedef struct XlaCustomCallStatus_ {
    int failed;
    size_t length;                          /* of the whole message, even when cut at the capacity */
    char message[HARNESS_STATUS_CAPACITY];
} XlaCustomCallStatus;

typedef void *CUstream;

static inline void XlaCustomCallStatusSetFailure(XlaCustomCallStatus *status, const char *message, size_t length) {
    size_t kept = length < HARNESS_STATUS_CAPACITY ? length : HARNESS_STATUS_CAPACITY;
    status->failed = 1;
    status->length = length;
    memcpy(status->message, message, kept);
}

static inline void XlaCustomCallStatusSetSuccess(XlaCustomCallStatus *status) {
    status->failed = 0;
    status->length = 0;
}

#endif
