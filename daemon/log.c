/* log.c: kjitd's log: one line per event, with a timestamp and our pid,
 * flushed at once so a crash loses nothing already said. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

void kj__log(struct kj__daemon *d, const char *fmt, ...)
{
	va_list ap;
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;

	if (d->log == NULL)
		return;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
	fprintf(d->log, "%s kjitd[%d]: ", ts, (int)getpid());
	va_start(ap, fmt);
	vfprintf(d->log, fmt, ap);
	va_end(ap);
	fputc('\n', d->log);
	fflush(d->log);
}

