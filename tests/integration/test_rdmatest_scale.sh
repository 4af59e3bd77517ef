#!/usr/bin/env bash
# test_rdmatest_scale.sh: the cross-node test at scale, on one machine.
# Up to 256 simulated nodes (one process each, on distinct 127.100.x.y
# addresses) run the whole protocol with the socket transport and munge
# credentials from a private munged: a healthy run, then one with injected
# faults (a node that refuses, never answers, answers slowly, corrupts data,
# presents a credential of another munge key, dies mid-test), and one under
# attack by a hostile local user (issue 9, test g).  Asserts every verdict,
# that blame lands on the faulty node and only there, that an
# authentication failure blames nobody, and that everything ends within its
# bound.
#
# The machine may be loaded (CI, other builds): the healthy run measures
# what it can do.  When 256 nodes cannot all finish inside the test's own
# timeout here, it halves the node count (down to 32, and says so) rather
# than assert that the machine is idle; speed is measured by make bench.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
B=${B:-build}
N=${RDMATEST_NODES:-256}
TIMEOUT=${RDMATEST_TIMEOUT:-4}
# Test ports below the kernel's ephemeral range: inside it, the simulated
# nodes' own outgoing connections (each bound to its node's address) take
# test ports and leave them in TIME_WAIT for a minute, and a node then
# listens on a fallback (issue 9, item 3; the plugin's ports are privileged).
read -r plo _ </proc/sys/net/ipv4/ip_local_port_range
if [ "${plo:-0}" -ge 3048 ]; then PORTS=$((plo - 2000))-$((plo - 1001)); else PORTS=47000-47999; fi
tmp=$(mktemp -d /tmp/ibp-rdmatest.XXXXXX)
chmod 0755 "$tmp" # munged runs as the munge user
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# One private munged per key: "good" is the cluster's, "bad" a stranger's.
start_munged() {
	local d=$tmp/munge-$1
	mkdir -p "$d"
	mungekey --create --keyfile="$d/munge.key" >/dev/null 2>&1 || return 1
	chown -R munge:munge "$d" && chmod 0755 "$d"
	setpriv --reuid=munge --regid=munge --init-groups \
		munged --foreground --force --num-threads=4 --socket="$d/munge.sock" \
		--key-file="$d/munge.key" --pid-file="$d/munged.pid" --log-file="$d/munged.log" \
		--seed-file="$d/munged.seed" >"$d/out" 2>&1 </dev/null &
	pids+=($!)
	for _ in $(seq 1 100); do
		[ -S "$d/munge.sock" ] && return 0
		sleep 0.05
	done
	echo "# munged ($1) did not start: $(tail -2 "$d/out" "$d/munged.log" 2>/dev/null)"
	return 1
}

if [ ! -f "$B/libibprep.a" ]; then
	tap_skip "rdmatest scale" "$B/libibprep.a not built (run make first)"
	tap_done
	exit
fi
sim=$tmp/rdmatest-sim
if ! ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -o "$sim" tests/tools/rdmatest-sim.c \
	"$B/libibprep.a" $(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null) -lmunge -lm -lpthread 2>"$tmp/cc.err"; then
	tap_fail "build rdmatest-sim" "$(cat "$tmp/cc.err")"
	tap_done
	exit
fi
tap_ok "build rdmatest-sim"
if [ "$(id -u)" -ne 0 ] || ! command -v munged >/dev/null || ! id munge >/dev/null 2>&1; then
	tap_skip "rdmatest scale with munge" "needs root, munged and the munge user"
	tap_done
	exit
fi
start_munged good && start_munged bad || { tap_fail "start private munged"; tap_done; exit; }
tap_ok "start two private munged (cluster key, stranger key)"
good=$tmp/munge-good/munge.sock bad=$tmp/munge-bad/munge.sock

# --- credentials against a real munged ----------------------------------
"$sim" --munge-socket "$good" --auth-check >"$tmp/auth.out" 2>&1
while read -r verdict what; do
	case "$verdict" in
	ok) tap_ok "munge: $what" ;;
	*) tap_fail "munge: $what" ;;
	esac
done <"$tmp/auth.out"
grep -q 'replayed credential refused' "$tmp/auth.out" || tap_fail "munge: the replay check did not run" "$(cat "$tmp/auth.out")"

# run NAME ARGS...: runs the simulation, output in $tmp/NAME.out
run() {
	local name=$1; shift
	mkdir -p "$tmp/$name"
	"$sim" --nodes "$N" --timeout "$TIMEOUT" --ports "$PORTS" --munge-socket "$good" --bad-munge-socket "$bad" \
		--outdir "$tmp/$name" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
wall() { awk '/^wall /{print $2}' "$tmp/$1.out"; }
# bound: all nodes done within the test's own timeout plus start-up slack
within() { awk -v w="$(wall "$1")" -v b="$2" 'BEGIN{exit !(w != "" && w <= b)}'; }

# --- healthy: also how many nodes this machine runs inside the bound -----
while :; do
	run healthy
	npass=$(grep -c '^node .* pass ' "$tmp/healthy.out")
	[ "$npass" -eq "$N" ] && break
	[ "$N" -le 32 ] && break
	echo "# $npass of $N simulated nodes passed in $(wall healthy) s (load $(cut -d' ' -f1 /proc/loadavg)): too many for this machine now, trying $((N / 2))"
	N=$((N / 2))
done
if [ "$npass" -eq "$N" ]; then
	tap_ok "healthy: all $N nodes pass (wall $(wall healthy) s, load $(cut -d' ' -f1 /proc/loadavg))"
else
	tap_fail "healthy: $npass of $N nodes pass" "$(grep '^node' "$tmp/healthy.out" | grep -v ' pass ' | head -5)"
fi
if within healthy "$TIMEOUT"; then tap_ok "healthy: verdict within the test's bound ($(wall healthy) s, timeout $TIMEOUT s)"; else tap_fail "healthy: took $(wall healthy) s, bound $TIMEOUT s"; fi
if ! grep -q '^hung' "$tmp/healthy.out"; then tap_ok "healthy: no node hung"; else tap_fail "healthy: hung nodes" "$(grep '^hung' "$tmp/healthy.out")"; fi

# --- faults -------------------------------------------------------------
# Spread apart (>= 5) so each fault's neighbourhood is its own: at 256 nodes
# 10, 50, ... 210, scaled down with the node count.
kinds=(refuse silent slow corrupt die badcred)
declare -A fault=()
for k in "${!kinds[@]}"; do fault[$(((10 + 40 * k) * N / 256))]=${kinds[$k]}; done
pos() { local f; for f in "${!fault[@]}"; do [ "${fault[$f]}" = "$1" ] && echo "$f"; done; }
args=()
for i in "${!fault[@]}"; do args+=(--fault "$i:${fault[$i]}"); done
run faults "${args[@]}"
if within faults "$(awk -v t="$TIMEOUT" 'BEGIN{print t * 1.5 + 1}')"; then
	tap_ok "faults: every node done within the bound (wall $(wall faults) s, timeout $TIMEOUT s)"
else
	tap_fail "faults: took $(wall faults) s, bound $TIMEOUT s"
fi
if ! grep -q '^hung' "$tmp/faults.out"; then tap_ok "faults: no node hung"; else tap_fail "faults: hung nodes" "$(grep '^hung' "$tmp/faults.out")"; fi
name() { printf 'sim%04d' "$1"; }
near() { # near I: the fault within distance 2 of node I, or ""
	local i=$1 f
	for f in "${!fault[@]}"; do
		[ $(((i - f + N) % N)) -le 2 ] || [ $(((f - i + N) % N)) -le 2 ] && { echo "$f"; return; }
	done
}
for f in $(printf '%s\n' "${!fault[@]}" | sort -n); do
	kind=${fault[$f]} fn=$(name "$f")
	[ "$kind" = badcred ] && continue # an authentication failure: below
	# Every failure finding in the neighbourhood names the faulty node, and
	# at least two of its neighbours say so.
	blamers=0 wrong=""
	for d in -2 -1 1 2; do
		i=$(((f + d + N) % N))
		line=$(grep "^node $i " "$tmp/faults.out")
		case "$line" in
		*" fail "*)
			codes=${line##*codes=}; codes=${codes%% *}
			for c in ${codes//,/ }; do
				case "$c" in
				rdmatest_node_failed@*|rdmatest_link_failed@*)
					[ "${c#*@}" = "$fn" ] && blamers=$((blamers + 1)) || wrong+=" $i:$c" ;;
				esac
			done ;;
		*" pass "*) ;;
		*) wrong+=" $i:no-result" ;;
		esac
	done
	if [ "$blamers" -ge 2 ] && [ -z "$wrong" ]; then
		tap_ok "fault $kind on $fn: blamed by $blamers neighbours, nobody else blamed"
	else
		tap_fail "fault $kind on $fn: $blamers neighbours blame it; wrong:$wrong" \
			"$(for d in -2 -1 0 1 2; do grep -A2 "^node $(((f + d + N) % N)) " "$tmp/faults.out"; done)"
	fi
done
# A node whose munged has another key: its links fail authentication, and
# nobody is blamed for it (a squatter or a relay looks the same from here).
f=$(pos badcred) fn=$(name "$f") named=0 wrong=""
for d in -2 -1 0 1 2; do
	i=$(((f + d + N) % N))
	line=$(grep "^node $i " "$tmp/faults.out")
	codes=${line##*codes=}; codes=${codes%% *}
	for c in ${codes//,/ }; do
		case "$c" in
		rdmatest_node_failed@*|rdmatest_link_failed@*) wrong+=" $i:$c" ;;
		rdmatest_auth_failed@*) [ "$d" != 0 ] && named=$((named + 1)) ;;
		esac
	done
	[[ "$line" == *"suspects= "* ]] || wrong+=" $i:suspects"
done
if [ "$named" -ge 2 ] && [ -z "$wrong" ]; then
	tap_ok "fault badcred on $fn: $named neighbours report the authentication failure, nobody is blamed"
else
	tap_fail "fault badcred on $fn: $named neighbours report it; blamed:$wrong" \
		"$(for d in -2 -1 0 1 2; do grep -A2 "^node $(((f + d + N) % N)) " "$tmp/faults.out"; done)"
fi
# The faulty node itself, where it ran to the end, names itself.
for f in $(pos slow) $(pos corrupt); do
	line=$(grep "^node $f " "$tmp/faults.out")
	if [[ "$line" == *" fail "*"suspects=$(name "$f")"* ]]; then
		tap_ok "fault ${fault[$f]} on $(name "$f"): the node blames itself"
	else
		tap_fail "fault ${fault[$f]} on $(name "$f"): it does not blame itself" "$line"
	fi
done
# Everyone further away passes.
bad_far=""
while read -r _ i _ verdict _; do
	[ -n "$(near "$i")" ] && continue
	[ "$verdict" = pass ] || bad_far+=" $i:$verdict"
done < <(grep '^node ' "$tmp/faults.out")
if [ -z "$bad_far" ]; then tap_ok "faults: every node away from a fault passes"; else tap_fail "faults: innocent nodes failed:$bad_far"; fi
# Specific verdicts per fault kind.
check_kind() { # check_kind NODE WORDS: a neighbour's finding text mentions WORDS
	local f=$1 words=$2
	if grep -A3 -E "^node $(((f + 1) % N)) |^node $(((f + 2) % N)) " "$tmp/faults.out" | grep -q "$words"; then
		tap_ok "fault ${fault[$f]}: reported as '$words'"
	else
		tap_fail "fault ${fault[$f]}: no '$words' in the neighbours' findings" \
			"$(grep -A3 -E "^node $(((f + 1) % N)) " "$tmp/faults.out")"
	fi
}
check_kind "$(pos refuse)" "unreachable"
check_kind "$(pos silent)" "unreachable"
check_kind "$(pos corrupt)" "data corrupted"
check_kind "$(pos badcred)" "failed authentication"

# --- hostile peers (issue 9, test g) --------------------------------------
# A local user floods node 5's test ports with garbage, truncated, wrong-
# version and forged hellos (complete ones with fresh nonces too), a
# slowloris and a connection flood, both from
# an address outside the step and from the address of node 4 (the step node
# node 5 receives from first, started 300 ms late), while the test runs:
# every link passes and node 5 reports the flood, both kinds.
run hostile --hostile 5 --fault 4:late
npass=$(grep -c '^node .* pass ' "$tmp/hostile.out")
if [ "$npass" -eq "$N" ]; then
	tap_ok "hostile: all $N nodes pass while node 5 is attacked"
else
	tap_fail "hostile: $npass of $N pass" "$(grep '^node' "$tmp/hostile.out" | grep -v ' pass ' | head -5; tail -5 "$tmp/hostile.err")"
fi
d5=$(grep '^node 5 ' "$tmp/hostile.out" | grep -o 'dropped=[0-9]*' | cut -d= -f2)
if [ "${d5:-0}" -ge 5 ]; then tap_ok "hostile: node 5 dropped $d5 hostile connections and said so"; else tap_fail "hostile: node 5 dropped ${d5:-0} connections" "$(grep -A3 '^node 5 ' "$tmp/hostile.out")"; fi
if grep -A3 '^node 5 ' "$tmp/hostile.out" | grep 'rdmatest_dropped_connections\|dropped [0-9]* connections' | grep -q 'outside the step' &&
	grep -A3 '^node 5 ' "$tmp/hostile.out" | grep -q "from peers' addresses"; then
	tap_ok "hostile: the report tells the flood from outside the step from the one from a step node's address"
else
	tap_fail "hostile: the report does not name both sources" "$(grep -A3 '^node 5 ' "$tmp/hostile.out")"
fi
# Complete hellos with fresh nonces from node 4's address (six per 20 ms,
# for 300 ms before node 4 itself starts: --fault 4:late): munged checks
# the forged credential once, whatever its nonce, and node 4's genuine
# link still passes.
c5=$(grep '^node 5 ' "$tmp/hostile.out" | grep -o 'cred_checks=[0-9]*' | cut -d= -f2)
if [ -n "$c5" ] && [ "$c5" -le 24 ]; then
	tap_ok "hostile: a flood of complete hellos costs node 5 $c5 credential checks in all (genuine ones included)"
else
	tap_fail "hostile: node 5's credential checks are not bounded" "cred_checks=${c5:-none}; $(grep -A3 '^node 5 ' "$tmp/hostile.out")"
fi
if within hostile "$(awk -v t="$TIMEOUT" 'BEGIN{print t + 1}')"; then tap_ok "hostile: within the bound (wall $(wall hostile) s)"; else tap_fail "hostile: took $(wall hostile) s"; fi
grep -A3 '^node 5 ' "$tmp/hostile.out" | sed 's/^/# /'

# --- a flood of fresh credentials (issue 26 item 7) ------------------------
# The same, each complete hello with a fresh credential minted by the local
# user's munged (hundreds in the run): munged checks at most 64 from node
# 4's address; whether node 4's genuine hello came before that bound or
# after (then its link fails as an authentication failure, saying why),
# nobody is blamed.
mkdir -p "$tmp/minted"
"$sim" --nodes 16 --timeout "$TIMEOUT" --ports "$PORTS" --munge-socket "$good" --hostile 5 --hostile-minted \
	--fault 4:late --outdir "$tmp/minted" >"$tmp/minted.out" 2>&1
c5=$(grep '^node 5 ' "$tmp/minted.out" | grep -o 'cred_checks=[0-9]*' | cut -d= -f2)
d5=$(grep '^node 5 ' "$tmp/minted.out" | grep -o 'dropped=[0-9]*' | cut -d= -f2)
blamed=$(grep '^node ' "$tmp/minted.out" | grep -v 'suspects= ')
failed=$(grep '^node ' "$tmp/minted.out" | grep -v ' pass ')
if [ -n "$c5" ] && [ "$c5" -le 68 ] && [ "${d5:-0}" -gt "$c5" ] && [ -z "$blamed" ] &&
	{ [ -z "$failed" ] || { [ "$failed" = "$(grep '^node 5 ' "$tmp/minted.out")" ] &&
		grep -A6 '^node 5 ' "$tmp/minted.out" | grep -q 'over the 64 credential checks allowed from sim0004'; }; }; then
	tap_ok "minted flood: node 5 had munged check $c5 credentials ($d5 connections dropped), nobody blamed${failed:+, the link from node 4 refused saying why}"
else
	tap_fail "minted flood" "cred_checks=${c5:-none} dropped=${d5:-none}; $(grep -v '^#' "$tmp/minted.out" | grep -v ' pass ' | head -5); $(grep -A6 '^node 5 ' "$tmp/minted.out")"
fi

# --- a foreign program on a node's first test port -----------------------
mkdir -p "$tmp/squat"
"$sim" --nodes 16 --timeout "$TIMEOUT" --ports "$PORTS" --munge-socket "$good" --fault 4:squat \
	--outdir "$tmp/squat" >"$tmp/squat.out" 2>&1
p4=$(grep '^node 4 ' "$tmp/squat.out" | grep -o 'port=[0-9]*')
p5=$(grep '^node 5 ' "$tmp/squat.out" | grep -o 'port=[0-9]*')
if [ "$(grep -c '^node .* pass ' "$tmp/squat.out")" -eq 16 ] && [ -n "$p4" ] && [ "$p4" != "$p5" ]; then
	tap_ok "port taken on node 4: it listens on a fallback ($p4, others $p5) and every node passes"
else
	tap_fail "port taken on node 4" "$(grep -v '^#' "$tmp/squat.out" | head -8)"
fi

# --- a relay that alters one byte after the HELLO (issue 9, test b) -----
# Node 5's first test port is held by a relay that forwards every
# connection to node 5's fallback port from the sender's own address (so the
# HELLOs authenticate) and flips one bit of the sender's first sealed frame:
# the links into node 5 fail closed as "frames failed authentication", and
# nobody is blamed for it, node 5 least of all.
mkdir -p "$tmp/relay"
"$sim" --nodes 16 --timeout "$TIMEOUT" --ports "$PORTS" --munge-socket "$good" --fault 5:relay --job 4343 \
	--outdir "$tmp/relay" >"$tmp/relay.out" 2>&1
blamed=$(grep '^node ' "$tmp/relay.out" | grep -v 'suspects= ' ; grep -o 'rdmatest_node_failed@[^, ]*\|rdmatest_link_failed@[^, ]*' "$tmp/relay.out")
others=$(grep '^node ' "$tmp/relay.out" | awk '$2 != 3 && $2 != 4 && $2 != 5 && $4 != "pass"')
if [ -z "$blamed" ] && [ -z "$others" ] &&
	grep -A6 '^node 5 ' "$tmp/relay.out" | grep -q 'rdmatest_auth_failed' &&
	grep -A6 '^node 5 ' "$tmp/relay.out" | grep -q 'frames failed authentication' &&
	grep '^node 4 ' "$tmp/relay.out" | grep -q 'rdmatest_auth_failed'; then
	tap_ok "relay flips a byte after the HELLO into node 5: its links fail closed as 'frames failed authentication', nobody is blamed, the rest pass"
else
	tap_fail "relay into node 5" "$(grep -v '^#   ok' "$tmp/relay.out" | head -30)"
fi
grep -A4 -E '^node (4|5) ' "$tmp/relay.out" | grep -v '^#   ok' | sed 's/^/# /'

# --- one node of another spank-ib build (a rolling upgrade) --------------
# Node 6 of 16 speaks the protocol version before this build's (this build's
# code behind the test's link-time seam: rdmatest-sim --fault 6:version=V,
# nothing a job could set).  Its four peers say it answers with that
# version, it says they answer with this one, each naming the other node and
# both versions, as a warning; nobody is blamed, nothing fails, every other
# link passes.
cur=$(awk '$1 == "#define" && $2 == "IBP_OOB_VERSION" { print $3 }' include/ibprep/oob.h)
old=$((cur - 1))
mkdir -p "$tmp/version"
"$sim" --nodes 16 --timeout "$TIMEOUT" --ports "$PORTS" --munge-socket "$good" --fault "6:version=$old" --job 4444 \
	--outdir "$tmp/version" >"$tmp/version.out" 2>&1
said=0 wrong=""
for i in 4 5 7 8; do
	n=$(name "$i")
	grep "^node $i " "$tmp/version.out" | grep -q "rdmatest_version_mismatch@sim0006" &&
		grep -A6 "^node $i " "$tmp/version.out" | grep -q "warn: sim0006: answers with cross-node test protocol $old, $n speaks $cur" &&
		said=$((said + 1)) || wrong+=" $n"
	grep "^node 6 " "$tmp/version.out" | grep -q "rdmatest_version_mismatch@$n" &&
		grep -A6 '^node 6 ' "$tmp/version.out" | grep -q "warn: $n: answers with cross-node test protocol $cur, sim0006 speaks $old" ||
		wrong+=" sim0006-about-$n"
done
if [ "$said" -eq 4 ] && [ -z "$wrong" ]; then
	tap_ok "another build on node 6: its 4 peers name it with protocol $old against $cur, and it names each of them"
else
	tap_fail "another build on node 6: $said of 4 peers say so; missing:$wrong" "$(grep -A6 -E '^node [4-8] ' "$tmp/version.out" | head -40)"
fi
blamed=$(grep '^node ' "$tmp/version.out" | grep -v 'suspects= '; grep -o 'rdmatest_node_failed@[^, ]*\|rdmatest_link_failed@[^, ]*\|rdmatest_auth_failed@[^, ]*' "$tmp/version.out"; grep '^#   fail:' "$tmp/version.out")
if [ -z "$blamed" ]; then
	tap_ok "another build on node 6: nobody blamed, no failure finding on any node"
else
	tap_fail "another build on node 6: blamed or failed" "$blamed"
fi
others=$(grep '^node ' "$tmp/version.out" | awk '$2 < 4 || $2 > 8 { if ($4 != "pass") print }')
if [ -z "$others" ] && [ "$(grep -c '^node ' "$tmp/version.out")" -eq 16 ] && ! grep -q '^hung' "$tmp/version.out"; then
	tap_ok "another build on node 6: the 11 nodes away from it pass, none hung"
else
	tap_fail "another build on node 6: the others" "$others$(grep '^hung' "$tmp/version.out")"
fi
if within version "$(awk -v t="$TIMEOUT" 'BEGIN{print t * 1.5 + 1}')"; then tap_ok "another build on node 6: within the bound (wall $(wall version) s)"; else tap_fail "another build on node 6: took $(wall version) s"; fi
grep -A3 -E '^node (5|6) ' "$tmp/version.out" | sed 's/^/# /'

# --- insecure mode ------------------------------------------------------
mkdir -p "$tmp/insec"
"$sim" --nodes 4 --timeout 2 --ports "$PORTS" --insecure --outdir "$tmp/insec" >"$tmp/insec.out" 2>&1 || true
if [ "$(grep -c '^node .* pass ' "$tmp/insec.out")" -eq 4 ]; then tap_ok "insecure: 4 nodes pass without munge"; else tap_fail "insecure run" "$(cat "$tmp/insec.out")"; fi

# --- listeners bound before the start, as the plugin binds them ----------
mkdir -p "$tmp/prebind"
"$sim" --nodes 8 --timeout 2 --ports "$PORTS" --insecure --fingerprint --prebind --outdir "$tmp/prebind" >"$tmp/prebind.out" 2>&1 || true
ports=$(awk '/^node /{for (i = 6; i <= NF; i++) if ($i ~ /^port=/) print substr($i, 6)}' "$tmp/prebind.out" | sort -u)
if [ "$(grep -c '^node .* pass ' "$tmp/prebind.out")" -eq 8 ] && [ "$(wc -w <<< "$ports")" -eq 1 ] && [ "$ports" != 0 ]; then
	tap_ok "listeners bound before the start (--prebind): 8 nodes pass with the fingerprint, all on port $ports"
else
	tap_fail "listeners bound before the start (--prebind)" "ports: $ports; $(cat "$tmp/prebind.out")"
fi

# --- every rail: the across probes by the links, on the rails' own sockets ---
mkdir -p "$tmp/rails"
"$sim" --nodes 16 --timeout 3 --ports "$PORTS" --insecure --prebind --rails 4 --outdir "$tmp/rails" >"$tmp/rails.out" 2>&1 || true
joined=$(grep -c 'the rails reach each other' "$tmp/rails.out")
probes=$(grep '^node ' "$tmp/rails.out" | grep -o 'probes=[0-9]* landing=[0-9]*' | sort -u)
if [ "$(grep -c '^node .* pass ' "$tmp/rails.out")" -eq 16 ] && [ "$joined" -eq 16 ] && [ "$probes" = "probes=2 landing=0" ]; then
	tap_ok "4 rails on their own networks: 16 nodes pass, each with its 2 across probes answered (the rails reach each other), no landing probe"
else
	tap_fail "4 rails" "joined $joined, probes: $probes; $(grep -E '^node |reach' "$tmp/rails.out" | head -40)"
fi
tap_done
