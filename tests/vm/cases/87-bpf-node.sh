# SPDX-License-Identifier: Apache-2.0
# 87-bpf-node: the node's probe set (issue 25) on the guest's kernel (Debian's 6.1; the host
# runs 6.18) and a pure cgroup v2 hierarchy with controllers: tests/bpf/test-node.sh as the
# bpf suite runs it on the host. Ten shims start at once and race to load one set, eight
# with a CPU burner each whose on-CPU time must match its leaf's cpu.stat, one SIGKILLed
# mid-run whose entry is gone after the next start; the last one out unpins the set. The
# case's own mount namespace gets its own bpf filesystem (probe_open_node mounts it). Skips
# (77) only when the build has no BPF.
# vm-timeout: 300
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

if ! grep -qx '#define SPARKSHIM_HAVE_BPF 1' "$BUILD_DIR/bpf/probe-config.h" 2>/dev/null; then
	echo "built without BPF (see $BUILD_DIR/bpf/probe-config.h)"
	exit 77
fi
[ -r /sys/kernel/btf/vmlinux ] || fail "the guest kernel $(uname -r) has no BTF"
PROBE_DUMP=$BUILD_DIR/bpf/probe-dump BURN=$VMHELPERS/burn HAVE_BPF=1 \
	sh "$SRC_DIR/tests/bpf/test-node.sh"
