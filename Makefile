# spank-ib: one non-recursive Makefile.
#
#   make                 build/ibprep, build/libibprep.a, build/spank_ib.so
#   make check           everything that runs on this machine: unit tests under
#                        ASan+UBSan, brief fuzzing, integration tests (Slurm
#                        cluster in namespaces, Soft-RoCE VMs), then one
#                        aggregate line "N passed, N failed, N skipped"
#   make check-unit      unit tests only
#   make check-matrix    the plugin's integration tests on Slurm 24.11 and 26.05
#   make bench           benchmarks: figures and ratios
#   make fuzz            each fuzz target for FUZZ_SECONDS
#   make lint            cppcheck + clang-tidy, failing on findings
#   make format-check    clang-format --dry-run --Werror
#   make install         PREFIX, DESTDIR, LIBDIR, LIBEXECDIR, SLURM_PLUGINDIR, SLURM_CONFDIR,
#                        SBINDIR, NHC_SCRIPTDIR, SYSTEMD_UNITDIR, DEFAULTSDIR
#   make deb             a Debian package for this machine's release ($(B)/deb/*.deb)
#   make rpm             an RPM from contrib/rpm/spank-ib.spec ($(B)/rpm/); on
#                        Debian a layout check only (docs/packaging.md)
#   make help            every target, one line each
#
# The version is VERSION below: `ibprep --version`, the Prometheus
# ibprep_build_info, the Debian and the RPM package all take it from here.
# CC, CFLAGS, CPPFLAGS and LDFLAGS are honoured as distributions pass them.
#
# New sources need no edit here: helpers/<part>/*.c is the core library, one
# folder per part with one-way dependencies (LAYERS below; docs/architecture.md),
# helpers/ibprep*.c the command, spank/*.c the plugin, tests/unit/test_*.c one
# cmocka binary each, fuzz/fuzz_*.c one libFuzzer target each.  A unit test
# that needs more objects or flags sets TEST_EXTRA_<name> / TEST_LDFLAGS_<name>
# in a tests/unit/<name>.mk file.

VERSION   := 0.1.0

CC        ?= gcc
CLANG     ?= clang
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
SBINDIR   ?= $(PREFIX)/sbin
LIBDIR    ?= $(PREFIX)/lib
MANDIR    ?= $(PREFIX)/share/man
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
SLURM_PLUGINDIR ?= $(if $(wildcard /usr/lib/$(MULTIARCH)/slurm-wlm),/usr/lib/$(MULTIARCH)/slurm-wlm,$(LIBDIR)/slurm)
SLURM_CONFDIR   ?= /etc/slurm
NHC_SCRIPTDIR   ?= /etc/nhc/scripts
DEFAULTSDIR     ?= /etc/default
SYSTEMD_UNITDIR ?= $(if $(wildcard /usr/lib/systemd/system),/usr/lib/systemd/system,/lib/systemd/system)
DESTDIR   ?=
B         := build
# The plugin's cross-node test child: fixed at build time (the admin may
# name another with the plugstack key test_helper=; never the user).
SPANK_IB_HELPER ?= $(BINDIR)/ibprep
# The system user it runs as (the admin may name another with test_user=);
# the packages create it (contrib/sysusers.d/spank-ib.conf, debian/, the RPM).
SPANK_IB_TEST_USER ?= _spank-ib
SYSUSERSDIR ?= /usr/lib/sysusers.d
# The step's watcher (spank/watcher/), the same way (watch_helper=).
LIBEXECDIR ?= $(PREFIX)/libexec
SPANK_IB_WATCHER ?= $(LIBEXECDIR)/spank-ib-watch

PKGS      := hwloc libibverbs numa libsodium
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lhwloc -libverbs -lnuma -lsodium)
LIBS      := $(PKG_LIBS) -lmunge -lm

WARN      := -Wall -Wextra -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes \
             -Wshadow -Wwrite-strings -Wno-unused-parameter
ifeq ($(CI),true)
WERROR    ?= 1
endif
ifeq ($(WERROR),1)
WARN      += -Werror
endif
# _FORTIFY_SOURCE only when the distribution's flags do not set their own level
HARDEN     = $(if $(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),,-D_FORTIFY_SOURCE=2) \
             -fstack-protector-strong -fPIC
BASEFLAGS := -std=gnu11 -g -D_GNU_SOURCE -Iinclude $(PKG_CFLAGS) -MMD -MP
# not in BASEFLAGS: lint passes those inside a quoted sh -c (it sees "unknown")
VERFLAGS  := -DIBPREP_VERSION='"$(VERSION)"'
CFLAGS    ?= -O2
CPPFLAGS  ?=
LDFLAGS   ?=
ALL_CFLAGS = $(CPPFLAGS) $(BASEFLAGS) $(VERFLAGS) $(WARN) $(HARDEN) $(CFLAGS)
LDHARDEN  := -Wl,-z,relro,-z,now,-z,noexecstack
SAN       := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_CFLAGS = $(CPPFLAGS) $(BASEFLAGS) $(VERFLAGS) $(WARN) -fPIC -O1 $(SAN)

# The library's parts, lowest first: a part may use the parts before it and
# never one after it, and no two files call each other in a loop (make lint
# checks it: tests/lib/check-layers.py).
LAYERS     := core node place rdmatest fabric
CMD_SRCS   := $(wildcard helpers/ibprep*.c)
LIB_SRCS   := $(foreach l,$(LAYERS),$(wildcard helpers/$(l)/*.c))
SPANK_SRCS := $(wildcard spank/*.c)
# The watcher: its main, and the plugin's Slurm API and requeue files (no spank_* calls)
WATCH_SRCS := $(wildcard spank/watcher/*.c)
TEST_SRCS  := $(wildcard tests/unit/test_*.c)
TEST_SUPPORT_SRCS := $(wildcard tests/unit/support/*.c)
FUZZ_SRCS  := $(wildcard fuzz/fuzz_*.c)

LIB_OBJS   := $(LIB_SRCS:%.c=$(B)/obj/%.o)
CMD_OBJS   := $(CMD_SRCS:%.c=$(B)/obj/%.o)
SPANK_OBJS := $(SPANK_SRCS:%.c=$(B)/obj/%.o)
WATCH_OBJS := $(WATCH_SRCS:%.c=$(B)/obj/%.o) $(B)/obj/spank/ib_slurmapi.o $(B)/obj/spank/ib_requeue.o
SAN_LIB_OBJS   := $(LIB_SRCS:%.c=$(B)/asan/%.o)
SAN_SPANK_OBJS := $(SPANK_SRCS:%.c=$(B)/asan/%.o)
SAN_CMD_OBJS   := $(filter-out $(B)/asan/helpers/ibprep.o,$(CMD_SRCS:%.c=$(B)/asan/%.o))
SAN_SUPPORT_OBJS := $(TEST_SUPPORT_SRCS:%.c=$(B)/asan/%.o)
TEST_BINS  := $(TEST_SRCS:tests/unit/%.c=$(B)/tests/%)
FUZZ_BINS  := $(FUZZ_SRCS:fuzz/%.c=$(B)/fuzz/%)

HAVE_SPANK := $(wildcard /usr/include/slurm/spank.h)
TARGETS    := $(B)/libibprep.a $(B)/ibprep $(if $(HAVE_SPANK),$(if $(SPANK_SRCS),$(B)/spank_ib.so $(B)/spank-ib-watch))

-include $(wildcard tests/unit/*.mk)

.PHONY: all check check-unit check-fuzz check-integration check-vm check-matrix \
        bench fuzz lint format format-check install uninstall clean deps asan deb rpm help

all: $(TARGETS)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(EXTRA_DEFS) -c $< -o $@

$(B)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(EXTRA_DEFS) -c $< -o $@

$(B)/obj/spank/ib_child.o $(B)/asan/spank/ib_child.o: EXTRA_DEFS = -DSPANK_IB_HELPER='"$(SPANK_IB_HELPER)"' \
	-DSPANK_IB_TEST_USER='"$(SPANK_IB_TEST_USER)"'
$(B)/obj/spank/ib_slurmconf.o $(B)/asan/spank/ib_slurmconf.o: EXTRA_DEFS = -DSPANK_IB_SLURM_CONF='"$(SLURM_CONFDIR)/slurm.conf"'
$(B)/obj/spank/ib_watch.o $(B)/asan/spank/ib_watch.o: EXTRA_DEFS = -DSPANK_IB_WATCHER='"$(SPANK_IB_WATCHER)"'

# The paths compiled into the plugin change with PREFIX and friends: a stamp
# rewritten only when they do, so `make install PREFIX=/usr` after a plain
# `make` (make deb, the RPM's %install) rebuilds the objects that hold them.
PATHS_STAMP := $(B)/paths.stamp
PATHS_TEXT  := $(SPANK_IB_HELPER) $(SPANK_IB_TEST_USER) $(SPANK_IB_WATCHER) $(SLURM_CONFDIR)
$(PATHS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(PATHS_TEXT)' | cmp -s - $@ 2>/dev/null || echo '$(PATHS_TEXT)' > $@
$(foreach o,ib_child ib_slurmconf ib_watch,$(B)/obj/spank/$(o).o $(B)/asan/spank/$(o).o): $(PATHS_STAMP)
FORCE:

$(B)/libibprep.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/asan/libibprep.a: $(SAN_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(B)/ibprep: $(CMD_OBJS) $(B)/libibprep.a
	$(CC) $(CFLAGS) $(LDHARDEN) $(LDFLAGS) -o $@ $(CMD_OBJS) $(B)/libibprep.a $(LIBS)

# ASan+UBSan build of the command, used by the integration tests of check.
$(B)/asan/ibprep: $(CMD_SRCS:%.c=$(B)/asan/%.o) $(B)/asan/libibprep.a
	$(CC) $(SAN) -o $@ $^ $(LIBS)

asan: $(B)/asan/ibprep $(TEST_BINS)

# The plugin: only plugin_* and slurm_spank_* (and spank_options) are exported.
$(B)/spank_ib.so: $(SPANK_OBJS) $(B)/libibprep.a spank/spank_ib.lds
	$(CC) $(CFLAGS) -shared $(LDHARDEN) $(LDFLAGS) -Wl,--version-script=spank/spank_ib.lds -o $@ \
		$(SPANK_OBJS) $(B)/libibprep.a $(LIBS)

# test_seal checks seal.c (libsodium) against OpenSSL, an independent implementation.
TEST_LDFLAGS_test_seal := -lcrypto

# One cmocka binary per test file, against the sanitized library; test_spank*
# tests also get the plugin's objects (linked with the fake spank_* calls).
$(B)/tests/%: tests/unit/%.c $(B)/asan/libibprep.a $(SAN_SUPPORT_OBJS) $(SAN_SPANK_OBJS) $(SAN_CMD_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -Itests/unit -o $@ $< $(SAN_SUPPORT_OBJS) \
		$(if $(filter test_spank%,$*),$(SAN_SPANK_OBJS)) $(if $(filter test_cmd%,$*),$(SAN_CMD_OBJS)) \
		$(TEST_EXTRA_$*) $(B)/asan/libibprep.a $(TEST_LDFLAGS_$*) -lcmocka $(LIBS)

# ThreadSanitizer copy of the library and of the cross-node test's suite
# (the acceptor, the link workers and the step-wide sum's thread share one
# run: rdmatest_conn.h and each part's header say which fields are whose);
# check-unit runs it.  A race makes the suite exit 66, which run-suite.sh
# reports as a failure.
TSAN        := -fsanitize=thread -fno-omit-frame-pointer
TSAN_CFLAGS  = $(CPPFLAGS) $(BASEFLAGS) $(VERFLAGS) $(WARN) -fPIC -O1 $(TSAN)
TSAN_LIB_OBJS     := $(LIB_SRCS:%.c=$(B)/tsan/%.o)
TSAN_SUPPORT_OBJS := $(TEST_SUPPORT_SRCS:%.c=$(B)/tsan/%.o)
TSAN_TEST_BINS    := $(B)/tsan/tests/test_rdmatest_plan $(B)/tsan/tests/test_rdmatest_rails \
                     $(B)/tsan/tests/test_results_log

$(B)/tsan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) $(EXTRA_DEFS) -c $< -o $@

$(B)/tsan/libibprep.a: $(TSAN_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(B)/tsan/tests/%: tests/unit/%.c $(B)/tsan/libibprep.a $(TSAN_SUPPORT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -Itests/unit -o $@ $< $(TSAN_SUPPORT_OBJS) \
		$(B)/tsan/libibprep.a $(TEST_LDFLAGS_$*) -lcmocka $(LIBS)

# The step's watcher: a program of its own, run by the plugin as root.  It
# loads Slurm's library at run time (the one slurmstepd runs): no -lslurm.
$(B)/spank-ib-watch: $(WATCH_OBJS) $(B)/libibprep.a
	$(CC) $(CFLAGS) $(LDHARDEN) $(LDFLAGS) -Wl,--as-needed -o $@ $(WATCH_OBJS) \
		$(B)/libibprep.a $(LIBS) -ldl

# Objects the test binaries' pattern rules pull in are not intermediates to
# delete after the link (make would rebuild them every time).
.SECONDARY: $(SAN_SUPPORT_OBJS) $(SAN_SPANK_OBJS) $(SAN_CMD_OBJS) $(TSAN_SUPPORT_OBJS)

# libFuzzer targets, built with clang against one fuzz-instrumented copy of
# the library (compiled once, not once per target).
FUZZ_CFLAGS = -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude $(PKG_CFLAGS) -MMD -MP $(VERFLAGS)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(B)/fuzzobj/%.o)

$(B)/fuzzobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(B)/fuzzobj/libibprep.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(B)/fuzz/%: fuzz/%.c $(B)/fuzzobj/libibprep.a
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< \
		$(B)/fuzzobj/libibprep.a $(LIBS)

# The plugin's own file readers (spank/), built into their target; only
# where Slurm's spank.h is (the plugin's sources include it).
FUZZ_SPANK_SRCS := spank/ib_slurmconf.c spank/ib_cache.c
ifeq ($(HAVE_SPANK),)
FUZZ_BINS := $(filter-out $(B)/fuzz/fuzz_spank_parsers,$(FUZZ_BINS))
endif
$(B)/fuzz/fuzz_spank_parsers: fuzz/fuzz_spank_parsers.c $(FUZZ_SPANK_SRCS) $(B)/fuzzobj/libibprep.a
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_SPANK_SRCS) \
		$(B)/fuzzobj/libibprep.a $(LIBS)

RESULTS := $(B)/results
FUZZ_SECONDS ?= 60

check-unit: $(TEST_BINS) $(TSAN_TEST_BINS) $(B)/asan/ibprep $(B)/ibprep
	@mkdir -p $(RESULTS)
	@for t in $(TEST_BINS); do \
		tests/lib/run-suite.sh unit-$$(basename $$t) $$t || true; \
	done
	@for t in $(TSAN_TEST_BINS); do \
		tests/lib/run-suite.sh unit-tsan-$$(basename $$t) $$t || true; \
	done

check-fuzz: $(FUZZ_BINS)
	@mkdir -p $(RESULTS)
	@for f in $(FUZZ_BINS); do \
		tests/lib/run-fuzz.sh $$f $(FUZZ_SECONDS) || true; \
	done

fuzz: check-fuzz

check-integration: all $(B)/asan/ibprep
	@mkdir -p $(RESULTS)
	@for t in $(sort $(wildcard tests/integration/test_*.sh)); do \
		tests/lib/run-suite.sh integ-$$(basename $$t .sh) bash $$t || true; \
	done

# The VM suites find the build through IBP_BUILD (the guests see the repo).
check-vm: all $(B)/tests/test_transport_verbs
	@mkdir -p $(RESULTS)
	@for t in $(sort $(wildcard tests/vm/test_*.sh)); do \
		IBP_BUILD=$(B) tests/lib/run-suite.sh vm-$$(basename $$t .sh) bash $$t || true; \
	done

check-matrix: all
	@mkdir -p $(RESULTS)
	@for t in $(sort $(wildcard tests/matrix/test_*.sh)); do \
		tests/lib/run-suite.sh matrix-$$(basename $$t .sh) bash $$t || true; \
	done

# check: everything that can run here; the last line is the aggregate.
check:
	@rm -rf $(RESULTS)
	@$(MAKE) --no-print-directory check-unit
	@$(MAKE) --no-print-directory check-fuzz FUZZ_SECONDS=$(if $(filter true,$(CI)),5,10)
	@$(MAKE) --no-print-directory check-integration
	@$(MAKE) --no-print-directory check-vm
	@tests/lib/tap-summary.sh $(RESULTS)

bench: all
	@for b in $(sort $(wildcard bench/bench_*.sh)); do IBP_BUILD=$(B) bash $$b || exit 1; done

LINT_SRCS := $(LIB_SRCS) $(CMD_SRCS) $(SPANK_SRCS) $(WATCH_SRCS)
# The arrows between the parts are read off what the build saw (the compiler's
# dependency files and the objects' symbols), so lint builds the objects first.
lint: $(LIB_OBJS) $(CMD_OBJS) $(SPANK_OBJS) $(WATCH_OBJS)
	python3 tests/lib/check-layers.py $(B)/obj $(LAYERS)
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --std=c11 -D__GNUC__ -Iinclude $(LINT_SRCS)
	printf '%s\n' $(LINT_SRCS) | xargs -P2 -n4 sh -c 'clang-tidy --quiet "$$@" -- $(filter-out -MMD -MP,$(BASEFLAGS)) -Wno-unknown-warning-option' clang-tidy

# Every C source and header git tracks, and the untracked ones it does not
# ignore (a new file is checked before it is added); outside a git checkout,
# every one below the project but the ignored trees.
FORMAT_SRCS = $(sort $(wildcard $(shell git ls-files --cached --others --exclude-standard \
	'*.c' '*.h' 2>/dev/null || find . \( -path ./.git -o -path './build*' -o -path ./tmp \) \
	-prune -o -type f \( -name '*.c' -o -name '*.h' \) -print)))
format:
	clang-format -i $(FORMAT_SRCS)
format-check:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

deps:
	bash contrib/install-deps.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SLURM_PLUGINDIR) $(DESTDIR)$(SLURM_CONFDIR)/plugstack.conf.d
	install -m 0755 $(B)/ibprep $(DESTDIR)$(BINDIR)/ibprep
	$(if $(wildcard $(B)/spank_ib.so),install -m 0755 $(B)/spank_ib.so $(DESTDIR)$(SLURM_PLUGINDIR)/spank_ib.so)
	$(if $(wildcard $(B)/spank-ib-watch),install -D -m 0755 $(B)/spank-ib-watch $(DESTDIR)$(SPANK_IB_WATCHER))
	$(if $(wildcard contrib/spank_ib.conf),test -e $(DESTDIR)$(SLURM_CONFDIR)/plugstack.conf.d/spank_ib.conf || \
		install -m 0644 contrib/spank_ib.conf $(DESTDIR)$(SLURM_CONFDIR)/plugstack.conf.d/spank_ib.conf)
	$(foreach m,$(wildcard man/*.1),install -D -m 0644 $(m) $(DESTDIR)$(MANDIR)/man1/$(notdir $(m));)
	$(foreach m,$(wildcard man/*.5),install -D -m 0644 $(m) $(DESTDIR)$(MANDIR)/man5/$(notdir $(m));)
	$(foreach m,$(wildcard man/*.8),install -D -m 0644 $(m) $(DESTDIR)$(MANDIR)/man8/$(notdir $(m));)
	install -D -m 0644 contrib/nhc/spank_ib.nhc $(DESTDIR)$(NHC_SCRIPTDIR)/spank_ib.nhc
	install -d $(DESTDIR)$(SYSTEMD_UNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g; s|@DEFAULTSDIR@|$(DEFAULTSDIR)|g' \
		contrib/systemd/spank-ib-textfile.service.in > $(DESTDIR)$(SYSTEMD_UNITDIR)/spank-ib-textfile.service
	install -m 0644 contrib/systemd/spank-ib-textfile.timer $(DESTDIR)$(SYSTEMD_UNITDIR)/
	install -d $(DESTDIR)$(SBINDIR)
	sed 's|@BINDIR@|$(BINDIR)|g; s|@SBINDIR@|$(SBINDIR)|g; s|@DEFAULTSDIR@|$(DEFAULTSDIR)|g' \
		contrib/slurm/spank-ib-healthcheck.in > $(DESTDIR)$(SBINDIR)/spank-ib-healthcheck
	chmod 0755 $(DESTDIR)$(SBINDIR)/spank-ib-healthcheck
	install -D -m 0644 contrib/sysusers.d/spank-ib.conf $(DESTDIR)$(SYSUSERSDIR)/spank-ib.conf

# Debian package of ibprep, the plugin, the snippet and the man pages, built
# for the Debian and Slurm release this runs on (contrib/deb/build.sh says how).
deb:
	+IBP_VERSION=$(VERSION) bash contrib/deb/build.sh $(B)

# RPM of the same files (contrib/rpm/spank-ib.spec, RHEL layout), built from a
# tarball of this tree with rpmbuild.  On a Debian host this is a layout check
# (rpmbuild --nodeps, Debian's paths); sites build the real one with mock or
# koji on their RHEL release (docs/packaging.md).
rpm:
	+IBP_VERSION=$(VERSION) bash contrib/rpm/build.sh $(B)

help:
	@echo 'make [TARGET] [VAR=VALUE ...]   (spank-ib $(VERSION))'
	@echo '  all               build/ibprep, build/libibprep.a, build/spank_ib.so (default)'
	@echo '  check             unit, fuzz, integration and VM suites; one aggregate line'
	@echo '  check-unit        cmocka unit tests under ASan+UBSan (the cross-node test suite under TSan too)'
	@echo '  check-fuzz, fuzz  each fuzz target for FUZZ_SECONDS (default 60)'
	@echo '  check-integration tests/integration/test_*.sh (Slurm cluster in namespaces)'
	@echo '  check-vm          tests/vm/test_*.sh (Soft-RoCE VMs under qemu)'
	@echo '  check-matrix      the plugin suites on the other Slurm releases (chroots)'
	@echo '  asan              the ASan+UBSan ibprep and the unit test binaries'
	@echo '  bench             benchmarks: figures and ratios (bench/README.md)'
	@echo '  lint              cppcheck + clang-tidy, failing on findings'
	@echo '  format            clang-format -i every C file (tracked or not ignored)'
	@echo '  format-check      clang-format --dry-run --Werror'
	@echo '  install           PREFIX, DESTDIR, BINDIR, LIBDIR, MANDIR, SLURM_PLUGINDIR, SLURM_CONFDIR'
	@echo '  uninstall         remove what install put there'
	@echo '  deb               Debian package for this machine (build/deb/*.deb)'
	@echo '  rpm               RPM from contrib/rpm/spank-ib.spec (build/rpm/)'
	@echo '  deps              install the build and test packages (contrib/install-deps.sh)'
	@echo '  clean             remove build/'
	@echo '  help              this list'
	@echo 'variables: CC CFLAGS CPPFLAGS LDFLAGS WERROR=1 VERSION=$(VERSION)'

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ibprep $(DESTDIR)$(SLURM_PLUGINDIR)/spank_ib.so
	rm -f $(DESTDIR)$(SPANK_IB_WATCHER)
	rm -f $(DESTDIR)$(SLURM_CONFDIR)/plugstack.conf.d/spank_ib.conf
	rm -f $(DESTDIR)$(MANDIR)/man1/ibprep.1 $(DESTDIR)$(MANDIR)/man8/spank_ib.8
	rm -f $(DESTDIR)$(MANDIR)/man8/spank-ib-healthcheck.8 $(DESTDIR)$(SYSUSERSDIR)/spank-ib.conf
	rm -f $(DESTDIR)$(MANDIR)/man5/spank_ib.conf.5
	rm -f $(DESTDIR)$(NHC_SCRIPTDIR)/spank_ib.nhc $(DESTDIR)$(SBINDIR)/spank-ib-healthcheck
	rm -f $(DESTDIR)$(SYSTEMD_UNITDIR)/spank-ib-textfile.service $(DESTDIR)$(SYSTEMD_UNITDIR)/spank-ib-textfile.timer

clean:
	rm -rf $(B)

# (not the RPM's build tree under $(B)/rpm, and never a directory such as plugstack.conf.d)
-include $(shell find $(B) -path '$(B)/rpm' -prune -o -type f -name '*.d' -print 2>/dev/null)
