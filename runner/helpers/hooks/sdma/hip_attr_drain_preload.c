/*
 * hip_attr_drain_preload.c: LD_PRELOAD shim for SDMA all-gather runs
 * (06_enable_sdma_all_gather.sh; upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/).
 *
 * Wraps hipDeviceGetAttribute and cudaDeviceGetAttribute. The real function is
 * looked up with dlsym(RTLD_NEXT, ...) on first use. When it fails, the HIP
 * runtime's sticky last error is cleared with hipGetLastError() (so a later,
 * unrelated hipGetLastError()/hipPeekAtLastError() check does not trip over a
 * failed attribute query), one line naming the attribute, device and code is
 * written to stderr, and the original error code is returned unchanged.
 *
 * Build: gcc -O2 -fPIC -shared -o libhip_attr_drain.so hip_attr_drain_preload.c -ldl
 * Written for primus-runner; no HIP headers needed (ints stand in for the enums).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

typedef int (*attr_fn)(int *value, int attr, int device);
typedef int (*last_error_fn)(void);

static void drain_hip_error(void) {
    static last_error_fn get_last_error;
    if (!get_last_error) {
        get_last_error = (last_error_fn)dlsym(RTLD_DEFAULT, "hipGetLastError");
    }
    if (get_last_error) {
        (void)get_last_error();
    }
}

static int call_attr(const char *name, attr_fn *slot, int *value, int attr, int device) {
    if (!*slot) {
        *slot = (attr_fn)dlsym(RTLD_NEXT, name);
        if (!*slot) {
            fprintf(stderr, "[hip_attr_drain] %s not found by dlsym: %s\n", name, dlerror());
            return 1; /* hipErrorInvalidValue / cudaErrorInvalidValue */
        }
    }
    int rc = (*slot)(value, attr, device);
    if (rc != 0) {
        drain_hip_error();
        fprintf(stderr, "[hip_attr_drain] %s(attr=%d, device=%d) returned %d; last error cleared\n",
                name, attr, device, rc);
    }
    return rc;
}

int hipDeviceGetAttribute(int *value, int attr, int device) {
    static attr_fn real;
    return call_attr("hipDeviceGetAttribute", &real, value, attr, device);
}

int cudaDeviceGetAttribute(int *value, int attr, int device) {
    static attr_fn real;
    return call_attr("cudaDeviceGetAttribute", &real, value, attr, device);
}
