#!/bin/bash
# Runs inside the test guest as /share/run.sh (started by qemu/guest-init).
# Loads KVM, runs the tests named in /share/tests/list and leaves TAP results
# and the guest's dmesg in /share/results/. Exit status 0 once the run went
# through, whatever the tests said: the host judges their TAP (qemu/run-tier.sh).
#
# Share layout (prepared by qemu/run-tier.sh):
#   /share/modules/BUILTIN         KVM is built into the kernel (the arm64 guest), or
#   /share/modules/USE_STOCK       load Debian's own kvm/kvm_amd (modprobe), or
#   /share/modules/kvm.ko, kvm-amd.ko [, kvm-intel.ko]   our modules (insmod), or
#   /share/modules/kvm-gmem-dkms_*.deb   our package: dpkg -i, dkms builds and
#                                  installs, modprobe loads it; removed after the
#                                  tests (dkms-remove.tap) and the stock kvm checked
#   /share/tests/kvm-gmem-dkms_*.deb   (dkms mode) the same package at a higher
#                                  version: installed over the first before kvm
#                                  is loaded (the upgrade path)
#   /share/tests/list              one test per line: NAME [TIMEOUT_SECONDS [exit-status] [PARAM=VALUE...] [-- ARG...]]
#                                  (PARAMs: kvm module parameters set for that test only;
#                                  exit-status: the program prints no TAP, its exit status
#                                  is its one result)
#   /share/tests/NAME              the test executables
#   /share/tests/timeout           optional default per-test timeout (300 s)
#   /share/results/                written here: modules.tap, NAME.tap, dmesg.txt,
#                                  dkms-*.log (dkms mode)
set -euo pipefail

share=/share
results=$share/results
mods=$share/modules
mkdir -p "$results"

# Builtins where a program would do: under TCG each program started costs
# ~0.1 s on Debian's kernel and 0.2-1 s on the KASAN kernel (kmod's tools
# the most: they load libcrypto), and every guest boot pays for these.

# tap_counts FILE: "PASS FAIL SKIP" counts of its top-level TAP result lines.
tap_counts() {
	local line p=0 f=0 s=0 skip='#[[:space:]]*[sS][kK][iI][pP]'
	while IFS= read -r line || [[ -n "$line" ]]; do
		if [[ "$line" =~ ^not\ ok([[:space:]]|$) ]]; then
			f=$((f + 1))
		elif [[ "$line" =~ ^ok([[:space:]]|$) ]]; then
			if [[ "$line" =~ $skip ]]; then s=$((s + 1)); else p=$((p + 1)); fi
		fi
	done <"$1"
	echo "$p $f $s"
}

# has_result FILE: it has a TAP result line (ok / not ok).
has_result() {
	local line
	while IFS= read -r line || [[ -n "$line" ]]; do
		[[ ! "$line" =~ ^(not\ )?ok([[:space:]]|$) ]] || return 0
	done <"$1"
	return 1
}

# insmod_file FILE: the static busybox's insmod where the image has one.
insmod_file() {
	if [[ -x /bin/busybox ]]; then /bin/busybox insmod "$1"; else insmod "$1"; fi
}

progress() { printf '[%4ds] run.sh: %s\n' "$SECONDS" "$*"; }

# --- Load KVM, recorded as TAP in modules.tap -----------------------------
tap=$results/modules.tap
n=0
: >"$tap"
tap_line() { n=$((n + 1)); echo "$1 $n - $2" >>"$tap"; progress "$1 - $2"; }
note() { echo "# $*" >>"$tap"; progress "$*"; }

cpu_flags=	# x86 only
while IFS= read -r line; do
	[[ "$line" != flags* ]] || { cpu_flags=$line; break; }
done </proc/cpuinfo
has_flag() { [[ " ${cpu_flags#*:} " == *" $1 "* ]]; }

# load_ours FILE: insmod one of our modules after modprobing the Debian
# modules it depends on (irqbypass, ccp, ...) that are not loaded yet; kvm
# itself comes from us. FILE.depends: modinfo's answer, read on the host.
load_ours() {
	local file=$1 dep deps
	if [[ -f "$file.depends" ]]; then read -r deps <"$file.depends" || true
	else deps=$(modinfo -F depends "$file"); fi
	for dep in ${deps//,/ }; do
		[[ "$dep" == kvm || -d /sys/module/$dep ]] || modprobe "$dep"
	done
	insmod_file "$file"
}

# dkms mode: the package to install, the one to upgrade to, and the MOK key
# we make for dkms to sign with. dkms_version: the version installed.
first_file() { if [[ -f "$1" ]]; then echo "$1"; fi; }
dkms_deb=$(first_file "$mods"/kvm-gmem-dkms_*.deb)
dkms_upgrade_deb=$(first_file "$share"/tests/kvm-gmem-dkms_*.deb)
dkms_key_cn="kvm-gmem test dkms key"
dkms_version=

# load_vendor NAME (kvm_amd or kvm_intel)
load_vendor() {
	local name=$1 file=$mods/${1//_/-}.ko
	if [[ -f "$mods/USE_STOCK" || -n "$dkms_deb" ]]; then
		modprobe "$name"
	else
		[[ -f "$file" ]] || { echo "$file is missing"; return 1; }
		load_ours "$file"
	fi
}

# unload_kvm: the vendor modules and kvm out, where loaded.
unload_kvm() {
	local m
	for m in kvm_amd kvm_intel kvm; do
		[[ ! -d /sys/module/$m ]] || modprobe -r "$m" || true
	done
}
unload_kvm

# modprobe_package_kvm VERSION: modprobe kvm, which must be the package's.
modprobe_package_kvm() {
	local have=none
	if modprobe kvm; then tap_line ok "modprobe kvm"; else tap_line "not ok" "modprobe kvm"; fi
	[[ ! -f /sys/module/kvm/version ]] || read -r have </sys/module/kvm/version
	if [[ "$have" == "$1" ]]; then
		tap_line ok "loaded kvm is the package's (version $have)"
	else
		tap_line "not ok" "loaded kvm version $have, expected $1"
	fi
}

# read_dkms_status: "dkms status kvm-gmem" into $status, noted in the TAP.
# dkms 3.0.10 runs readelf on the headers' vmlinux, which has no .comment:
# that noise is left out.
read_dkms_status() {
	status=$(dkms status kvm-gmem 2>&1 | grep -v '^readelf: Warning' || true)
	note "dkms status: ${status:-(empty)}"
}

# dkms_version_of DEB: the version dkms knows the package by (dkms.conf's
# PACKAGE_VERSION; the Debian package's own is VERSION+deb13 for trixie).
dkms_version_of() {
	dpkg-deb --fsys-tarfile "$1" | tar -xO --wildcards './usr/src/kvm-gmem-*/dkms.conf' |
		sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p'
}

# dkms_install DEB: install our package and check that dkms built, signed and
# installed it for the running kernel, where modprobe prefers it; load kvm.
dkms_install() {
	local deb=$1 version kver t0 status file signer
	kver=$(uname -r)
	version=$(dkms_version_of "$deb")
	note "modules: $(basename "$deb"), built by dkms in this guest for $kver"
	# Our own MOK key: dkms signs with /var/lib/dkms/mok.{key,pub} when they exist.
	openssl req -new -x509 -nodes -days 2 -subj "/CN=$dkms_key_cn" -newkey rsa:2048 \
		-keyout /var/lib/dkms/mok.key -outform DER -out /var/lib/dkms/mok.pub 2>/dev/null ||
		note "could not make a MOK key: the signer check will fail"
	progress "dpkg -i $(basename "$deb"): dkms builds the modules now (slow under TCG)"
	t0=$SECONDS
	# On the console too: the serial log shows how far dkms got.
	if DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" 2>&1 | tee "$results/dkms-install.log"; then
		tap_line ok "dpkg -i $(basename "$deb")"
	else
		tap_line "not ok" "dpkg -i $(basename "$deb") (see dkms-install.log)"
	fi
	echo "# time: dkms build + install (dpkg -i): $((SECONDS - t0)) s" >>"$tap"
	progress "dpkg -i took $((SECONDS - t0)) s"
	# The make log: kept by dkms after a build, left in the build dir on failure.
	cp /var/lib/dkms/kvm-gmem/"$version"/"$kver"/*/log/make.log "$results/dkms-make.log" 2>/dev/null ||
		cp /var/lib/dkms/kvm-gmem/"$version"/build/make.log "$results/dkms-make.log" 2>/dev/null || true

	read_dkms_status
	if grep -q "^kvm-gmem/$version, $kver, [^:]*: installed" <<<"$status"; then
		tap_line ok "dkms status: kvm-gmem/$version installed for $kver"
	else
		tap_line "not ok" "dkms status: kvm-gmem/$version not installed for $kver"
	fi
	# depmod must resolve kvm to dkms's copy, not the in-tree one.
	file=$(modinfo -F filename kvm 2>/dev/null || true)
	if [[ "$file" == /lib/modules/$kver/updates/dkms/* ]]; then
		tap_line ok "modprobe resolves kvm to $file"
	else
		tap_line "not ok" "modprobe resolves kvm to ${file:-nothing}, not updates/dkms/"
	fi
	signer=$(modinfo -F signer kvm 2>/dev/null || true)
	if [[ "$signer" == "$dkms_key_cn" ]]; then
		tap_line ok "kvm.ko is signed by the dkms MOK key ($signer)"
	else
		tap_line "not ok" "kvm.ko signer '${signer:-none}', expected '$dkms_key_cn'"
	fi
	dkms_version=$version
	# Before anything is loaded, while the build has both vCPUs (below).
	[[ -z "$dkms_upgrade_deb" ]] || dkms_upgrade "$dkms_upgrade_deb"
	version=$dkms_version
	# The build above had both vCPUs.
	offline_other_cpus_under_mttcg
	modprobe_package_kvm "$version"
}

# dkms_upgrade DEB: install the package at a higher version over the one
# installed: dkms must remove the old modules and build and install the new
# ones, and modprobe must find those. Sets dkms_version.
dkms_upgrade() {
	local deb=$1 old=$dkms_version new kver t0 status file have want
	kver=$(uname -r)
	new=$(dkms_version_of "$deb")
	have=$(modinfo -F version kvm 2>/dev/null || true)
	note "upgrade: $old -> $new (modprobe's kvm is version ${have:-none})"
	progress "dpkg -i $(basename "$deb"): the upgrade, dkms builds again"
	t0=$SECONDS
	if DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$results/dkms-upgrade.log" 2>&1; then
		tap_line ok "upgrade: dpkg -i $(basename "$deb") over $old"
	else
		tap_line "not ok" "upgrade: dpkg -i $(basename "$deb") over $old (see dkms-upgrade.log)"
	fi
	echo "# time: upgrade, dkms build + install (dpkg -i): $((SECONDS - t0)) s" >>"$tap"
	progress "the upgrade took $((SECONDS - t0)) s"
	read_dkms_status
	if grep -q "^kvm-gmem/$new, $kver, [^:]*: installed" <<<"$status" &&
	   ! grep -q "^kvm-gmem/$old[,:]" <<<"$status"; then
		tap_line ok "upgrade: dkms status has kvm-gmem/$new installed and no $old"
	else
		tap_line "not ok" "upgrade: dkms status, want only kvm-gmem/$new installed: ${status//$'\n'/; }"
	fi
	file=$(modinfo -F filename kvm 2>/dev/null || true)
	have=$(modinfo -F version kvm 2>/dev/null || true)
	if [[ "$file" == /lib/modules/$kver/updates/dkms/* && "$have" == "$new" ]]; then
		tap_line ok "upgrade: modprobe resolves kvm to $file, version $have"
	else
		tap_line "not ok" "upgrade: modprobe resolves kvm to ${file:-nothing}, version ${have:-none}, want $new in updates/dkms/"
	fi
	# The Debian version is the package's own (DEBIAN=13: VERSION+deb13).
	want=$(dpkg-deb -f "$deb" Version)
	have=$(dpkg-query -W -f '${Version}' kvm-gmem-dkms 2>/dev/null || true)
	note "dpkg: kvm-gmem-dkms ${have:-not installed}, the package's version $want"
	if [[ "$have" == "$want" ]]; then
		tap_line ok "upgrade: dpkg has kvm-gmem-dkms at the upgrade's version"
	else
		tap_line "not ok" "upgrade: dpkg has kvm-gmem-dkms at the upgrade's version"
	fi
	dkms_version=$new
}

# dkms_remove: purge the package, check dkms and the modules tree forget it
# and that modprobe loads Debian's kvm again. TAP in dkms-remove.tap.
dkms_remove() {
	local kver status file left t0
	kver=$(uname -r)
	tap=$results/dkms-remove.tap
	n=0
	: >"$tap"
	unload_kvm
	if [[ ! -d /sys/module/kvm ]]; then tap_line ok "kvm unloaded"; else tap_line "not ok" "kvm still loaded"; fi
	t0=$SECONDS
	# What apt remove does; the purge (conffiles only) comes at the end.
	if DEBIAN_FRONTEND=noninteractive dpkg --remove kvm-gmem-dkms >"$results/dkms-remove.log" 2>&1; then
		tap_line ok "dpkg --remove kvm-gmem-dkms"
	else
		tap_line "not ok" "dpkg --remove kvm-gmem-dkms (see dkms-remove.log)"
	fi
	echo "# time: dkms remove (dpkg --remove): $((SECONDS - t0)) s" >>"$tap"
	status=$(dkms status kvm-gmem 2>&1 | grep -v '^readelf: Warning' || true)
	if [[ -z "$status" ]]; then tap_line ok "dkms status: empty"; else tap_line "not ok" "dkms status after removal: $status"; fi
	# dkms may have removed updates/ altogether.
	left=$(find "/lib/modules/$kver/updates" -name 'kvm*' 2>/dev/null || true)
	left=${left//$'\n'/ }
	if [[ -z "$left" ]]; then tap_line ok "no kvm modules left in updates/"; else tap_line "not ok" "left in updates/: $left"; fi
	file=$(modinfo -F filename kvm 2>/dev/null || true)
	if [[ "$file" == /lib/modules/$kver/kernel/* ]]; then
		tap_line ok "modprobe resolves kvm to the stock $file"
	else
		tap_line "not ok" "modprobe resolves kvm to ${file:-nothing}, not kernel/"
	fi
	if has_flag svm; then
		if modprobe kvm_amd; then tap_line ok "modprobe kvm_amd (stock)"; else tap_line "not ok" "modprobe kvm_amd (stock)"; fi
	elif modprobe kvm; then tap_line ok "modprobe kvm (stock)"; else tap_line "not ok" "modprobe kvm (stock)"; fi
	# Debian's modules carry no MODULE_VERSION.
	if [[ -d /sys/module/kvm && ! -f /sys/module/kvm/version ]]; then
		tap_line ok "stock kvm loaded (no /sys/module/kvm/version)"
	else
		tap_line "not ok" "after removal kvm is $( [[ -d /sys/module/kvm ]] && echo "version $(cat /sys/module/kvm/version)" || echo "not loaded")"
	fi
	if DEBIAN_FRONTEND=noninteractive dpkg --purge kvm-gmem-dkms >>"$results/dkms-remove.log" 2>&1 &&
	   ! dpkg-query -W kvm-gmem-dkms >/dev/null 2>&1; then
		tap_line ok "dpkg --purge kvm-gmem-dkms: no trace left in dpkg"
	else
		tap_line "not ok" "dpkg --purge kvm-gmem-dkms (see dkms-remove.log)"
	fi
	echo "1..$n" >>"$tap"
}

# offline_other_cpus_under_mttcg: under multi-threaded TCG
# (kvm_gmem.mttcg on the command line: the dkms tier, the boot tiers) the
# other vCPUs go offline before anything patches kernel text: QEMU 7.2 can
# run stale code on another vCPU after a text_poke_bp() (a spurious "Oops:
# int3"), and loading kvm flips static keys.
offline_other_cpus_under_mttcg() {
	local cpu
	grep -qw kvm_gmem.mttcg /proc/cmdline || return 0
	for cpu in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[[ -e "$cpu" ]] || continue
		echo 0 >"$cpu" || note "could not offline ${cpu%/online}"
	done
	note "MTTCG: CPUs online for the tests: $(cat /sys/devices/system/cpu/online)"
}

# The dkms-upgrade test (qemu/dkms-upgrade.sh), two boots on one disk:
# /share/tests/upgrade-stage says "old" (the first boot, on an older 6.12
# point release) or "new" (the second, on the release upgraded to), and
# /share/tests/kernel-upgrade/ holds the newer release's Debian packages.
upgrade_stage=
[[ ! -f "$share/tests/upgrade-stage" ]] || read -r upgrade_stage <"$share/tests/upgrade-stage"
upgrade_debs=$share/tests/kernel-upgrade

# upgrade_old: on the older kernel, install our package with the newer
# linux-source-6.12 its minimum asks for: dkms must skip the running kernel,
# saying why, and leave Debian's kvm. Then upgrade the kernel and its headers
# as apt does: the package's hook must build and install for the new kernel.
upgrade_old() {
	local kver version new_kver new_src log t0 status
	kver=$(uname -r)
	version=$(dkms_version_of "$dkms_deb")
	new_src=$(first_file "$upgrade_debs"/linux-source-6.12_*.deb)
	new_kver=$(first_file "$upgrade_debs"/linux-image-*.deb)
	new_kver=${new_kver##*/linux-image-}
	new_kver=${new_kver%%-unsigned_*}
	note "upgrade, old kernel $kver: $(basename "$dkms_deb") with $(basename "$new_src"), then kernel $new_kver"
	openssl req -new -x509 -nodes -days 2 -subj "/CN=$dkms_key_cn" -newkey rsa:2048 \
		-keyout /var/lib/dkms/mok.key -outform DER -out /var/lib/dkms/mok.pub 2>/dev/null || true
	log=$results/upgrade-install.log
	t0=$SECONDS
	if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		"$dkms_deb" "$new_src" >"$log" 2>&1; then
		tap_line ok "apt-get install $(basename "$dkms_deb") $(basename "$new_src") on $kver"
	else
		tap_line "not ok" "apt-get install $(basename "$dkms_deb") $(basename "$new_src") on $kver (see upgrade-install.log)"
	fi
	echo "# time: package install: $((SECONDS - t0)) s" >>"$tap"
	if grep -q "^kvm-gmem: not built for $kver: it needs linux-source-6.12 " "$log"; then
		tap_line ok "dkms skipped $kver, saying so: $(grep -m1 "^kvm-gmem: not built for $kver" "$log")"
	else
		tap_line "not ok" "no 'kvm-gmem: not built for $kver' line in upgrade-install.log"
	fi
	read_dkms_status
	if ! grep -q "^kvm-gmem/$version, $kver, " <<<"$status"; then
		tap_line ok "nothing built for $kver"
	else
		tap_line "not ok" "kvm-gmem built for $kver, whose source is not installed"
	fi
	log=$results/upgrade-kernel.log
	progress "apt-get install the $new_kver kernel and headers: the hook builds (slow under TCG)"
	t0=$SECONDS
	if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		"$upgrade_debs"/linux-image-*.deb "$upgrade_debs"/linux-headers-*.deb \
		"$upgrade_debs"/linux-kbuild-*.deb 2>&1 | tee "$log"; then
		tap_line ok "kernel upgrade: apt-get install the $new_kver image, headers and kbuild"
	else
		tap_line "not ok" "kernel upgrade: apt-get install the $new_kver packages (see upgrade-kernel.log)"
	fi
	echo "# time: kernel upgrade with the dkms build: $((SECONDS - t0)) s" >>"$tap"
	if [[ -z "$(dpkg --audit 2>&1)" ]]; then tap_line ok "dpkg --audit: every package configured"
	else tap_line "not ok" "dpkg --audit: $(dpkg --audit 2>&1 | head -n 3 | tr '\n' ' ')"; fi
	read_dkms_status
	if grep -q "^kvm-gmem/$version, $new_kver, [^:]*: installed" <<<"$status"; then
		tap_line ok "the kernel hook installed kvm-gmem/$version for $new_kver"
	else
		tap_line "not ok" "kvm-gmem/$version not installed for $new_kver"
	fi
	if [[ "$(modinfo -k "$new_kver" -F filename kvm 2>/dev/null)" == /lib/modules/$new_kver/updates/dkms/* ]]; then
		tap_line ok "modprobe on $new_kver will resolve kvm to updates/dkms/"
	else
		tap_line "not ok" "on $new_kver kvm resolves to $(modinfo -k "$new_kver" -F filename kvm 2>&1)"
	fi
	if [[ "$(modinfo -F filename kvm 2>/dev/null)" == /lib/modules/$kver/kernel/* ]]; then
		tap_line ok "on $kver kvm is still Debian's"
	else
		tap_line "not ok" "on $kver kvm resolves to $(modinfo -F filename kvm 2>&1)"
	fi
	# For the second boot, on the same disk.
	mkdir -p /var/lib/kvm-gmem-test
	echo "$kver" >/var/lib/kvm-gmem-test/old-kernel
}

# upgrade_new: booted into the new kernel: kvm must be ours (the tests
# follow); at the end upgrade_remove.
upgrade_new() {
	local version
	version=$(dkms_version_of "$dkms_deb")
	note "upgrade, new kernel $(uname -r): modules built by the package's kernel hook"
	offline_other_cpus_under_mttcg
	modprobe_package_kvm "$version"
	dkms_version=$version
}

# upgrade_remove: apt-get remove gives both kernels Debian's modules back.
upgrade_remove() {
	local old kver k file
	kver=$(uname -r)
	tap=$results/dkms-remove.tap
	n=0
	: >"$tap"
	unload_kvm
	if DEBIAN_FRONTEND=noninteractive apt-get remove -y kvm-gmem-dkms >"$results/dkms-remove.log" 2>&1; then
		tap_line ok "apt-get remove kvm-gmem-dkms"
	else
		tap_line "not ok" "apt-get remove kvm-gmem-dkms (see dkms-remove.log)"
	fi
	if [[ -z "$(dkms status kvm-gmem 2>/dev/null)" ]]; then tap_line ok "dkms status: empty"
	else tap_line "not ok" "dkms status after removal: $(dkms status kvm-gmem 2>&1 | tr '\n' ' ')"; fi
	old=
	[[ ! -f /var/lib/kvm-gmem-test/old-kernel ]] || read -r old </var/lib/kvm-gmem-test/old-kernel
	[[ -n "$old" ]] || tap_line "not ok" "the first boot left no /var/lib/kvm-gmem-test/old-kernel"
	for k in $old $kver; do
		file=$(modinfo -k "$k" -F filename kvm 2>/dev/null || true)
		if [[ "$file" == /lib/modules/$k/kernel/* ]]; then
			tap_line ok "on $k kvm resolves to Debian's $file"
		else
			tap_line "not ok" "on $k kvm resolves to ${file:-nothing}, not kernel/"
		fi
	done
	if modprobe kvm_amd && [[ -d /sys/module/kvm && ! -f /sys/module/kvm/version ]]; then
		tap_line ok "Debian's kvm and kvm_amd load on $kver"
	else
		tap_line "not ok" "Debian's kvm did not load on $kver"
	fi
	echo "1..$n" >>"$tap"
}

# (The dkms install builds with both vCPUs first, and offlines after.)
[[ -n "$dkms_deb" ]] || offline_other_cpus_under_mttcg
if [[ "$upgrade_stage" == old ]]; then
	upgrade_old
elif [[ "$upgrade_stage" == new ]]; then
	upgrade_new
elif [[ -n "$dkms_deb" ]]; then
	dkms_install "$dkms_deb"
elif [[ -f "$mods/USE_STOCK" ]]; then
	note "modules: Debian stock ($(uname -r))"
	if modprobe kvm; then tap_line ok "modprobe kvm (stock)"; else tap_line "not ok" "modprobe kvm (stock)"; fi
elif [[ -f "$mods/kvm.ko" ]]; then
	note "modules: ours ($(cd "$mods" && echo *.ko))"
	# Our kvm.ko needs irqbypass, which Debian provides (load_ours).
	if load_ours "$mods/kvm.ko"; then
		tap_line ok "insmod kvm.ko"
		# Make sure the kvm now loaded is the file we were given.
		want=
		if [[ -f "$mods/kvm.ko.srcversion" ]]; then read -r want <"$mods/kvm.ko.srcversion" || true
		else want=$(modinfo -F srcversion "$mods/kvm.ko" || true); fi
		have=none
		[[ ! -f /sys/module/kvm/srcversion ]] || read -r have </sys/module/kvm/srcversion
		if [[ -z "$want" ]]; then note "kvm.ko has no srcversion: cannot check it is the one loaded"
		elif [[ "$want" == "$have" ]]; then tap_line ok "loaded kvm is ours (srcversion $have)"
		else tap_line "not ok" "loaded kvm srcversion $have, expected $want"; fi
	else
		tap_line "not ok" "insmod kvm.ko"
	fi
elif [[ -f "$mods/BUILTIN" ]]; then
	note "modules: none, KVM is built into $(uname -r) ($(uname -m))"
	# arm64: "kvm [1]: VHE mode initialized successfully" (or nVHE/Hyp).
	if init=$(dmesg | grep -m1 -o 'kvm \[[0-9]*\]: .*mode initialized successfully'); then
		tap_line ok "KVM initialized: ${init#*: }"
	else
		tap_line "not ok" "no 'mode initialized successfully' line from KVM in dmesg"
	fi
else
	tap_line "not ok" "no modules given: $mods has neither USE_STOCK nor kvm.ko"
fi

if [[ -f /sys/module/kvm/version ]]; then
	note "kvm module version: $(</sys/module/kvm/version)"
elif [[ -f "$mods/BUILTIN" ]]; then
	:	# built in: no module, no version
else
	note "kvm module version: none (/sys/module/kvm/version absent: the loaded kvm has no MODULE_VERSION; Debian's never do)"
fi

# TCG offers AMD SVM but never Intel VMX: only one vendor module can run.
# (The dkms-upgrade test's first boot loads nothing: its kernel has Debian's.)
if [[ -f "$mods/BUILTIN" || "$upgrade_stage" == old ]]; then
	:	# no vendor modules to load
elif has_flag svm; then
	if load_vendor kvm_amd; then tap_line ok "load kvm_amd"; else tap_line "not ok" "load kvm_amd"; fi
	if [[ -n "$dkms_deb" ]]; then
		version=$dkms_version
		have=$(cat /sys/module/kvm_amd/version 2>/dev/null || echo none)
		if [[ "$have" == "$version" ]]; then tap_line ok "loaded kvm_amd is the package's (version $have)"
		else tap_line "not ok" "loaded kvm_amd version $have, expected $version"; fi
	fi
else
	tap_line ok "load kvm_amd # SKIP no svm flag in the guest CPU"
fi
if [[ -f "$mods/BUILTIN" || "$upgrade_stage" == old ]]; then
	:	# no vendor modules to load
elif has_flag vmx; then
	if load_vendor kvm_intel; then tap_line ok "load kvm_intel"; else tap_line "not ok" "load kvm_intel"; fi
else
	tap_line ok "load kvm_intel # SKIP no vmx flag in the guest CPU (QEMU TCG emulates no VMX)"
fi
if [[ "$upgrade_stage" == old ]]; then
	:
elif [[ -c /dev/kvm ]]; then tap_line ok "/dev/kvm exists"; else tap_line "not ok" "/dev/kvm exists"; fi
# NUMA=N on the host (qemu/boot.sh): the guest must see N memory nodes.
# Builtins here and at the end (see tap_counts).
want_nodes=1
[[ ! -f "$share/numa-nodes" ]] || read -r want_nodes <"$share/numa-nodes"
if ((want_nodes > 1)); then
	shopt -s nullglob
	node_dirs=(/sys/devices/system/node/node[0-9]*)
	shopt -u nullglob
	nodes=${#node_dirs[@]}
	if ((nodes == want_nodes)); then tap_line ok "$nodes NUMA nodes"
	else tap_line "not ok" "$nodes NUMA nodes in /sys/devices/system/node, want $want_nodes"; fi
fi
echo "1..$n" >>"$tap"

# --- make qemu-shell: a root shell with job control on the console -------
if [[ -f "$share/shell" ]]; then
	progress "root shell; 'poweroff' or 'exit' ends the guest, Ctrl-A X kills it"
	cat >/tmp/shellrc <<-'EOF'
		PS1='kvm-gmem-guest# '
		poweroff() { exit 0; }
		cd /share
	EOF
	# setsid -c makes the console our controlling terminal: job control.
	tty=/dev/$(awk '{ print $NF }' /sys/class/tty/console/active)	# ttyS0, ttyAMA0
	TERM=linux setsid -c -w bash --rcfile /tmp/shellrc -i <"$tty" >"$tty" 2>&1 || true
fi

# --- Run the tests -------------------------------------------------------
default_timeout=300
[[ -f "$share/tests/list" ]] || : >"$share/tests/list"
[[ ! -f "$share/tests/timeout" ]] || default_timeout=$(cat "$share/tests/timeout")

# Tests run from a scratch directory so they cannot litter the share.
cd /tmp
while read -r name limit params; do
	[[ -n "$name" && "$name" != \#* ]] || continue
	limit=${limit:-$default_timeout}
	# kvm module parameters for this test; put back afterwards.
	restore=()
	exit_status_only=
	args=()
	for kv in $params; do
		# "-- ARG...": the rest of the line is the program's arguments.
		if ((${#args[@]})) || [[ "$kv" == -- ]]; then args+=("$kv"); continue; fi
		# "exit-status": the program prints no TAP (most of the tree's x86
		# selftests); its exit status is its one result.
		if [[ "$kv" == exit-status ]]; then exit_status_only=1; continue; fi
		p=/sys/module/kvm/parameters/${kv%%=*}
		if [[ -w $p ]]; then
			restore+=("$(cat "$p")>$p")
			echo "${kv#*=}" >"$p"
			progress "test $name: kvm.$kv"
		else
			progress "test $name: no kvm parameter ${kv%%=*} with these modules"
		fi
	done
	out=$results/$name.tap
	start=$SECONDS
	rc=0
	if [[ -x "$share/tests/$name" ]]; then
		# -k, not --kill-after: the arm64 root has busybox's timeout.
		timeout -k 5 "$limit" "$share/tests/$name" "${args[@]:1}" >"$out" 2>&1 </dev/null || rc=$?
	else
		echo "# $share/tests/$name is missing or not executable" >"$out"
		rc=127
	fi
	# Make the TAP tell the truth: a result line for every way a test can
	# end without one, never a made-up pass.
	if has_result "$out"; then has_tap=1; else has_tap=; fi
	if [[ -n "$exit_status_only" && -z "$has_tap" ]] && ((rc == 0)); then
		printf '1..1\nok 1 - %s (exit status 0; it prints no TAP of its own)\n' "$name" >>"$out"
		has_tap=1
	fi
	case $rc in
	0) [[ -n "$has_tap" ]] || echo "not ok - $name exited 0 but printed no TAP result" >>"$out" ;;
	4) [[ -n "$has_tap" ]] || grep -qiE '^1\.\.0[[:space:]]*#[[:space:]]*skip' "$out" ||
		echo "not ok - $name exited 4 (skip) without a TAP skip line saying why" >>"$out" ;;
	124 | 137) echo "not ok - $name timed out after ${limit}s" >>"$out" ;;
	127) echo "not ok - $name could not be run (exit 127)" >>"$out" ;;
	*)
		# 129-159: killed by a signal (128 + its number); the tree's
		# selftests exit 254 on a failed assertion.
		if ((rc > 128 && rc < 160)); then
			echo "not ok - $name killed by signal $(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))" >>"$out"
		else
			grep -qE '^not ok([[:space:]]|$)' "$out" || echo "not ok - $name exited $rc" >>"$out"
		fi
		;;
	esac
	for r in "${restore[@]}"; do echo "${r%%>*}" >"${r#*>}"; done
	read -r pass fail skip <<<"$(tap_counts "$out")"
	if ((fail)); then verdict=FAIL; elif ((pass)); then verdict=PASS; else verdict=SKIP; fi
	progress "test $name: $verdict ($pass passed, $fail failed, $skip skipped; exit $rc, $((SECONDS - start))s)"
done <"$share/tests/list"

# dkms mode: the package goes again, and Debian's kvm must come back.
if [[ "$upgrade_stage" == new ]]; then
	upgrade_remove
elif [[ -n "$dkms_deb" && -z "$upgrade_stage" ]]; then
	dkms_remove
fi

dmesg >"$results/dmesg.txt"
# The host fails the run on taint bits that mean a kernel problem (W, D, B, L).
read -r tainted </proc/sys/kernel/tainted
echo "$tainted" >"$results/tainted.txt"
# (The guest init syncs before it powers off.)

# The host judges the results (qemu/run-tier.sh, tests/expect/): this status
# only says the run itself went through.
failed=
for tap in "$results"/*.tap; do
	while IFS= read -r line; do
		if [[ "$line" =~ ^not\ ok([[:space:]]|$) ]]; then
			failed+=" ${tap##*/}"
			break
		fi
	done <"$tap"
done
if [[ -n "$failed" ]]; then
	progress "done; 'not ok' in:$failed"
else
	progress "done; no 'not ok'"
fi
exit 0
