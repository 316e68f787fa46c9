# Shared shell helpers for kvm-gmem tooling. Source it; do not run it.

# Caches live outside the clone; deleting them only costs time.
: "${KVM_GMEM_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/kvm-gmem}"
export KVM_GMEM_CACHE

: "${KVM_GMEM_T0:=$(date +%s)}"
export KVM_GMEM_T0

# step "message": one progress line with seconds since the run started.
step() {
	printf '[%4ds] %s\n' $(( $(date +%s) - KVM_GMEM_T0 )) "$*"
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# hash_inputs FILE...: short content hash of files (names and contents), used as cache keys.
hash_inputs() {
	for f in "$@"; do
		printf '%s\n' "$(basename "$f")"
		cat "$f"
	done | sha256sum | cut -c1-16
}
