/*
 * entries-check: does a code object (HSACO, cubin) hold the named entry points?
 *
 * tests/kernels/test-kernels-compile.sh fetches every bundled kernel from kjitd with
 * `kjit get` and asks this tool whether each entry point of its manifest line is in
 * the object.  extern "C" kernels keep their names unmangled in the ELF string table,
 * so a NUL-terminated match of the name is enough.
 *
 *   entries-check OBJECT ENTRY...
 *
 * Exit status: 0 all found, 1 one missing or the file unreadable, 2 usage.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f) {
        perror(path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        goto out;
    }
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "entries-check: cannot read %s\n", path);
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    *len = (size_t)n;
out:
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    size_t len = 0;
    char *code;
    int r = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: entries-check OBJECT ENTRY...\n");
        return 2;
    }
    if (!(code = read_file(argv[1], &len)))
        return 1;
    for (int i = 2; i < argc; i++) {
        if (!memmem(code, len, argv[i], strlen(argv[i]) + 1)) {
            fprintf(stderr, "entries-check: entry %s not in %s\n", argv[i], argv[1]);
            r = 1;
        }
    }
    free(code);
    return r;
}
