/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_options.c: the --ib-* user options of srun, sbatch and salloc.
 *
 * The table is registered in every context (sbatch and salloc only know
 * options registered in the allocator context too).  SPANK calls an
 * option's callback in the local context when the user types it and again
 * in slurmstepd (remote) from the value srun forwards, sometimes twice:
 * parsing is idempotent (the last value wins).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "ibprep/text.h"

#include "spank_ib.h"

static const struct {
	const char *name, *env;
} opt_names[SPANK_IB_OPT_N] = {
    [SPANK_IB_OPT_CHECK] = {"ib-check", "SPANK_IB_CHECK"},
    [SPANK_IB_OPT_AFFINITY] = {"ib-affinity", "SPANK_IB_AFFINITY"},
    [SPANK_IB_OPT_ENV] = {"ib-env", "SPANK_IB_ENV"},
    [SPANK_IB_OPT_REPORT] = {"ib-report", "SPANK_IB_REPORT"},
    [SPANK_IB_OPT_TEST] = {"ib-test", "SPANK_IB_TEST"},
    [SPANK_IB_OPT_WATCH] = {"ib-watch", "SPANK_IB_WATCH"},
    [SPANK_IB_OPT_REQUEUE] = {"ib-requeue", "SPANK_IB_REQUEUE"},
};

/* The plugin's one copy of the user's options (SPANK callbacks carry no context). */
static struct spank_ib_opts user_opts;

struct spank_ib_opts *spank_ib_user_opts(void)
{
	return &user_opts;
}

const char *spank_ib_opt_name(enum spank_ib_opt which)
{
	return which > 0 && which < SPANK_IB_OPT_N ? opt_names[which].name : "?";
}

const char *spank_ib_opt_envvar(enum spank_ib_opt which)
{
	return which > 0 && which < SPANK_IB_OPT_N ? opt_names[which].env : "?";
}

void spank_ib_opts_init(struct spank_ib_opts *o)
{
	memset(o, 0, sizeof(*o));
}

/* A word from WORDS[] (NULL-terminated) to its index; -1 when none. */
static int word_index(const char *s, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (!strcmp(s, words[i]))
			return i;
	return -1;
}

static int bad_value(char *err, size_t errlen, enum spank_ib_opt which, const char *arg,
		     const char *accepted)
{
	snprintf(err, errlen, "--%s: bad value '%s': expected %s", spank_ib_opt_name(which), arg,
		 accepted);
	return -EINVAL;
}

static int parse_report(struct spank_ib_opts *o, const char *arg, char *err, size_t errlen)
{
	static const char accepted[] = "text, json, text:FILE or json:FILE";
	const char *colon = strchr(arg, ':');
	size_t kind_len = colon ? (size_t)(colon - arg) : strlen(arg);
	enum spank_ib_report kind;

	if (kind_len == 4 && !strncmp(arg, "text", 4))
		kind = SPANK_IB_REPORT_TEXT;
	else if (kind_len == 4 && !strncmp(arg, "json", 4))
		kind = SPANK_IB_REPORT_JSON;
	else if (kind_len == 3 && !strncmp(arg, "off", 3) && !colon)
		kind = SPANK_IB_REPORT_OFF;
	else
		return bad_value(err, errlen, SPANK_IB_OPT_REPORT, arg, accepted);
	if (colon) {
		const char *file = colon + 1;
		if (!*file)
			return bad_value(err, errlen, SPANK_IB_OPT_REPORT, arg, accepted);
		if (strlen(file) >= sizeof(o->report_file)) {
			snprintf(err, errlen, "--ib-report: file name longer than %zu bytes",
				 sizeof(o->report_file) - 1);
			return -EINVAL;
		}
		/* The path is expanded and opened on each node as the job's user. */
		strcpy(o->report_file, file);
	} else {
		o->report_file[0] = '\0';
	}
	o->report = kind;
	return 0;
}

int spank_ib_opt_parse(struct spank_ib_opts *o, enum spank_ib_opt which, const char *arg, char *err,
		       size_t errlen)
{
	static const char *const check_words[] = {"off", "fail", "warn", NULL};
	static const char *const aff_words[] = {"off", "on", "verbose", NULL};
	static const char *const env_words[] = {"auto", "on", "force", "off", NULL};
	static const char *const test_words[] = {"off", "quick", "full", NULL};
	static const char *const watch_words[] = {"default", "report", "end", NULL};
	static const char *const requeue_words[] = {"no", "yes", "off", NULL};
	int i;

	/*
	 * "--ib-check=" is the bare option.  So is "(null)": sbatch and salloc
	 * forward an option given without a value to the steps through
	 * SLURM_SPANK__SLURM_SPANK_OPTION_* as the text "(null)" (22.05).
	 */
	if (arg && (!*arg || !strcmp(arg, "(null)")))
		arg = NULL;
	switch (which) {
	case SPANK_IB_OPT_CHECK:
		i = arg ? word_index(arg, check_words) : SPANK_IB_CHECK_FAIL;
		if (i < 0)
			return bad_value(err, errlen, which, arg, "fail, warn or off");
		o->check = (enum spank_ib_check)i;
		break;
	case SPANK_IB_OPT_AFFINITY:
		i = arg ? word_index(arg, aff_words) : SPANK_IB_AFF_ON;
		if (i < 0)
			return bad_value(err, errlen, which, arg, "on, verbose or off");
		o->affinity = (enum spank_ib_affinity)i;
		break;
	case SPANK_IB_OPT_ENV:
		i = arg ? word_index(arg, env_words) : SPANK_IB_ENV_ON;
		if (i < 0)
			return bad_value(err, errlen, which, arg, "on, force, off or auto");
		o->env = (enum spank_ib_env)i;
		break;
	case SPANK_IB_OPT_REPORT:
		if (!arg) {
			o->report = SPANK_IB_REPORT_TEXT;
			o->report_file[0] = '\0';
		} else if (parse_report(o, arg, err, errlen)) {
			return -EINVAL;
		}
		break;
	case SPANK_IB_OPT_TEST:
		/* every rail by default: --ib-test=quick is rail 0 only */
		if (arg && !strcmp(arg, "on"))
			arg = "full";
		i = arg ? word_index(arg, test_words) : SPANK_IB_TEST_FULL;
		if (i < 0)
			return bad_value(err, errlen, which, arg, "quick, full or off");
		o->test = (enum spank_ib_test)i;
		break;
	case SPANK_IB_OPT_WATCH:
		i = arg ? word_index(arg, watch_words) : IBP_WATCH_ACTION_END;
		if (i <= 0)
			return bad_value(err, errlen, which, arg ? arg : "", "report or end");
		o->watch = (enum ibp_watch_action)i;
		break;
	case SPANK_IB_OPT_REQUEUE:
		i = arg ? word_index(arg, requeue_words) : 1;
		if (i < 0)
			return bad_value(err, errlen, which, arg, "yes or no");
		o->requeue = i == 1;
		break;
	default:
		snprintf(err, errlen, "unknown option number %d", (int)which);
		return -EINVAL;
	}
	o->set[which] = true;
	return 0;
}

int spank_ib_opts_from_env(struct spank_ib_opts *o, spank_ib_getenv_fn get, void *ctx, char *err,
			   size_t errlen)
{
	for (int w = 1; w < SPANK_IB_OPT_N; w++) {
		const char *v;
		char why[256];

		if (o->set[w])
			continue; /* the command line wins */
		v = get(ctx, opt_names[w].env);
		if (!v || !*v)
			continue;
		/* "1"/"yes" mean the bare option, "0"/"no" off, as users type them. */
		if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true"))
			v = NULL;
		else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false"))
			v = "off";
		if (spank_ib_opt_parse(o, (enum spank_ib_opt)w, v, why, sizeof(why))) {
			snprintf(err, errlen, "%s=%s: %s", opt_names[w].env,
				 get(ctx, opt_names[w].env), why);
			return -EINVAL;
		}
		o->set[w] = false; /* from the environment, not the command line */
	}
	return 0;
}

/* One callback for every option: VAL says which. */
static int opt_cb(int val, const char *optarg, int remote)
{
	char err[512], safe[1024];

	if (spank_ib_opt_parse(&user_opts, (enum spank_ib_opt)val, optarg, err, sizeof(err))) {
		ibp_text_escape(err, safe, sizeof(safe)); /* holds the user's value */
		slurm_error("spank-ib: %s", safe);
		return -1;
	}
	return 0;
}

/* spank_option wants char *: writable copies keep -Wwrite-strings quiet. */
static char n_check[] = "ib-check", a_check[] = "[fail|warn|off]",
	    u_check[] = "check the node's InfiniBand/RoCE HCAs and links before the step; "
			"node faults fail the step (fail, default) or are only reported (warn)";
static char n_aff[] = "ib-affinity", a_aff[] = "[on|verbose|off]",
	    u_aff[] = "give each task its GPU, nearest healthy HCA port, CPUs and memory node "
		      "(verbose: print each task's row)";
static char n_env[] = "ib-env", a_env[] = "[on|force|off]",
	    u_env[] = "set the NCCL/UCX/MPI environment (on with --ib-affinity; force: "
		      "override values you set yourself)";
static char n_rep[] = "ib-report", a_rep[] = "[text|json][:FILE]",
	    u_rep[] = "print the per-node and per-task report (FILE may hold %n = node, "
		      "%j = job id)";
static char n_test[] = "ib-test", a_test[] = "[quick|full|off]",
	    u_test[] = "run a bounded cross-node RDMA sanity test between the step's nodes";
static char n_watch[] = "ib-watch", a_watch[] = "[end|report]",
	    u_watch[] = "with --ib-check: when one of the step's links fails while it runs, end "
			"the step at once (end, the default of the bare option) or only say so "
			"(report); the site's setting can be raised, not lowered";
static char n_req[] = "ib-requeue", a_req[] = "[yes|no]",
	    u_req[] = "requeue this batch job once on other nodes when a node fault fails a "
		      "step (where the site allows it)";

struct spank_option spank_ib_option_table[] = {
    {n_check, a_check, u_check, 2, SPANK_IB_OPT_CHECK, opt_cb},
    {n_aff, a_aff, u_aff, 2, SPANK_IB_OPT_AFFINITY, opt_cb},
    {n_env, a_env, u_env, 2, SPANK_IB_OPT_ENV, opt_cb},
    {n_rep, a_rep, u_rep, 2, SPANK_IB_OPT_REPORT, opt_cb},
    {n_test, a_test, u_test, 2, SPANK_IB_OPT_TEST, opt_cb},
    {n_watch, a_watch, u_watch, 2, SPANK_IB_OPT_WATCH, opt_cb},
    {n_req, a_req, u_req, 2, SPANK_IB_OPT_REQUEUE, opt_cb},
    SPANK_OPTIONS_TABLE_END,
};

int spank_ib_effective(const struct spank_ib_opts *user, const struct ibp_conf *conf,
		       spank_ib_getenv_fn get, void *ctx, struct spank_ib_opts *eff, bool *active,
		       char *err, size_t errlen)
{
	*eff = *user;
	*active = false;
	if (spank_ib_opts_from_env(eff, get, ctx, err, errlen))
		return -EINVAL;
	/* enforce= is the admin's floor: a user can ask for more, never for less. */
	if (conf->enforce & IBP_ENFORCE_CHECK)
		eff->check = SPANK_IB_CHECK_FAIL;
	if ((conf->enforce & IBP_ENFORCE_AFFINITY) && eff->affinity == SPANK_IB_AFF_OFF)
		eff->affinity = SPANK_IB_AFF_ON;
	if ((conf->enforce & IBP_ENFORCE_ENV) &&
	    (eff->env == SPANK_IB_ENV_OFF || eff->env == SPANK_IB_ENV_AUTO))
		eff->env = SPANK_IB_ENV_ON;
	eff->test_by_user = eff->test != SPANK_IB_TEST_OFF;
	/* the enforced test covers every rail: quick (rail 0) would be less */
	if (conf->enforce & IBP_ENFORCE_TEST)
		eff->test = SPANK_IB_TEST_FULL;
	if (eff->env == SPANK_IB_ENV_AUTO)
		eff->env = eff->affinity != SPANK_IB_AFF_OFF ? SPANK_IB_ENV_ON : SPANK_IB_ENV_OFF;
	/* watch_action= is the admin's floor too: the user may only raise it */
	if (eff->watch < conf->watch_action)
		eff->watch = conf->watch_action;
	eff->requeue =
	    conf->requeue == IBP_REQUEUE_YES || (conf->requeue == IBP_REQUEUE_USER && eff->requeue);
	/*
	 * --ib-check=warn (option or SPANK_IB_CHECK) lowers the user's own test's
	 * failures to warnings, never an enforced test's: enforce=test fails the
	 * step whatever the user asks.
	 */
	eff->check_warn_by_user =
	    eff->check == SPANK_IB_CHECK_WARN && !(conf->enforce & IBP_ENFORCE_TEST);
	/* A report or a test needs the node's findings: report them, fail nothing. */
	if ((eff->report != SPANK_IB_REPORT_OFF || eff->test != SPANK_IB_TEST_OFF) &&
	    eff->check == SPANK_IB_CHECK_OFF)
		eff->check = SPANK_IB_CHECK_WARN;
	*active = eff->check != SPANK_IB_CHECK_OFF || eff->affinity != SPANK_IB_AFF_OFF ||
		  eff->env != SPANK_IB_ENV_OFF || eff->report != SPANK_IB_REPORT_OFF ||
		  eff->test != SPANK_IB_TEST_OFF;
	return 0;
}
