# SPDX-License-Identifier: GPL-2.0
# kvm-gmem: guest_memfd host mmap() for Debian 6.12's KVM, as out-of-tree modules.
#
#   make              build kvm.ko, kvm-amd.ko, kvm-intel.ko for the Debian kernel
#                     matching the installed linux-source-6.12 (KVER=, KDIR= override;
#                     DEBIAN=13: trixie's kernel, from its archive)
#   make qemu-test    build, boot a TCG guest, swap in our modules, run the tests
#   make check        everything CI runs: series check + all guest tiers
#
# Caches (debs, headers, trees, images, kernels) live in $(KVM_GMEM_CACHE),
# outside the clone. Everything else goes to build/.

KVM_GMEM_CACHE ?= $(HOME)/.cache/kvm-gmem
export KVM_GMEM_CACHE

KVER ?=
KDIR ?=
# DEBIAN=12|13: the Debian release whose 6.12 kernel to build and test for,
# by default the build host's (scripts/lib.sh). The test programs are the
# same for both: they always come from the host release's tree.
DEBIAN ?=
export DEBIAN
TIER ?= stock
# DKMS=1 is what dkms.conf runs: modules only, from the installed source
# tarball, nothing written outside this directory, no apt.
DKMS ?=

.PHONY: all deps modules prepare selftests check-series qemu-test qemu-shell qemu-run check bench soak deb check-dkms check-dkms-upgrade clean distclean

all: modules

deps:
	@scripts/install-deps.sh all

prepare:
	@scripts/install-deps.sh $(if $(DKMS),dkms,build)
	@$(if $(DKMS),scripts/check-source-version.sh $(KDIR))
	@KVM_GMEM_MODULES_ONLY=$(DKMS) KVM_GMEM_ALLOW_OFFSETS=$(DKMS) scripts/prepare.sh

modules: prepare
	@KVM_GMEM_MODULES_ONLY=$(DKMS) scripts/build-modules.sh $(KVER) $(KDIR)

selftests: prepare
	@DEBIAN= scripts/prepare.sh
	@scripts/build-selftests.sh
	@scripts/build-mainline-selftests.sh
	@$(MAKE) -s -C tests KVM_GMEM_SRC=$(CURDIR)/build/src OUT=$(CURDIR)/build/tests

check-series:
	@scripts/install-deps.sh build
	@scripts/check-series.sh

# TIER=arm64 builds its own kernel and tests (KVM is built in): no x86 modules.
X86_MODULES := $(if $(filter arm64,$(TIER)),,modules)
X86_TESTS := $(if $(filter arm64,$(TIER)),,selftests)
GUEST_DEPS := $(if $(filter arm64,$(TIER)),arm64,qemu)

qemu-test: $(X86_MODULES) $(X86_TESTS)
	@scripts/install-deps.sh $(GUEST_DEPS)
	@qemu/test-tier.sh $(TIER)

# A root shell in a guest with our modules loaded (TIER=stock|shim|arm64, MODULES=stock).
qemu-shell: $(X86_MODULES)
	@scripts/install-deps.sh $(GUEST_DEPS)
	@TIER=$(TIER) qemu/shell.sh

# Run your own static program in a guest: make qemu-run RUN=./prog ARGS='-v 3'
# (TIER=arm64: an aarch64 static program, e.g. built with aarch64-linux-gnu-gcc -static)
# A program of ours (RUN=build/tests/NAME, build/selftests/...) is built first.
RUN_TESTS := $(if $(filter build/% ./build/% $(CURDIR)/build/%,$(RUN)),$(X86_TESTS))
qemu-run: $(X86_MODULES) $(RUN_TESTS)
	@scripts/install-deps.sh $(GUEST_DEPS)
	@test -n "$(RUN)" || { echo "usage: make qemu-run RUN=<static program> [ARGS='...'] [TIER=shim|arm64] [MODULES=stock]"; exit 2; }
	@TIER=$(TIER) qemu/run-program.sh $(RUN) $(ARGS)

check:
	@scripts/install-deps.sh all
	@scripts/check.sh

# Benchmarks (issue 9), not part of make check: build/results/bench/
bench: modules
	@TIER=$(TIER) scripts/bench.sh

# The exerciser on random seeds for HOURS (default 1), the shim kernel: make soak HOURS=0.25
soak: modules
	@scripts/install-deps.sh qemu
	@TIER=$(if $(filter command line environment,$(origin TIER)),$(TIER),shim) HOURS=$(HOURS) scripts/soak.sh

# The Debian package for dkms (dh-dkms): build/deb/kvm-gmem-dkms_<VERSION>_all.deb
deb:
	@scripts/install-deps.sh deb
	@scripts/build-deb.sh

# The dkms tier alone (not part of make check: see docs/packaging.md): the .deb installed in a
# guest with Debian's kernel, headers and source, dkms builds under TCG.
check-dkms: selftests
	@scripts/install-deps.sh deb
	@scripts/install-deps.sh qemu
	@qemu/test-tier.sh dkms

# A kernel update with the package installed, in a guest booted twice: an
# older 6.12 point release upgraded to the newest (qemu/dkms-upgrade.sh).
check-dkms-upgrade: selftests
	@scripts/install-deps.sh deb
	@scripts/install-deps.sh qemu
	@qemu/dkms-upgrade.sh

clean:
	rm -rf build

# Also drop the caches (only costs time).
distclean: clean
	rm -rf $(KVM_GMEM_CACHE)
