/* outfile.h: writing an output file named on a command line (`kjit get -o`,
 * `kjit export -o`, `kjit stats --prometheus`, kjitd's export) the way cp
 * and compilers do: a regular file is replaced atomically (a temporary in
 * its directory, fsync, rename), a symlink is followed (its target is
 * written and the link kept), a character device or FIFO is written where
 * it is and never replaced, and a socket, block device or directory is
 * refused with one line.  "-" (standard output) is the caller's business.
 */
#ifndef KJ_OUTFILE_H
#define KJ_OUTFILE_H

#include <stddef.h>

/* An output being written; fill by kj__outfile_open, end with commit or
 * abort. */
struct kj__outfile {
	int fd;
	int in_place;       /* a character device or FIFO, written where it is */
	char *final;        /* the file the commit renames over (symlinks resolved) */
	char *tmp;          /* its temporary, in the same directory; NULL in place */
};

/* kj__outfile_open flags. */
#define KJ_OUT_REGULAR_ONLY 1u /* refuse devices and FIFOs too (kjitd: it must not block) */

/* Opens path for writing.  0, or -errno with a one-line reason in err
 * (naming path and what to do); nothing is created on failure. */
int kj__outfile_open(struct kj__outfile *o, const char *path, unsigned flags, char *err, size_t errlen);
/* Makes what was written durable and visible (rename over the final name,
 * or close in place).  0 or -errno with err set; o is released either
 * way (the temporary removed on failure). */
int kj__outfile_commit(struct kj__outfile *o, char *err, size_t errlen);
/* Drops what was written (the temporary removed) and releases o. */
void kj__outfile_abort(struct kj__outfile *o);
/* open + write n bytes of p + commit.  0 or -errno with err set. */
int kj__outfile_write(const char *path, const void *p, size_t n, unsigned flags, char *err, size_t errlen);

#endif /* KJ_OUTFILE_H */
