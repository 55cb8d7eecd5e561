# kjit: build, test, run.  `make` builds everything into $(BUILD)/;
# `make test` and `make run` first install what a fresh Debian 12 lacks
# (scripts/deps.sh).  Modules are picked up by directory: a new .c file in
# common/, cache/, compilers/, daemon/, daemon/detect/, remote/ or client/ needs no
# edit here (one that libkjit needs goes into CLIENT_COMMON_SRC or LIBKJIT_OBJ below).

BUILD   ?= build
PREFIX  ?= /usr/local
# /etc for the system prefix, PREFIX/etc for any other: kjitd reads
# SYSCONFDIR/kjit/kjitd.conf (compiled in, like PREFIX).
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
# The package's version, written in one place: python/kjit/_version.py
# (pip reads it there too); kjit --version, kjitd --version, kjit.pc, the .deb.
VERSION := $(shell sed -n 's/^__version__ = "\([^"]*\)"$$/\1/p' python/kjit/_version.py)
DESTDIR ?=
CC      ?= cc
SAN     ?=
OPT     ?= -O2

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CPPFLAGS_KJ := -D_GNU_SOURCE -Iinclude -Iclient -Icommon -Icache -Icompilers -Idaemon -Idaemon/net -Idaemon/miss -Idaemon/admin -Idaemon/detect -Iremote \
	-DKJIT_PREFIX='"$(PREFIX)"' -DKJIT_SRCDIR='"$(CURDIR)"' -DKJIT_SYSCONFDIR='"$(SYSCONFDIR)"' \
	-DKJ_PACKAGE_VERSION='"$(VERSION)"'
CFLAGS_KJ := -std=c11 $(OPT) -g -fPIC $(WARN) -fvisibility=hidden
ifeq ($(SAN),1)
CFLAGS_KJ += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS_KJ += -fsanitize=address,undefined
endif
ifeq ($(COVERAGE),1)
CFLAGS_KJ += --coverage
LDFLAGS_KJ += --coverage
endif

SHADERC_LIBS := -lshaderc_combined -lglslang -lMachineIndependent -lOGLCompiler -lOSDependent -lGenericCodeGen -lSPIRV -lSPIRV-Tools-opt -lSPIRV-Tools -lstdc++ -lm -lpthread
DAEMON_LIBS  := -luv -lhiredis -lsqlite3 -lcrypto -ldl $(SHADERC_LIBS) -lsystemd
# libkjit needs libc and OpenSSL's libcrypto (ldd build/libkjit.so): the
# per-process memo and the shared hit table are indexed by the SHA-256 of the
# request body, and a collision there would serve the wrong object, so the
# fingerprint is a real hash from a well-kept library, not a hand-written one.
# It carries the kjit command (kjit_cli_main), whose warm runs threads, hence
# -pthread (a no-op since glibc 2.34 but needed before); programs linking
# libkjit.a add it too.
LIBKJIT_LIBS := -lcrypto -pthread
CLIENT_LIBS  := -lcrypto -pthread

COMMON_SRC   := $(wildcard common/*.c)
# What of common/ a client needs: framing and its frame reader (frames.c), the buffer and its allocator
# table (alloc.c), errors, paths, target IDs and resolution from the
# environment, and SHA-256 (sha.c), which
# fingerprints request bodies for the process memo and the shared hit table
# (hittab.c, whose reader libkjit uses; hitctr.c, its per-client counters),
# and the include scan (include.c, incfind.c, incmacro.c, incsplice.c), which libkjit runs itself for
# -I (client/ccopts.c) and which needs only libc and util.c; outfile.c
# writes the command's -o like cp.
CLIENT_COMMON_SRC := common/alloc.c common/buf.c common/err.c common/frames.c common/hitctr.c common/hittab.c common/incfind.c \
	common/htab.c common/incmacro.c common/incsplice.c common/include.c common/lowered.c common/outfile.c common/proto.c common/resolve.c common/sha.c \
	common/targetid.c common/util.c
DETECT_SRC   := $(wildcard daemon/detect/*.c)
CACHE_SRC    := $(wildcard cache/*.c)
COMPILER_SRC := $(wildcard compilers/*.c)
# daemon/'s rooms: net/ (the socket, connections, per-user limits), miss/ (a GET
# from parsing to the finished compile), admin/ (ADMIN requests, whole-cache jobs).
DAEMON_SRC   := $(filter-out daemon/main.c,$(wildcard daemon/*.c daemon/net/*.c daemon/miss/*.c daemon/admin/*.c))
# The fleet tier, kjitd's only: remote/remote.h is its one interface;
# remote/NAME/ holds a backend (redis today).
REMOTE_SRC   := $(wildcard remote/*.c remote/redis/*.c)
# The kjit command: client/cli.c and client/cmd-*.c are libkjit's, like the
# other client/*.c (kjit_cli_main, which `python3 -m kjit` calls too); the
# kjit binary is client/kjit-main.c, a main calling it, linked with libkjit.a.
# The drop-ins link libkjit's objects less the command's (LIBKJIT_OBJ below).
CLI_MAIN_SRC := client/kjit-main.c
CLI_SRC      := client/cli.c $(wildcard client/cmd-*.c)
CLIENT_SRC   := $(filter-out $(CLI_MAIN_SRC) $(CLI_SRC),$(wildcard client/*.c))
TEST_SRC     := $(wildcard tests/test-*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
COMMON_OBJ   := $(call obj,$(COMMON_SRC))
CLIENT_COMMON_OBJ := $(call obj,$(CLIENT_COMMON_SRC))
DETECT_OBJ   := $(call obj,$(DETECT_SRC))
CACHE_OBJ    := $(call obj,$(CACHE_SRC))
COMPILER_OBJ := $(call obj,$(COMPILER_SRC))
DAEMON_OBJ   := $(call obj,$(DAEMON_SRC))
REMOTE_OBJ   := $(call obj,$(REMOTE_SRC))
CLIENT_OBJ   := $(call obj,$(CLIENT_SRC))
CLI_OBJ      := $(call obj,$(CLI_SRC))
CLI_MAIN_OBJ := $(call obj,$(CLI_MAIN_SRC))
TESTS        := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

DEPS_OK := $(BUILD)/.deps-ok
DEPS_TEST_OK := $(BUILD)/.deps-test-ok

.PHONY: all deps deps-test test test-asan run stop install uninstall clean deb
all: $(BUILD)/kjitd $(BUILD)/kjitd-dist $(BUILD)/kjit $(BUILD)/libkjit.so $(BUILD)/libkjit.a \
	$(BUILD)/include/kjit.h $(BUILD)/kjit.pc

# scripts/deps.sh is a no-op when everything is installed.  Building and
# running need its first list; `make test` its test tools as well.
$(DEPS_OK): scripts/deps.sh
	@./scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@
$(DEPS_TEST_OK): scripts/deps.sh
	@./scripts/deps.sh --test
	@mkdir -p $(BUILD) && touch $@
deps: $(DEPS_OK)
deps-test: $(DEPS_TEST_OK)

$(BUILD)/obj/%.o: %.c $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_KJ) $(CFLAGS_KJ) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/kjitd: $(call obj,daemon/main.c) $(DAEMON_OBJ) $(REMOTE_OBJ) $(DETECT_OBJ) $(COMPILER_OBJ) $(CACHE_OBJ) $(COMMON_OBJ)
	$(CC) $(LDFLAGS_KJ) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

# The installed kjitd (kjitd-dist, installed as kjitd): the same objects
# without the "test" compiler family (compilers/testcomp.c, the fake
# compiler the crash, hang and budget tests drive), compiler.c compiled once
# more with KJ_NO_TESTCOMP.  The tests and benchmarks run $(BUILD)/kjitd.
DIST_COMPILER_OBJ := $(BUILD)/obj/dist/compilers/compiler.o \
	$(filter-out $(call obj,compilers/compiler.c compilers/testcomp.c),$(COMPILER_OBJ))
$(BUILD)/obj/dist/compilers/compiler.o: compilers/compiler.c $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_KJ) $(CFLAGS_KJ) $(CFLAGS) -DKJ_NO_TESTCOMP -MMD -MP -c $< -o $@
$(BUILD)/kjitd-dist: $(call obj,daemon/main.c) $(DAEMON_OBJ) $(REMOTE_OBJ) $(DETECT_OBJ) $(DIST_COMPILER_OBJ) $(CACHE_OBJ) \
		$(COMMON_OBJ)
	$(CC) $(LDFLAGS_KJ) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(BUILD)/kjit: $(CLI_MAIN_OBJ) $(BUILD)/libkjit.a
	$(CC) $(LDFLAGS_KJ) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

LIBKJIT_OBJ  := $(CLIENT_OBJ) $(CLIENT_COMMON_OBJ)

$(BUILD)/libkjit.a: $(LIBKJIT_OBJ) $(CLI_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libkjit.so: $(LIBKJIT_OBJ) $(CLI_OBJ)
	$(CC) -shared -Wl,-soname,libkjit.so.0 $(LDFLAGS_KJ) $(LDFLAGS) -o $@ $^ $(LIBKJIT_LIBS)

# The public header carries the same KJIT_TYPES_DEFINED block as the
# internal common/kj_types.h (the installed header must stand alone): the
# two are compared here, so a drift fails the build.
KJ_TYPES_BLOCK := sed -n '/^\#ifndef KJIT_TYPES_DEFINED/,/^\#endif \/\* KJIT_TYPES_DEFINED/p'
$(BUILD)/include/kjit.h: include/kjit.h common/kj_types.h
	@mkdir -p $(dir $@)
	@$(KJ_TYPES_BLOCK) include/kjit.h >$@.types && $(KJ_TYPES_BLOCK) common/kj_types.h | cmp -s - $@.types || { \
		rm -f $@.types; echo "include/kjit.h and common/kj_types.h differ between their KJIT_TYPES_DEFINED lines" >&2; exit 1; }
	@rm -f $@.types
	cp $< $@

$(BUILD)/kjit.pc: client/kjit.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# Objects with PREFIX compiled in are rebuilt when PREFIX changes.
$(BUILD)/.prefix: FORCE
	@mkdir -p $(BUILD)
	@echo '$(PREFIX) $(SYSCONFDIR) $(VERSION)' | cmp -s - $@ || echo '$(PREFIX) $(SYSCONFDIR) $(VERSION)' >$@
$(call obj,daemon/main.c) $(call obj,daemon/options.c) $(call obj,daemon/config.c) $(call obj,client/connect.c) \
	$(call obj,client/cli.c) $(BUILD)/kjit.pc: $(BUILD)/.prefix
.PHONY: FORCE
FORCE:

# Each tests/test-NAME.c is one binary linked with every module.
$(BUILD)/tests/%: $(call obj,tests/%.c) $(DAEMON_OBJ) $(REMOTE_OBJ) $(DETECT_OBJ) $(COMPILER_OBJ) $(CACHE_OBJ) $(CLIENT_OBJ) $(CLI_OBJ) \
		$(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_KJ) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) -lvulkan

# Fragments owned by their directories: kernel tests, benchmarks, fuzzing,
# stress, GPU runs.  Each adds its own targets and TEST_EXTRA prerequisites.
-include tests/kernels/Makefile.part
-include bench/Makefile.part
-include tests/fuzz/Makefile.part
-include tests/stress/Makefile.part
-include dropin/Makefile.part

test: $(DEPS_TEST_OK) all $(TESTS) $(TEST_EXTRA)
	@BUILD=$(BUILD) ./tests/run.sh

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan:
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1 test

run: all
	@./scripts/run.sh $(BUILD)

stop: all
	@$(BUILD)/kjit stop || true

# `make install [PREFIX=/usr/local] [DESTDIR=]`: binaries, library, header,
# kjit.pc, man pages, systemd units (system and user, @PREFIX@ substituted),
# the sysusers.d file of the group kjit, the bundled kernels and the Python
# package (install-python, below).  kjit and kjitd have PREFIX compiled in
# (kjit finds kjitd there, kjitd the bundled kernels), so a build made for
# another PREFIX is refused, not installed.
install uninstall: UNITDIR ?= $(PREFIX)/lib/systemd
install uninstall: SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
install uninstall: MANDIR ?= $(PREFIX)/share/man
install uninstall: TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
install uninstall: COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# The Python package (python/kjit) goes inside PREFIX, where a python3 with
# that prefix looks for packages (PREFIX/lib/python3.X/site-packages; the
# .deb passes Debian's /usr/lib/python3/dist-packages); PYTHONDIR= chooses
# another place, PYTHONDIR=none skips it.
PYTHON ?= python3
PYTHONDIR ?= $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("purelib", "posix_prefix", \
	vars={"base": "$(PREFIX)", "platbase": "$(PREFIX)"}))' 2>/dev/null)
# The Python package's C hit path, kjit._hit (python/kjit/_hit.c), built
# for $(PYTHON) beside the library, where kjit._lib looks for it
# (BUILD/python/kjit/; python3-dev has the headers); install-python copies it.
PY_INCLUDE := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_EXT := $(BUILD)/python/kjit/_hit$(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
all: $(PY_EXT)
$(PY_EXT): python/kjit/_hit.c python/kjit/_hitbytes.c python/kjit/_hitcall.c python/kjit/_hit.h include/kjit.h client/getinto.h $(DEPS_OK)
	@test -f '$(PY_INCLUDE)/Python.h' || { echo "$@: no Python.h for $(PYTHON) (install python3-dev: scripts/deps.sh)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_KJ) $(CFLAGS) -Iinclude -Iclient -DKJ_GETINTO_CHECK -isystem '$(PY_INCLUDE)' -shared $(LDFLAGS_KJ) $(LDFLAGS) -o $@ \
		$(filter %.c,$^)
# GPU launches: on a machine with an NVIDIA GPU and its driver (scripts/gpu-run.sh).
test-gpu: all kernels-examples
	@BUILD=$(BUILD) ./scripts/gpu-run.sh test

bench-gpu: all kernels-examples
	@BUILD=$(BUILD) ./scripts/gpu-run.sh bench

install: all
	@tr '\000' '\n' <$(BUILD)/kjit | grep -qxF '$(PREFIX)/bin/kjitd' || { \
		echo "install: $(BUILD)/ was built for another PREFIX; run: make clean && make PREFIX=$(PREFIX) install" >&2; \
		exit 1; }
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/share/kjit $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(UNITDIR)/system $(DESTDIR)$(UNITDIR)/user $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(SYSCONFDIR)/kjit
	install -m 755 $(BUILD)/kjitd-dist $(DESTDIR)$(PREFIX)/bin/kjitd
	install -m 755 $(BUILD)/kjit $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(BUILD)/libkjit.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libkjit.so $(DESTDIR)$(PREFIX)/lib/libkjit.so.0
	ln -sf libkjit.so.0 $(DESTDIR)$(PREFIX)/lib/libkjit.so
	install -m 644 include/kjit.h $(DESTDIR)$(PREFIX)/include/
	install -d $(DESTDIR)$(PREFIX)/lib/kjit/nvrtc $(DESTDIR)$(PREFIX)/lib/kjit/hiprtc
	install -m 755 $(BUILD)/dropin/nvrtc/libnvrtc.so.13 $(DESTDIR)$(PREFIX)/lib/kjit/nvrtc/
	ln -sf libnvrtc.so.13 $(DESTDIR)$(PREFIX)/lib/kjit/nvrtc/libnvrtc.so
	install -m 755 $(BUILD)/dropin/hiprtc/libhiprtc.so.6 $(DESTDIR)$(PREFIX)/lib/kjit/hiprtc/
	ln -sf libhiprtc.so.6 $(DESTDIR)$(PREFIX)/lib/kjit/hiprtc/libhiprtc.so.5
	ln -sf libhiprtc.so.6 $(DESTDIR)$(PREFIX)/lib/kjit/hiprtc/libhiprtc.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' client/kjit.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/kjit.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/kjit.pc
	install -m 644 man/kjit.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/kjitd.8 $(DESTDIR)$(MANDIR)/man8/
	for u in kjitd.socket kjitd.service; do \
		sed -e 's|@PREFIX@|$(PREFIX)|g' systemd/$$u >$(DESTDIR)$(UNITDIR)/system/$$u && \
		sed -e 's|@PREFIX@|$(PREFIX)|g' systemd/user/$$u >$(DESTDIR)$(UNITDIR)/user/$$u && \
		chmod 644 $(DESTDIR)$(UNITDIR)/system/$$u $(DESTDIR)$(UNITDIR)/user/$$u || exit 1; \
	done
	install -m 644 systemd/kjit.sysusers $(DESTDIR)$(SYSUSERSDIR)/kjit.conf
	install -m 644 systemd/kjit.tmpfiles $(DESTDIR)$(TMPFILESDIR)/kjit.conf
	install -m 644 scripts/kjit.bash-completion $(DESTDIR)$(COMPLETIONDIR)/kjit
	@# the daemon's configuration: an admin's edits are kept (the .deb marks it a conffile)
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/kjit/kjitd.conf ]; then echo "install: keeping $(SYSCONFDIR)/kjit/kjitd.conf"; \
	else install -m 644 systemd/kjitd.conf $(DESTDIR)$(SYSCONFDIR)/kjit/kjitd.conf; fi
	@# a root kjitd runs its compile workers as kjit-worker and will not start without it
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && ! getent passwd kjit-worker >/dev/null; then \
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kjit-worker; fi
	rm -rf $(DESTDIR)$(PREFIX)/share/kjit/kernels_src
	cp -R kernels_src $(DESTDIR)$(PREFIX)/share/kjit/
	chmod -R u=rwX,go=rX $(DESTDIR)$(PREFIX)/share/kjit/kernels_src
	@$(MAKE) --no-print-directory install-python
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

# python/kjit into PYTHONDIR, told where the library is installed, with its
# C extension when built (make does; the package runs without it).
.PHONY: install-python uninstall-python
install-python:
	@if [ -z "$(PYTHONDIR)" ] || [ "$(PYTHONDIR)" = none ]; then \
		echo "install: the Python package kjit is not installed (no $(PYTHON), or PYTHONDIR=none)"; \
	else \
		echo "install python/kjit -> $(DESTDIR)$(PYTHONDIR)/kjit" && \
		install -d $(DESTDIR)$(PYTHONDIR)/kjit && \
		install -m 644 python/kjit/*.py python/kjit/py.typed $(DESTDIR)$(PYTHONDIR)/kjit/ && \
		{ [ ! -f '$(PY_EXT)' ] || install -m 644 '$(PY_EXT)' $(DESTDIR)$(PYTHONDIR)/kjit/; } && \
		printf '"""Written by make install: where libkjit is installed."""\nLIBRARY = "%s"\n' \
			'$(PREFIX)/lib/libkjit.so.0' >$(DESTDIR)$(PYTHONDIR)/kjit/_install.py && \
		chmod 644 $(DESTDIR)$(PYTHONDIR)/kjit/_install.py; \
	fi
uninstall-python:
	@if [ -n "$(PYTHONDIR)" ] && [ "$(PYTHONDIR)" != none ]; then rm -rf $(DESTDIR)$(PYTHONDIR)/kjit; fi

# `make uninstall` with the PREFIX and DESTDIR of the install.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/kjitd $(DESTDIR)$(PREFIX)/bin/kjit \
		$(DESTDIR)$(PREFIX)/lib/libkjit.a $(DESTDIR)$(PREFIX)/lib/libkjit.so.0 $(DESTDIR)$(PREFIX)/lib/libkjit.so \
		$(DESTDIR)$(PREFIX)/include/kjit.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/kjit.pc \
		$(DESTDIR)$(MANDIR)/man1/kjit.1 $(DESTDIR)$(MANDIR)/man8/kjitd.8 \
		$(DESTDIR)$(UNITDIR)/system/kjitd.socket $(DESTDIR)$(UNITDIR)/system/kjitd.service \
		$(DESTDIR)$(UNITDIR)/user/kjitd.socket $(DESTDIR)$(UNITDIR)/user/kjitd.service \
		$(DESTDIR)$(SYSUSERSDIR)/kjit.conf $(DESTDIR)$(TMPFILESDIR)/kjit.conf $(DESTDIR)$(COMPLETIONDIR)/kjit
	@# the configuration stays if the admin changed it
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/kjit/kjitd.conf ] && cmp -s systemd/kjitd.conf $(DESTDIR)$(SYSCONFDIR)/kjit/kjitd.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/kjit/kjitd.conf && rmdir $(DESTDIR)$(SYSCONFDIR)/kjit 2>/dev/null || true; fi
	rm -rf $(DESTDIR)$(PREFIX)/share/kjit $(DESTDIR)$(PREFIX)/lib/kjit
	@$(MAKE) --no-print-directory uninstall-python

# `make deb`: the Debian package of the whole system, build-deb/kjit_VERSION_ARCH.deb,
# from a staged `make install PREFIX=/usr` (scripts/mkdeb.sh; docs/packaging.md
# says why dpkg-deb rather than debhelper), checked with lintian when it is
# installed.  Its own build folder: PREFIX is compiled in.
DEB_BUILD ?= build-deb
deb: $(DEPS_OK)
	@./scripts/mkdeb.sh $(DEB_BUILD) $(VERSION)

clean:
	rm -rf $(BUILD) build-asan build-deb

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
