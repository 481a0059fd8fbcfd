/* main.c - argv -> mode and options (cli.c) -> the mode's run (or, for a
 * batch of inputs, core/batch.c) -> exit status. */
#include <omp.h>
#include <signal.h>
#include <string.h>

#include "cli.h"
#include "core/batch.h"
#include "core/loop.h"
#include "error.h"
#include "log.h"

static void on_signal(int sig)
{
  (void)sig;
  lt_stop_requested = 1;
}

int main(int argc, char **argv)
{
  lt_cli c;
  int r = lt_cli_parse(argc, argv, &c);
  if (r != 0) {
    lt_cli_free(&c);
    return r == 1 ? LT_EXIT_OK : lt_exit_status(r);
  }
  lt_log_set_level(c.s.verbosity);
  if (c.s.threads > 0) omp_set_num_threads(c.s.threads);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  r = c.batch ? lt_batch_run(&c) : c.mode->run(&c.s, c.params);
  lt_cli_free(&c);
  return lt_exit_status(r);
}
