/*
 * rtc-check: compile one kernel source with hiprtc or NVRTC, loaded at run time.
 *
 * A stand-in for `kjit get` used by tests/kernels/test-kernels-compile.sh until the
 * daemon path is wired in.  It dlopens libamdhip64.so.5 (hiprtc) or libnvrtc.so.13,
 * compiles FILE for one target with the given options, prints the compile log on
 * failure, checks that every requested entry point name occurs in the code object
 * (extern "C" names are stored unmangled in the ELF symbol table), and optionally
 * writes the code object (HSACO or cubin) to a file.  Each run compiles exactly one
 * program, so a compiler that aborts takes down only this process.
 *
 *   rtc-check hip|cuda FILE TARGET [-o OUT] [-e ENTRY]... [-- OPTION...]
 *   rtc-check --entries-in OBJECT -e ENTRY...    (only check an existing code object)
 *
 * Exit status: 0 compiled (and entries found), 1 compile/check failure, 2 usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTC_MAX_OPTS 64
#define RTC_MAX_ENTRIES 16

/* hiprtc and NVRTC share one shape: opaque program handle, int status codes. */
typedef int (*create_fn)(void **prog, const char *src, const char *name, int nhdr,
                         const char *const *hdrs, const char *const *incnames);
typedef int (*compile_fn)(void *prog, int nopt, const char *const *opts);
typedef int (*size_fn)(void *prog, size_t *size);
typedef int (*get_fn)(void *prog, char *buf);
typedef int (*destroy_fn)(void **prog);
typedef const char *(*errstr_fn)(int status);

struct rtc_api {
    void *lib;
    create_fn create;
    compile_fn compile;
    size_fn log_size;
    get_fn log;
    size_fn code_size;
    get_fn code;
    destroy_fn destroy;
    errstr_fn errstr;
};

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fprintf(stderr, "rtc-check: symbol %s missing: %s\n", name, dlerror());
    return p;
}

/* Load the compiler library for `backend`; returns 0 or -1 with a message printed. */
static int api_load(struct rtc_api *a, const char *backend)
{
    int hip = strcmp(backend, "hip") == 0;
    const char *libname = hip ? "libamdhip64.so.5" : "libnvrtc.so.13";
    const char *p = hip ? "hiprtc" : "nvrtc";
    char n[64];
    void *fp;

    a->lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        fprintf(stderr, "rtc-check: cannot load %s: %s\n", libname, dlerror());
        return -1;
    }
#define LOAD(field, suffix, type)                                  \
    snprintf(n, sizeof n, "%s%s", p, suffix);                      \
    if (!(fp = sym(a->lib, n)))                                    \
        return -1;                                                 \
    memcpy(&a->field, &fp, sizeof fp); /* dlsym result to a type */
    LOAD(create, "CreateProgram", create_fn)
    LOAD(compile, "CompileProgram", compile_fn)
    LOAD(log_size, "GetProgramLogSize", size_fn)
    LOAD(log, "GetProgramLog", get_fn)
    LOAD(code_size, hip ? "GetCodeSize" : "GetCUBINSize", size_fn)
    LOAD(code, hip ? "GetCode" : "GetCUBIN", get_fn)
    LOAD(destroy, "DestroyProgram", destroy_fn)
    LOAD(errstr, "GetErrorString", errstr_fn)
#undef LOAD
    return 0;
}

/* Read a whole file into a NUL-terminated malloc'd buffer; caller frees. */
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
        fprintf(stderr, "rtc-check: cannot read %s\n", path);
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

static void print_log(struct rtc_api *a, void *prog)
{
    size_t n = 0;
    char *log;

    if (a->log_size(prog, &n) != 0 || n <= 1)
        return;
    log = malloc(n);
    if (log && a->log(prog, log) == 0)
        fprintf(stderr, "%s\n", log);
    free(log);
}

static int usage(void)
{
    fprintf(stderr, "usage: rtc-check hip|cuda FILE TARGET [-o OUT] [-e ENTRY]... [-- OPTION...]\n"
                    "       rtc-check --entries-in OBJECT -e ENTRY...\n");
    return 2;
}

/* 0 if every entry name (NUL-terminated, as in an ELF string table) is in code. */
static int check_entries(const char *code, size_t len, const char *const *entries, int n,
                         const char *what)
{
    for (int i = 0; i < n; i++) {
        if (!memmem(code, len, entries[i], strlen(entries[i]) + 1)) {
            fprintf(stderr, "rtc-check: entry %s not in code object of %s\n", entries[i], what);
            return -1;
        }
    }
    return 0;
}

/* --entries-in OBJECT -e ENTRY...: check an object compiled earlier. */
static int entries_in(int argc, char **argv)
{
    const char *entries[RTC_MAX_ENTRIES];
    size_t len = 0;
    int n = 0, r;
    char *code;

    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "-e") && i + 1 < argc && n < RTC_MAX_ENTRIES)
            entries[n++] = argv[++i];
        else
            return usage();
    }
    if (!(code = read_file(argv[2], &len)))
        return 1;
    r = check_entries(code, len, entries, n, argv[2]) == 0 ? 0 : 1;
    free(code);
    return r;
}

int main(int argc, char **argv)
{
    struct rtc_api a = {0};
    const char *opts[RTC_MAX_OPTS], *entries[RTC_MAX_ENTRIES], *out_path = NULL;
    int nopt = 0, nent = 0, r = 1, st, i;
    char *src = NULL, *code = NULL, arch[128];
    size_t srclen = 0, codelen = 0;
    void *prog = NULL;

    if (argc >= 3 && !strcmp(argv[1], "--entries-in"))
        return entries_in(argc, argv);
    if (argc < 4 || (strcmp(argv[1], "hip") && strcmp(argv[1], "cuda")))
        return usage();
    snprintf(arch, sizeof arch, "--gpu-architecture=%s", argv[3]);
    opts[nopt++] = arch;
    for (i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "-e") && i + 1 < argc && nent < RTC_MAX_ENTRIES)
            entries[nent++] = argv[++i];
        else if (!strcmp(argv[i], "--"))
            break;
        else
            return usage();
    }
    for (i++; i < argc; i++) {
        if (nopt >= RTC_MAX_OPTS)
            return usage();
        opts[nopt++] = argv[i];
    }
    if (api_load(&a, argv[1]) != 0)
        return 1;
    if (!(src = read_file(argv[2], &srclen)))
        goto out;
    if ((st = a.create(&prog, src, argv[2], 0, NULL, NULL)) != 0) {
        fprintf(stderr, "rtc-check: create program: %s\n", a.errstr(st));
        goto out;
    }
    st = a.compile(prog, nopt, opts);
    if (st != 0) {
        fprintf(stderr, "rtc-check: %s for %s failed: %s\n", argv[2], argv[3], a.errstr(st));
        print_log(&a, prog);
        goto out;
    }
    if ((st = a.code_size(prog, &codelen)) != 0 || codelen == 0 || !(code = malloc(codelen)) ||
        (st = a.code(prog, code)) != 0) {
        fprintf(stderr, "rtc-check: cannot get code object: %s\n", a.errstr(st));
        goto out;
    }
    if (check_entries(code, codelen, entries, nent, argv[2]) != 0)
        goto out;
    if (out_path) {
        FILE *f = fopen(out_path, "wb");
        int bad = !f || fwrite(code, 1, codelen, f) != codelen;
        if ((f && fclose(f) != 0) || bad) {
            perror(out_path);
            goto out;
        }
    }
    r = 0;
out:
    if (prog)
        a.destroy(&prog);
    free(code);
    free(src);
    /* the compiler library is left loaded: some versions crash in their unload hooks */
    return r;
}
