/* cmd-help.c: what `kjit COMMAND --help` says beside the usage line: a
 * paragraph per command, kept here so cli.c's table stays one line a
 * command.  The words follow kjit(1), which says more. */
#include <stdio.h>
#include <string.h>

#include "cli-int.h"
#include "util.h"

static const struct {
	const char *name;
	const char *text;
} helps[] = {
	{ "get", "Gets the code object of a source (--source FILE) or a bundled kernel (--kernel NAME) for\n"
		 "backend B (hip, cuda, vulkan): a hit from the cache, or compiled once by kjitd. Prints\n"
		 "\"STATUS KEY TARGET SIZE bytes\"; -o FILE writes the object (-o - to stdout).\n"
		 "  --target T             the GPU target (else the environment's, kjitd's or detected)\n"
		 "  --entry E              an entry point (repeatable)\n"
		 "  -I DIR                 search DIR for #include files (here, not in kjitd)\n"
		 "  -D NAME[=V], -U NAME   define, undefine a macro\n"
		 "  -O[N], -std=STD        optimisation level, language standard\n"
		 "  --compiler C           hiprtc|hipcc, nvrtc|nvcc\n"
		 "  --name-expression EXPR the lowered name of a C++ expression\n"
		 "  --opt OPT              any other compiler option kjitd allows\n"
		 "  --include-header [NAME=]FILE  send FILE as an include\n"
		 "  --explain              for a miss: the nearest earlier entry and what differs\n"
		 "  --json                 one JSON object on stdout\n" },
	{ "warm", "Compiles the bundled kernels (or --kernel NAMEs) for each backend and target, -j N at a\n"
		  "time, so later jobs hit. --replay recompiles what was compiled before (for a new runtime);\n"
		  "--remote-only fetches from the fleet tier without compiling.\n" },
	{ "targets", "The targets each backend resolves to here (environment, kjitd's configuration, detection),\n"
		     "and where each came from.\n" },
	{ "stats", "The daemon's socket, cache folder and hit rate, then its counters (hits, misses, compiles,\n"
		   "errors, bytes), workers and per-target sizes. Not counted as a request. --zero resets the\n"
		   "counters (administrators); --prometheus FILE writes them for node_exporter.\n" },
	{ "kernels", "Lists the bundled kernels (NAME BACKEND), without compiling any.\n" },
	{ "ls", "Lists the cache's entries (yours; all of them for an administrator): key, backend, target,\n"
		"version, size, source name. --target T keeps one target.\n" },
	{ "show", "Shows one entry: metadata, options, compiler, log. KEY is the whole key or a unique prefix\n"
		  "of 6 or more hex digits (the 16 that --explain prints), among the entries you may see.\n" },
	{ "gc", "Evicts least recently used entries until the cache is under SIZE (default kjitd's\n"
		"--max-size). Administrators.\n" },
	{ "verify", "Checks every object against its digest; drops what is corrupt or missing. Administrators.\n" },
	{ "clear", "Removes every entry (or those of --target T). Administrators.\n" },
	{ "export", "Writes the cache's entries (or those of --target T...) to a bundle FILE for `kjit import`\n"
		    "on other nodes; -o - writes it to stdout. kjitd's owner and root.\n" },
	{ "import", "Adds the entries of a bundle made by `kjit export`, checked whole first. The bundle is read\n"
		    "here (FILE, or stdin for -) and streamed to kjitd, which never opens your path.\n"
		    "Administrators.\n" },
	{ "ping", "Checks that kjitd answers, and how fast.\n" },
	{ "config", "kjitd's settings: each option, its value, and where it came from (command line, a line of\n"
		    "the configuration file, or the default).\n" },
	{ "stop", "Stops kjitd. Administrators.\n" },
	{ "run", "Runs CMD with kjit's drop-in libnvrtc/libhiprtc first on its library path, so its NVRTC\n"
		 "and hiprtc calls are served from the cache. --quiet: no summary; --no-preload: the\n"
		 "library path only.\n" },
};

void kj__cli_help(FILE *f, const struct cmd *cmd)
{
	fprintf(f, "usage: kjit %s\n", cmd->usage);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(helps); i++)
		if (strcmp(helps[i].name, cmd->name) == 0)
			fprintf(f, "\n%s", helps[i].text);
	fprintf(f, "\nexit status: 0 success, 1 the request failed, 2 usage error, 3 kjitd unreachable; see kjit(1)\n");
}
