/* real.c: finds the real NVRTC or hiprtc a drop-in forwards to, by full
 * path, never by its soname (a load by soname would find the drop-in
 * itself, already loaded under that name).
 *
 * Order: the variable env (KJIT_REAL_NVRTC / KJIT_REAL_HIPRTC), an absolute
 * path; then another object of the same soname the process has already
 * loaded by path (PyTorch preloads the NVRTC of its wheel,
 * site-packages/nvidia/cu13/lib/libnvrtc.so.13: that one is what the program
 * would have used); then the fixed places the caller lists.  A candidate
 * that is a drop-in (it exports kjit_dropin_version) is skipped, so two
 * copies of the drop-in never forward to each other.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

struct find {
	const char *soname;
	const char *self;  /* our own file */
	char path[4096];
};

/* The soname in an object's dynamic section, or NULL. */
static const char *soname_of(const struct dl_phdr_info *info)
{
	const ElfW(Dyn) *dyn = NULL;
	const char *strtab = NULL;
	size_t off = (size_t)-1;

	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_SONAME)
			off = dyn->d_un.d_val;
	}
	if (strtab && (ElfW(Addr))strtab < info->dlpi_addr)
		strtab += info->dlpi_addr; /* a dynamic section glibc did not relocate in place */
	return strtab && off != (size_t)-1 ? strtab + off : NULL;
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	const char *so;

	(void)size;
	if (info->dlpi_name == NULL || info->dlpi_name[0] != '/' || strcmp(info->dlpi_name, f->self) == 0)
		return 0;
	if ((so = soname_of(info)) == NULL || strcmp(so, f->soname) != 0)
		return 0;
	snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
	return 1;
}

/* dlopen of path, refused when it is a drop-in.  NULL on failure. */
static void *open_real(const char *path, char *err, size_t errlen)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : path);
		return NULL;
	}
	if (dlsym(h, "kjit_dropin_version") != NULL) {
		snprintf(err, errlen, "%s is kjit's drop-in, not the real library", path);
		dlclose(h);
		return NULL;
	}
	return h;
}

void *kj__dp_real_open(const char *env, const char *soname, const char *const *paths, size_t n_paths,
		       char *err, size_t errlen)
{
	const char *e = getenv(env);
	struct find f = { soname, "", "" };
	Dl_info self;
	void *h;

	snprintf(err, errlen, "no real %s found", soname);
	if (e && *e) {
		if (e[0] != '/') {
			snprintf(err, errlen, "%s must be an absolute path (a name would find the drop-in)", env);
			return NULL;
		}
		return open_real(e, err, errlen);
	}
	if (dladdr((void *)kj__dp_real_open, &self) != 0 && self.dli_fname)
		f.self = self.dli_fname;
	if (dl_iterate_phdr(find_loaded, &f) == 1 && (h = open_real(f.path, err, errlen)) != NULL)
		return h;
	for (size_t i = 0; i < n_paths; i++)
		if ((h = open_real(paths[i], err, errlen)) != NULL)
			return h;
	return NULL;
}
