#!/usr/bin/env bash
# in-chroot.sh [--daemon] ROOT CMD [ARGS...]: run one command of the test
# cluster inside a release's chroot; the cluster harness
# (tests/integration/lib/cluster.sh) puts it in front of every daemon
# (CL_DAEMON_PREFIX) and client command (CL_CLIENT_PREFIX).
#
# --daemon: a clean environment (env -i: PATH, plus whatever the harness
# passes with env NAME=VALUE after it), and inside a daemon's own mount
# namespace the namespace's /etc/hosts (bind-mounted there by the harness)
# is bind-mounted over the chroot's, so the daemon resolves the cluster's
# names.  Never in the initial mount namespace: that would change the host.
# munged runs as the chroot's munge user, whose uid need not be the host's:
# its key directory is given to that user first.
# Without --daemon: the caller's environment (SLURM_CONF, SPANK_IB_*, NCCL_*
# the test sets for srun) with the chroot's PATH.
set -u
daemon=0
if [ "${1:-}" = --daemon ]; then
	daemon=1
	shift
fi
root=${1:?usage: in-chroot.sh [--daemon] ROOT CMD...}
shift
path=/usr/sbin:/usr/bin:/sbin:/bin
if [ "$daemon" = 0 ]; then
	exec chroot "$root" /usr/bin/env PATH="$path" "$@"
fi
if [ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ]; then
	mount --bind /etc/hosts "$root/etc/hosts" || exit 1
fi
for a in "$@"; do
	case "$a" in
	--key-file=*)
		chroot "$root" chown -R munge:munge "$(dirname "${a#--key-file=}")" || exit 1
		;;
	esac
done
exec chroot "$root" /usr/bin/env -i PATH="$path" HOME=/root LANG=C.UTF-8 "$@"
