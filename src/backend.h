/* backend.h - backend selection, the one place that knows whether CUDA was
 * compiled in (backend.c, the only #ifdef LT_HAVE_CUDA of the C code).
 * Each mode has its own stage table type (a struct of function pointers:
 * lt_leuk_backend, ...) with a CPU instance in src/MODE/ and, when the mode
 * has one, a CUDA instance in cuda/MODE/ registered by one row in
 * backend.c's table. A mode asks for its table once per run. */
#ifndef LT_BACKEND_H
#define LT_BACKEND_H

/* Number of usable CUDA devices (0 when CUDA is not compiled in, no driver
 * or no device); *why gets a short reason when 0. */
int lt_cuda_device_count(const char **why);

/* The stage table of `mode` for --backend `choice` (LT_BACKEND_*) and
 * --device: cpu, or the mode's CUDA table. auto: CUDA when compiled in, the
 * mode has a CUDA table and the device is usable, else cpu (says which and
 * why with -v). cuda: LT_ERR_GPU with one clear message when unusable.
 * Selects (and initialises) the device when CUDA is chosen. */
int lt_backend_stages(const char *mode, int choice, int device, const void *cpu, const void **out);

/* For leuktrack's main, once the command line is parsed: when `mode` would
 * run on CUDA (--backend auto or cuda, CUDA compiled in, the mode has a CUDA
 * table), starts the driver's probe and the device's context on a thread,
 * so that they overlap the inputs' opening (lt_backend_stages then finds
 * them made; the thread says nothing: a failure is reported there), and
 * marks the process's last CUDA buffers as the driver's to reclaim at exit
 * (backend.cu keeps its spares to the end instead of freeing them).
 * LT_CUDA_EARLY=0: no thread; LT_CUDA_FREE=1: every buffer freed and the
 * context torn down as before (compute-sanitizer's leak check). */
void lt_backend_warm(const char *mode, int choice, int device);
/* Waits for that thread (main, before it returns). */
void lt_backend_warm_wait(void);
/* 1 when main may leave the CUDA context's teardown to a child process
 * once its outputs are written and stdout/stderr flushed (main.c): a CUDA
 * context was made, neither LT_CUDA_FREE=1 nor LT_CUDA_QUICK_EXIT=0 (an
 * ordinary exit) is set, and no CUDA tool is injected (CUDA_INJECTION64_PATH:
 * compute-sanitizer, Nsight). */
int lt_backend_quick_exit(void);

/* True when this binary has the CUDA backend. */
int lt_have_cuda(void);

#endif
