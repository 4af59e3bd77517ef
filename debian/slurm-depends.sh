#!/bin/sh
# slurm-depends.sh SLURM_VERSION_H: the Depends that pins the Slurm release a
# plugin built against SLURM_VERSION_H is for, e.g.
#   slurm-wlm-basic-plugins (>= 22.05), slurm-wlm-basic-plugins (<< 22.06~)
# (slurm-wlm-basic-plugins owns the plugin directory; slurmd and slurm-client
# both depend on exactly one version of it).
set -eu
num=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' "$1")
case "$num" in
0x[0-9a-fA-F]*) ;;
*)
	echo "slurm-depends.sh: no SLURM_VERSION_NUMBER in $1 (libslurm-dev)" >&2
	exit 1
	;;
esac
major=$(((num >> 16) & 0xff))
minor=$(((num >> 8) & 0xff))
printf 'slurm-wlm-basic-plugins (>= %d.%02d), slurm-wlm-basic-plugins (<< %d.%02d~)\n' \
	"$major" "$minor" "$major" $((minor + 1))
