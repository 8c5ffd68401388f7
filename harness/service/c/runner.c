/* Calls a custom-call target with one of XLA's conventions, and traps a write into the
 * read-only input arena so that it is reported (leaf, byte offset) instead of killing the
 * process.  Any other fault is handed back to the handler that was there before
 * (Python's faulthandler, or the default action): a crashing target crashes the driver
 * service, which the harness reports as a crash.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "harness_custom_call.h"

enum { HOST = 0, HOST_UNIFIED = 1, DEVICE = 2, DEVICE_STATUS = 3 };

typedef void (*host_fn)(void *, const void **);
typedef void (*host_unified_fn)(void *, const void **, const char *, size_t, XlaCustomCallStatus *);
typedef void (*device_fn)(CUstream, void **, const char *, size_t);
typedef void (*device_status_fn)(CUstream, void **, const char *, size_t, XlaCustomCallStatus *);

static __thread sigjmp_buf *trap;
static __thread uintptr_t trap_low, trap_high, fault_address;
static struct sigaction previous_segv, previous_bus;
static pthread_mutex_t installing = PTHREAD_MUTEX_INITIALIZER;

static void on_fault(int sig, siginfo_t *info, void *context) {
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr;
    if (trap != NULL && address >= trap_low && address < trap_high) {
        fault_address = address;
        siglongjmp(*trap, sig);
    }
    /* Not ours: restore what was there and return; the access faults again and the
       earlier handler (or the default action) takes it. */
    sigaction(SIGSEGV, &previous_segv, NULL);
    sigaction(SIGBUS, &previous_bus, NULL);
}

static void install(void) {
    struct sigaction current;
    pthread_mutex_lock(&installing);
    sigaction(SIGSEGV, NULL, &current);
    if (!(current.sa_flags & SA_SIGINFO) || current.sa_sigaction != on_fault) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_fault;
        action.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        sigaction(SIGSEGV, &action, &previous_segv);
        sigaction(SIGBUS, &action, &previous_bus);
    }
    pthread_mutex_unlock(&installing);
}

/* Returns 0, or the signal number of a trapped write with its address in *fault. */
int harness_cc_invoke(int convention, void *function, void *out_or_buffers, const void **ins,
                      const char *opaque, size_t opaque_len, XlaCustomCallStatus *status,
                      uintptr_t protect_low, uintptr_t protect_high, uintptr_t *fault) {
    sigjmp_buf here;
    install();
    int sig = sigsetjmp(here, 1);
    if (sig != 0) {
        trap = NULL;
        *fault = fault_address;
        return sig;
    }
    trap_low = protect_low;
    trap_high = protect_high;
    trap = &here;
    switch (convention) {
    case HOST:
        ((host_fn)function)(out_or_buffers, ins);
        break;
    case HOST_UNIFIED:
        ((host_unified_fn)function)(out_or_buffers, ins, opaque, opaque_len, status);
        break;
    case DEVICE:
        ((device_fn)function)(NULL, (void **)out_or_buffers, opaque, opaque_len);
        break;
    case DEVICE_STATUS:
        ((device_status_fn)function)(NULL, (void **)out_or_buffers, opaque, opaque_len, status);
        break;
    }
    trap = NULL;
    return 0;
}
