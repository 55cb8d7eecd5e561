/* test.h: the whole test harness, header only.  A test file defines
 * functions `static void test_NAME(void)` and lists them with TEST_LIST;
 * main() is generated.  Each test runs in its own child process with a
 * timeout (as libuv's runner does), so a crash or hang fails that test
 * alone.  Output is one line per test, "ok NAME" or "not ok NAME: why",
 * which tests/run.sh counts into the final "N passed, N failed".
 *
 *   static void test_roundtrip(void) { CHECK(1 + 1 == 2); CHECK_EQ_INT(f(), 0); }
 *   TEST_LIST(TEST(roundtrip))
 */
#ifndef KJ_TEST_H
#define KJ_TEST_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                              \
	do {                                                                            \
		long long a_ = (long long)(a), b_ = (long long)(b);                     \
		if (a_ != b_) {                                                         \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, \
				__LINE__, #a, a_, #b, b_);                              \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                              \
	do {                                                                            \
		const char *a_ = (a), *b_ = (b);                                        \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                  \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, \
				__LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");  \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

struct kj_test {
	const char *name;
	void (*fn)(void);
};

#define TEST(name) { #name, test_##name },

#ifndef KJ_TEST_TIMEOUT_S
#define KJ_TEST_TIMEOUT_S 120
#endif

static int kj_test_run_one(const struct kj_test *t)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 0;
	}
	if (pid == 0) {
		alarm(KJ_TEST_TIMEOUT_S);
		t->fn();
		fflush(NULL);
		_exit(0);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		printf("ok %s\n", t->name);
		return 1;
	}
	if (WIFSIGNALED(st))
		printf("not ok %s: killed by signal %d%s\n", t->name, WTERMSIG(st),
		       WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
	else
		printf("not ok %s: exit %d\n", t->name, WEXITSTATUS(st));
	return 0;
}

#define TEST_LIST(...)                                                                  \
	static const struct kj_test kj_tests[] = { __VA_ARGS__ };                        \
	int main(int argc, char **argv)                                                 \
	{                                                                               \
		int pass = 0, fail = 0;                                                 \
		setvbuf(stdout, NULL, _IOLBF, 0);                                       \
		for (size_t i = 0; i < sizeof kj_tests / sizeof kj_tests[0]; i++) {     \
			if (argc > 1 && strcmp(argv[1], kj_tests[i].name) != 0)         \
				continue;                                               \
			if (kj_test_run_one(&kj_tests[i]))                              \
				pass++;                                                 \
			else                                                            \
				fail++;                                                 \
		}                                                                       \
		printf("# %s: %d passed, %d failed\n", argv[0], pass, fail);            \
		return fail ? 1 : 0;                                                    \
	}

#endif /* KJ_TEST_H */
