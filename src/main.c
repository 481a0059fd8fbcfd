/* main.c - argv -> options -> mode -> exit status. */
#include <omp.h>
#include <signal.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "log.h"
#include "run.h"

static void on_signal(int sig)
{
  (void)sig;
  lt_stop_requested = 1;
}

int main(int argc, char **argv)
{
  lt_options o;
  int r = lt_cli_parse(argc, argv, &o);
  if (r == 1) return LT_EXIT_OK;
  if (r < 0) return lt_exit_status(r);
  lt_log_set_level(o.verbosity);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  return lt_exit_status(lt_leuk_run(&o));
}
