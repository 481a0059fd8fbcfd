/* main.c - argv -> mode and options (cli.c) -> the mode's run (or, for a
 * batch of inputs, core/batch.c) -> exit status. A run that may use CUDA
 * has the driver and the context started on a thread first (backend.h:
 * lt_backend_warm), and, when it made a CUDA context, leaves the context's
 * teardown to a child once everything is written (lt_backend_quick_exit). */
#include <fcntl.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "cli.h"
#include "core/batch.h"
#include "core/loop.h"
#include "error.h"
#include "log.h"

/* Ends the process with `status` once every output is committed or removed
 * (the runs returned) and stdout/stderr are flushed, leaving the CUDA
 * context's teardown (~0.1 s in the driver, H100 2026-11-24) to a child
 * that holds the driver's files (/dev/nvidia*) open until this process is
 * gone: the driver tears the context down when the last of them closes,
 * after the caller has seen this process end. The child keeps no other
 * file open (a pipe reading our stdout sees its end with ours) and runs
 * nothing but async-signal-safe system calls. When fork fails: an ordinary exit. */
static void hand_over_and_exit(int status)
{
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
      if (null >= 0 && null != fd) dup2(null, fd);
    if (null > 2) close(null);
    for (int fd = 3; fd < 4096; fd++) {
      /* "/proc/self/fd/<fd>" by hand: after fork() in a threaded process
       * only async-signal-safe calls may run (no stdio) */
      char path[32] = "/proc/self/fd/", target[32];
      char *p = path + 14, dig[8];
      int nd = 0;
      for (int v = fd; v > 0 || nd == 0; v /= 10) dig[nd++] = (char)('0' + v % 10);
      while (nd > 0) *p++ = dig[--nd];
      *p = 0;
      const ssize_t n = readlink(path, target, sizeof target - 1);
      if (n < 0) continue;
      target[n] = 0;
      if (strncmp(target, "/dev/nvidia", 11) != 0) close(fd);
    }
    const struct timespec ms = {0, 1000000};
    while (getppid() == parent) nanosleep(&ms, NULL);
    _exit(0);
  }
  if (child < 0) exit(status);
  _exit(status);
}

static void on_signal(int sig)
{
  (void)sig;
  lt_stop_requested = 1;
}

int main(int argc, char **argv)
{
  lt_log_mark_start();
  lt_cli c;
  int r = lt_cli_parse(argc, argv, &c);
  if (r != 0) {
    lt_cli_free(&c);
    return r == 1 ? LT_EXIT_OK : lt_exit_status(r);
  }
  lt_log_set_level(c.s.verbosity);
  lt_backend_warm(c.mode->name, c.s.backend, c.s.device);
  if (c.s.threads > 0) omp_set_num_threads(c.s.threads);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  r = c.batch ? lt_batch_run(&c) : c.mode->run(&c.s, c.params);
  lt_cli_free(&c);
  lt_backend_warm_wait();
  const int status = lt_exit_status(r);
  lt_debug("exit %d at +%.1f ms", status, lt_since_start_ms());
  if (lt_backend_quick_exit()) hand_over_and_exit(status);
  return status;
}
