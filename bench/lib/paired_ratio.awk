# paired_ratio.awk: the ratio of two configurations measured in the same
# rounds, judged on the pairs rather than on two medians.
#
#   paste A B | awk -f bench/lib/paired_ratio.awk
#
# Each input line is one round: A's time, then B's (any unit, the same for
# both).  Prints "median R  95% [LO, HI]  over N rounds": R is the median of
# the rounds' A/B, LO and HI the 2.5th and 97.5th percentiles of that median
# over 2000 bootstrap resamples of the rounds (seeded, so a file gives the
# same interval every time).  A ratio of two medians moves with the
# machine's drift between one run and the next (another engineer's build,
# the page cache); a round's pair shares that moment, so the interval says
# how far the ratio itself is known.  Rounds with a missing or zero B are
# left out.
# Three-way quicksort (values equal to the pivot are done at once: a run of
# equal ratios must not recurse once per element, mawk's stack is small).
function qsort(a, lo, hi, lt, gt, i, p, t) {
	if (lo >= hi)
		return;
	p = a[lo + int((hi - lo + 1) * rand())];
	lt = lo;
	gt = hi;
	i = lo;
	while (i <= gt) {
		if (a[i] < p) {
			t = a[lt]; a[lt] = a[i]; a[i] = t;
			lt++;
			i++;
		} else if (a[i] > p) {
			t = a[gt]; a[gt] = a[i]; a[i] = t;
			gt--;
		} else
			i++;
	}
	qsort(a, lo, lt - 1);
	qsort(a, gt + 1, hi);
}

function median_of(v, n, t, i) {
	for (i = 1; i <= n; i++)
		t[i] = v[i];
	qsort(t, 1, n);
	return (n % 2) ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2;
}

NF >= 2 && $2 + 0 > 0 {
	r[++n] = $1 / $2;
}

END {
	if (n == 0) {
		print "no rounds";
		exit 1;
	}
	srand(28);
	for (b = 1; b <= 2000; b++) {
		for (i = 1; i <= n; i++)
			s[i] = r[int(rand() * n) + 1];
		m[b] = median_of(s, n);
	}
	med = median_of(r, n);
	qsort(m, 1, 2000); # the percentiles of the resampled medians
	printf "median %.3f  95%% [%.3f, %.3f]  over %d rounds\n", med, m[50], m[1951], n;
}
