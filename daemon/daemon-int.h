/* daemon-int.h: the top room's part of kjitd's context (issue 33): struct
 * kj__toproom, d->top, allocated by main.c.  What main.c (the command
 * line, the signals, the flush timer), log.c (the log), config.c (SIGHUP's
 * reread) and detect-run.c (the GPUs found at start) keep between calls.
 * Private to those four files; the other rooms ask through daemon.h
 * (kj__log, kj__log_fd, kj__daemon_gpu, kj__top_stop...);
 * tests/e2e/layering.sh keeps it so. */
#ifndef KJ_DAEMON_INT_H
#define KJ_DAEMON_INT_H

#include "daemon.h"

struct kj__toproom {
	int ready_fd;                /* parent's readiness pipe, -1 after use */
	int argc;                    /* the command line, reread with the configuration on SIGHUP */
	char **argv;
	uv_signal_t sigterm, sigint;
	uv_signal_t sighup;          /* SIGHUP: log reopened, configuration reread (config.c) */
	uv_timer_t flush_timer;
	FILE *log;
	int log_mode;                /* log.c: KJ_LOG_FILE, _STDERR, _STREAM (journal on stderr), _JOURNAL */
	struct kj__gpu gpus[16];     /* detected at start */
	size_t n_gpus;
	char detect_note[4][256];    /* per backend: why nothing was found */
};

#endif /* KJ_DAEMON_INT_H */
