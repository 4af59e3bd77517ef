#!/usr/bin/env bash
# in-chroot.sh [--daemon=OUTER_MNTNS] ROOT CMD [ARGS...]: run one command of the test
# cluster inside a release's chroot; the cluster harness
# (tests/integration/lib/cluster.sh) puts it in front of every daemon
# (CL_DAEMON_PREFIX) and client command (CL_CLIENT_PREFIX).
#
# --daemon=OUTER_MNTNS: a clean environment (env -i: PATH, plus whatever the
# harness passes with env NAME=VALUE after it), and inside a daemon's own
# mount namespace the namespace's /etc/hosts (bind-mounted there by the
# harness) is bind-mounted over the chroot's, so the daemon resolves the
# cluster's names.  Never in the test's own mount namespace (OUTER_MNTNS, as
# readlink /proc/self/ns/mnt prints it; munged runs there): that would stack
# a mount nobody records.
# munged runs as the chroot's munge user, whose uid need not be the host's:
# its key directory is given to that user first.
# Without --daemon: the caller's environment (SLURM_CONF, SPANK_IB_*, NCCL_*
# the test sets for srun) with the chroot's PATH.
set -u
daemon=0 outer=
case "${1:-}" in
--daemon=*)
	daemon=1 outer=${1#--daemon=}
	shift
	;;
esac
root=${1:?usage: in-chroot.sh [--daemon=OUTER_MNTNS] ROOT CMD...}
shift
path=/usr/sbin:/usr/bin:/sbin:/bin
if [ "$daemon" = 0 ]; then
	exec chroot "$root" /usr/bin/env PATH="$path" "$@"
fi
if [ -n "$outer" ] && [ "$(readlink /proc/self/ns/mnt)" != "$outer" ]; then
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
