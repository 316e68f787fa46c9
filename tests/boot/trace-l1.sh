#!/bin/sh
# Run in an L1 guest: boot gmem_linux_boot_test (the .anon control unless
# VARIANT says otherwise) up to RUNS times with L1's KVM traced (injections,
# exits and entries), and keep the trace of the first boot that hangs in
# the share's results (build/share/<tier>/results/l1-trace.txt): look there for the last
# kvm_inj_virq before the hang and the exits' intr_info (EXITINTINFO).
# Stage it by hand next to the VMM, boot-init and boot-vmlinuz with a list
# line "trace-l1.sh 2400" and give the directory to qemu/run-tier.sh --tests
# (docs/linux-guest.md). A TAP "ok" means no hang.
#   VARIANT=.anon RUNS=10 KVM_AMD_PARAMS="vgif=0" (environment, optional)
d=$(dirname "$0")
vmm=$d/gmem_linux_boot_test${VARIANT-.anon}
runs=${RUNS:-10}
t=/sys/kernel/tracing
out=/share/results/l1-trace.txt

echo "1..1"
[ -x "$vmm" ] || cp "$d/gmem_linux_boot_test" "$vmm"
if [ -n "$KVM_AMD_PARAMS" ]; then
	# shellcheck disable=SC2086,SC2015 # word-split parameters; fail if either fails
	rmmod kvm_amd && insmod /share/modules/kvm-amd.ko $KVM_AMD_PARAMS ||
		{ echo "not ok 1 reloading kvm_amd with $KVM_AMD_PARAMS"; exit 1; }
fi
[ -d $t/events ] || mount -t tracefs nodev $t
echo 0 > $t/tracing_on
echo 65536 > $t/buffer_size_kb
for e in kvm_inj_virq kvm_exit kvm_entry; do echo 1 > $t/events/kvm/$e/enable; done
i=1
while [ $i -le "$runs" ]; do
	echo "# boot $i of $runs"
	echo > $t/trace
	echo 1 > $t/tracing_on
	"$vmm" > /tmp/boot.$i 2>&1 &
	pid=$!
	# Stop tracing as soon as the VMM reports the hang, before it retries.
	while kill -0 $pid 2>/dev/null; do
		grep -q "no init after" /tmp/boot.$i && echo 0 > $t/tracing_on
		sleep 1
	done
	if grep -q "no init after\|^not ok" /tmp/boot.$i; then
		echo 0 > $t/tracing_on
		grep -v '^# guest: \[ *[0-9.]*\] *$' /tmp/boot.$i | sed 's/^/# /'
		cp $t/trace $out
		echo "not ok 1 boot $i hung: L1's trace in $out"
		exit 1
	fi
	i=$((i + 1))
done
echo "ok 1 no boot hung in $runs"
