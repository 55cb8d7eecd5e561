/* jobmsg.h: the two messages between kjitd and a compile worker, JOB and
 * RESULT (docs/protocol.md), each one's encoder and decoder in one place.
 *
 * JOB (daemon -> worker) carries a struct kj__compile_job, the very struct
 * every compiler family compiles from (compilers/compiler.h includes this
 * header): kjitd fills one from its flight and encodes it; the worker
 * decodes the frame back into one.  RESULT (worker -> daemon) carries a
 * struct kj__result both ways.  A decoder checks every field (present
 * once, the right width, no NUL in a string, within its cap in
 * common/kj_limits.h) and says in one line what is wrong; it owns what it
 * allocates until its clear function, and on failure leaves nothing
 * allocated.  Decoded byte fields (the source, a header's bytes, the
 * object) point into the frame body, which must outlive the result.
 */
#ifndef KJ_JOBMSG_H
#define KJ_JOBMSG_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"

/* A header the source may include: its name and bytes. */
struct kj__header {
	const char *name;
	const uint8_t *data;
	size_t len;
};

/* What a worker compiles: a JOB message's content. */
struct kj__compile_job {
	const char *target;                 /* canonical target ID */
	const char *const *options;         /* in order */
	size_t n_options;
	const char *const *entries;         /* may be empty */
	size_t n_entries;
	const char *source_name;            /* "rms_norm.cu"; never NULL once decoded */
	const uint8_t *source;
	size_t source_len;
	const struct kj__header *headers;   /* every header the source may include */
	size_t n_headers;
	/* Not sent: the worker's fresh, empty directory for this job at a fixed
	 * path (/tmp/job inside the walls), where a family that writes files
	 * compiles, so no job's counter or random name reaches an object; NULL
	 * outside a worker (the family makes its own, kj__job_dir_open). */
	const char *dir;
};

/* Encodes job as a JOB frame of request id into b (reset first), ended
 * and ready to send.  job->target and job->source are required.  0,
 * KJIT_EINVAL (one missing), KJIT_ETOOBIG (over the frame cap) or
 * KJIT_ENOMEM. */
int kj__job_encode(struct kj__buf *b, uint32_t id, const struct kj__compile_job *job);

/* A decoded JOB: job points into the copies below and into the body. */
struct kj__job_msg {
	struct kj__compile_job job;
	char *target, *source_name;         /* private to jobmsg.c */
	char **options, **entries;
	struct kj__header *headers;
};

/* Decodes a JOB message's fields m into *out (which need not be
 * initialized).  0, or KJIT_EINVAL (TARGET or SOURCE missing, a field
 * malformed or repeated), KJIT_EPROTO (HEADER_NAME and HEADER_DATA not in
 * pairs), KJIT_ETOOBIG (a field or a count over its cap) or KJIT_ENOMEM,
 * with one line in err.  *out is freed by kj__job_msg_clear either way
 * (on failure it is already empty). */
int kj__job_decode(const struct kj__msg *m, struct kj__job_msg *out, char *err, size_t errlen);
void kj__job_msg_clear(struct kj__job_msg *jm);

/* A worker's answer to one JOB. */
struct kj__result {
	int32_t code;        /* 0, or the job's negative KJIT_E* code */
	const uint8_t *data; /* the object (code 0 only); decoded: points into the body */
	size_t len;
	char *log;           /* the compiler's log, or NULL */
	char *lowered;       /* lowered names (common/lowered.h), code 0 only, or NULL */
	char *error;         /* one line on failure, or NULL */
	uint64_t compile_us; /* time the worker spent */
};

/* Encodes r as a RESULT frame answering request id into b (reset first),
 * ended and ready to send: DATA and LOWERED only with code 0.  0,
 * KJIT_EINVAL (code 0 without data, or code > 0), KJIT_ETOOBIG (over the
 * frame cap: the caller may retry without the log) or KJIT_ENOMEM. */
int kj__result_encode(struct kj__buf *b, uint32_t id, const struct kj__result *r);

/* Decodes a RESULT message's fields m into *out (which need not be
 * initialized).  0, or with one line in err: KJIT_ETOOBIG (the object over
 * KJ_OBJECT_MAX), KJIT_ENOMEM, or KJIT_EWORKER for anything else the
 * worker got wrong (CODE missing, positive or not 4 bytes, a field
 * repeated or malformed, code 0 without an object, lowered names not in
 * their form).  out->log, ->lowered and ->error are malloc'd; free them
 * with kj__result_clear (on failure they are already NULL). */
int kj__result_decode(const struct kj__msg *m, struct kj__result *out, char *err, size_t errlen);
void kj__result_clear(struct kj__result *r);

#endif /* KJ_JOBMSG_H */
