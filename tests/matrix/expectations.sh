# shellcheck shell=bash
# expectations.sh: what differs between Slurm releases, in one place; source it.
#
# Every test that depends on the Slurm release asks here instead of guessing,
# and the release is the one the running daemons report (`slurmd -V`), not
# the name of the Debian suite.  The facts (verified on 22.05.8, 24.11.5 and
# 26.05.5, see ../shared/notes/test-cluster.md and README "Slurm releases"):
#
#   - 23.11 changed SPANK failure handling: a failing user_init fails the
#     step (srun exits 1; upstream "Set task exited when spank_user() fails",
#     and 23.11.4 "srun should exit non-zero when launch fails"), and a batch
#     step whose user_init fails is requeued instead of ending COMPLETED.
#     Before 23.11 srun exits 0.  A failing task_init fails the step on all.
#   - 24.11 has no */none plugins (task/none, switch/none ...): the cluster
#     leaves them out and sets CgroupPlugin=disabled.
#   - 25.05 added slurm_spank_init_failure_mode and dropped the node name
#     from slurmstepd's message prefix ("slurmstepd-n2: error:" became
#     "slurmstepd: error:"): the plugin has to name the node itself.
#
#   ibp_slurm_version [PREFIX...]  "MAJOR.MINOR.MICRO" from `PREFIX slurmd -V`
#   ibp_expect KEY VERSION         prints the expected value of KEY for VERSION
#
# Keys and values:
#   user_init_fail_srun_rc      srun's exit status when user_init fails on a node
#   user_init_fail_batch_state  the batch job's fate when user_init fails on its
#                               batch host: COMPLETED, or REQUEUED (pending
#                               again, Restarts >= 1); the node drains on all
#   task_init_fail_srun_rc      srun's exit status when task_init fails
#   optional_fail_srun_rc       the same for an `optional` plugin's user_init or
#                               task_init: 0 on every release seen (22.05,
#                               24.11, 26.05): only `required` fails steps
#   stepd_prefix_names_node     yes when slurmstepd's messages say slurmstepd-<node>
#   has_none_plugins            yes when task/none and switch/none exist
#   has_init_failure_mode       yes when slurm_spank_init_failure_mode exists
#   plugin_fail_srun_rc         srun's exit status when spank_ib finds a node
#                               fault (it returns its verdict from task_init)
#   init_fail_srun_says         what srun prints when a required plugin's
#                               slurm_spank_init fails in slurmstepd (spank_ib's
#                               config= refused): "Plugin initialization failed"
#                               on 22.05 and 24.11, "Unspecified error" on 26.05
#                               (seen: task launch failed; from 25.05 is assumed,
#                               where the init failure handling changed)
#   init_fail_srun_exit         srun's exit status then: 0 before 23.11 (the
#                               launch failed, srun still exits 0, as for
#                               user_init), non-zero from 23.11

# ibp_slurm_version [PREFIX...]: the release of the slurmd that PREFIX runs.
ibp_slurm_version()
{
	local out
	out=$("$@" slurmd -V 2>&1) || return 1
	# "slurm 22.05.8" upstream, "slurm-wlm 24.11.5" in Debian
	[[ "$out" =~ ([0-9]+)\.([0-9]+)\.([0-9]+) ]] || return 1
	echo "${BASH_REMATCH[0]}"
}

# ibp_version_ge VERSION MAJOR.MINOR: VERSION is MAJOR.MINOR or later.
ibp_version_ge()
{
	local v=$1 want=$2 a b c d
	IFS=. read -r a b _ <<< "$v"
	IFS=. read -r c d <<< "$want"
	[ "$((10#$a))" -gt "$((10#$c))" ] ||
		{ [ "$((10#$a))" -eq "$((10#$c))" ] && [ "$((10#$b))" -ge "$((10#$d))" ]; }
}

ibp_expect()
{
	local key=$1 v=$2
	case "$key" in
	user_init_fail_srun_rc)
		if ibp_version_ge "$v" 23.11; then echo 1; else echo 0; fi
		;;
	user_init_fail_batch_state)
		if ibp_version_ge "$v" 23.11; then echo REQUEUED; else echo COMPLETED; fi
		;;
	task_init_fail_srun_rc | plugin_fail_srun_rc)
		echo 1
		;;
	optional_fail_srun_rc)
		echo 0
		;;
	stepd_prefix_names_node)
		if ibp_version_ge "$v" 25.05; then echo no; else echo yes; fi
		;;
	has_none_plugins)
		if ibp_version_ge "$v" 24.11; then echo no; else echo yes; fi
		;;
	init_fail_srun_exit)
		if ibp_version_ge "$v" 23.11; then echo non-zero; else echo 0; fi
		;;
	init_fail_srun_says)
		if ibp_version_ge "$v" 25.05; then echo "Unspecified error"; else echo "Plugin initialization failed"; fi
		;;
	has_init_failure_mode)
		if ibp_version_ge "$v" 25.05; then echo yes; else echo no; fi
		;;
	*)
		echo "ibp_expect: unknown key '$key'" >&2
		return 1
		;;
	esac
}
