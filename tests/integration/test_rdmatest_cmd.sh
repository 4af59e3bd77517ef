#!/usr/bin/env bash
# test_rdmatest_cmd.sh: `ibprep rdmatest` by hand (the sanitizer build when
# present): argument errors exit 2 with a message that names the problem;
# three processes on 127.101.0.x with a private munged pass, with valid JSON;
# a missing node is named by the two others, each exiting 1; --insecure warns.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
B=${B:-build}
IBPREP=$B/asan/ibprep
[ -x "$IBPREP" ] || IBPREP=$B/ibprep
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
tmp=$(mktemp -d /tmp/ibp-rdmatest-cmd.XXXXXX)
chmod 0755 "$tmp"
munged_pid= slow_pid= pids=()
cleanup() {
	[ -n "$slow_pid" ] && kill "$slow_pid" 2>/dev/null
	[ -n "$munged_pid" ] && kill "$munged_pid" 2>/dev/null && wait "$munged_pid" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
if [ ! -x "$IBPREP" ]; then
	tap_skip "ibprep rdmatest" "$IBPREP not built (run make first)"
	tap_done
	exit
fi
hosts='c[1-3]' addrs=127.101.0.1,127.101.0.2,127.101.0.3

# expect_usage NAME WORDS ARGS...: exit 2 and stderr mentions WORDS
expect_usage() {
	local name=$1 words=$2 rc; shift 2
	"$IBPREP" rdmatest "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$words" "$tmp/err"; then
		tap_ok "usage: $name (exit 2, says '$words')"
	else
		tap_fail "usage: $name: exit $rc" "$(cat "$tmp/err")"
	fi
}
expect_usage "no host list" "--hosts is required" --index 0
expect_usage "malformed host list" "bad range" --hosts 'n[5-3]' --index 0
expect_usage "duplicate host" "appears twice" --hosts 'n[1-2],n1' --index 0
expect_usage "index out of range" "index out of range" --hosts "$hosts" --index 3
expect_usage "node not in the list" "not in --hosts" --hosts "$hosts" --node c9
expect_usage "address count" "fewer" --hosts "$hosts" --index 0 --addrs 127.101.0.1
# a malformed entry is named up front, never tried as a link (and never blamed on a node)
expect_usage "a truncated address" "'1.2.3' (entry 1, for c1) is not a numeric IPv4 or IPv6 address" \
	--hosts "$hosts" --index 1 --addrs 1.2.3,127.101.0.2,127.101.0.3 --transport socket --insecure
expect_usage "a typo in another node's address" "'abc' (entry 3, for c3) is not a numeric" \
	--hosts "$hosts" --index 0 --addrs 127.101.0.1,127.101.0.2,abc --transport socket --insecure
expect_usage "a name where a number goes" "'localhost' (entry 2, for c2)" \
	--hosts "$hosts" --index 0 --addrs 127.101.0.1,localhost,127.101.0.3 --transport socket --insecure
expect_usage "unknown policy key" "test_nonsense" --hosts "$hosts" --index 0 test_nonsense=1
expect_usage "bad transport" "test_transport" --hosts "$hosts" --index 0 --transport carrier-pigeon
expect_usage "bad mode" "bad value" --hosts "$hosts" --index 0 --mode fast
if [ ! -d /sys/class/infiniband ] || [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	expect_usage "verbs without an RDMA port" "no ACTIVE RDMA port" --hosts "$hosts" --index 0 --transport verbs
else
	tap_skip "usage: verbs without an RDMA port" "this machine has RDMA devices"
fi

# run3 TAG SKIP ARGS...: the three nodes at once (but index SKIP), each's exit
# status in $tmp/TAG.I.rc; waits for those processes only (munged runs on)
run3() {
	local tag=$1 skip=$2 i p pids=(); shift 2
	for i in 0 1 2; do
		[ "$i" = "$skip" ] && continue
		( "$IBPREP" rdmatest --hosts "$hosts" --index "$i" --addrs "$addrs" --transport socket \
			"$@" >"$tmp/$tag.$i.out" 2>"$tmp/$tag.$i.err"; echo $? >"$tmp/$tag.$i.rc" ) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
}

# --- with munge ---------------------------------------------------------
if [ "$(id -u)" -eq 0 ] && command -v munged >/dev/null && id munge >/dev/null 2>&1; then
	d=$tmp/munge
	mkdir -p "$d"
	mungekey --create --keyfile="$d/munge.key" >/dev/null 2>&1
	chown -R munge:munge "$d"
	setpriv --reuid=munge --regid=munge --init-groups munged --foreground --force \
		--socket="$d/munge.sock" --key-file="$d/munge.key" --pid-file="$d/munged.pid" \
		--log-file="$d/munged.log" --seed-file="$d/munged.seed" >/dev/null 2>&1 </dev/null &
	munged_pid=$!
	for _ in $(seq 1 100); do [ -S "$d/munge.sock" ] && break; sleep 0.05; done
	auth=(--munge-socket "$d/munge.sock")
else
	auth=(--insecure)
	tap_skip "munge" "needs root, munged and the munge user: running --insecure"
fi

run3 ok -1 "${auth[@]}" --job 31 --json test_timeout=5 test_max_lat_us=100000
all=ok
for i in 0 1 2; do
	[ "$(cat "$tmp/ok.$i.rc")" = 0 ] || all="node $i exit $(cat "$tmp/ok.$i.rc")"
done
if [ "$all" = ok ]; then tap_ok "three nodes pass (exit 0)"; else tap_fail "three nodes: $all" "$(cat "$tmp"/ok.*.err | tail -20)"; fi
if command -v jq >/dev/null; then
	if jq -e '.command == "rdmatest" and .verdict == "pass" and (.links | length) == 4 and
		all(.links[]; .status == "pass" and .gbps > 0 and .lat_us > 0)' "$tmp/ok.1.out" >/dev/null; then
		tap_ok "JSON: verdict pass, four passing links with bandwidth and round trip"
	else
		tap_fail "JSON of node 1" "$(head -40 "$tmp/ok.1.out")"
	fi
else
	tap_skip "JSON" "jq not installed"
fi

# A loaded munged on c2: its first two decodes (c1's HELLO, and c1's reply
# to c2's own HELLO) answered 1.7 s late, so c2's reply to c1's HELLO comes
# after c1 stopped waiting for it (a quarter of test_timeout=6: 1.5 s; round
# 1 ends at 40%, 2.4 s; libmunge itself retries a request after 2 s, so the
# delay must stay under that).  c1 gives up and connects again; c2 hands the
# first connection, closed before its first frame, back to the acceptor and
# takes the next: both links pass, nobody is "gone".
if [ -n "$munged_pid" ] && command -v python3 >/dev/null; then
	slow=$tmp/slow.status
	python3 tests/integration/lib/hostile.py slow "$slow" "$tmp/slow.sock" "$d/munge.sock" 1.7 2 \
		>"$tmp/slow.log" 2>&1 </dev/null &
	slow_pid=$!
	for _ in $(seq 1 100); do [ -s "$slow" ] && break; sleep 0.05; done
	for i in 0 1; do
		sock=$d/munge.sock
		[ "$i" = 1 ] && sock=$tmp/slow.sock
		( "$IBPREP" rdmatest --hosts 'c[1-2]' --index "$i" --addrs 127.101.0.1,127.101.0.2 \
			--transport socket --munge-socket "$sock" --job 34 --json test_timeout=6 \
			test_max_lat_us=1000000 >"$tmp/slow.$i.out" 2>"$tmp/slow.$i.err"
			echo $? >"$tmp/slow.$i.rc" ) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	pids=()
	kill "$slow_pid" 2>/dev/null
	wait "$slow_pid" 2>/dev/null
	decoded=$(sed -n 's/^ready answered [0-9]* decoded //p' "$slow")
	if [ "$(cat "$tmp/slow.0.rc")" = 0 ] && [ "$(cat "$tmp/slow.1.rc")" = 0 ] &&
		[ "${decoded:-0}" -ge 2 ]; then
		tap_ok "munged answers a HELLO's decode 1.7 s late: the connector retries, the listener takes the new connection, both links pass ($decoded decodes on c2)"
	else
		tap_fail "munged answers a HELLO's decode 1.7 s late: exit $(cat "$tmp/slow.0.rc") and $(cat "$tmp/slow.1.rc"), ${decoded:-0} decodes on c2" \
			"$(cat "$tmp"/slow.[01].out "$tmp"/slow.[01].err | grep -v '^ *[{}"\[]' | tail -20)"
	fi
else
	tap_skip "munged answers a HELLO's decode late" "needs the private munged above and python3"
fi

run3 miss 2 "${auth[@]}" --job 32 test_timeout=1.5 test_max_lat_us=100000
for i in 0 1; do
	rc=$(cat "$tmp/miss.$i.rc")
	if [ "$rc" = 1 ] && grep -q '^fail c3: rdma test unreachable' "$tmp/miss.$i.out" &&
		! grep -Eq '^fail c[12]:' "$tmp/miss.$i.out"; then
		tap_ok "missing c3: node c$((i + 1)) exits 1 and names c3, and only c3"
	else
		tap_fail "missing c3 seen from c$((i + 1)): exit $rc" "$(cat "$tmp/miss.$i.out" "$tmp/miss.$i.err")"
	fi
done

run3 insec -1 --insecure --job 33 test_timeout=5 test_max_lat_us=100000
if grep -q 'warning: --insecure: neither the connections nor the frames are authenticated' "$tmp/insec.0.err" &&
	[ "$(cat "$tmp/insec.0.rc")" = 0 ]; then
	tap_ok "--insecure passes and warns that neither connections nor frames are authenticated"
else
	tap_fail "--insecure" "$(cat "$tmp/insec.0.out" "$tmp/insec.0.err")"
fi
# Ports: as root the privileged default is bound (the test above); a range in
# the ephemeral range is refused naming both; as another user the command says
# what it cannot guarantee, or refuses a privileged range it cannot bind.
read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range
expect_usage "test_ports= in the ephemeral range" "overlaps the node's ephemeral port range $elo-$ehi" \
	--hosts "$hosts" --index 0 --addrs "$addrs" --transport socket --insecure "test_ports=$elo-$((elo + 10))"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	asnobody "$IBPREP" rdmatest --hosts c1 --index 0 --transport socket --insecure \
		>"$tmp/user.out" 2>"$tmp/user.err"
	rc=$?
	if [ $rc = 0 ] && grep -q "warning: not root: listening on unprivileged ports 61000-61999, which any local user can bind first" "$tmp/user.err"; then
		tap_ok "as a user: unprivileged ports, and it says what it cannot guarantee"
	else
		tap_fail "as a user: the warning" "exit $rc; $(cat "$tmp/user.err")"
	fi
	asnobody "$IBPREP" rdmatest --hosts c1 --index 0 --transport socket --insecure test_ports=230-299 \
		>"$tmp/userp.out" 2>"$tmp/userp.err"
	rc=$?
	if [ $rc = 2 ] && grep -q "test_ports=230-299 are privileged ports: only root can listen there" "$tmp/userp.err"; then
		tap_ok "as a user: a privileged range is refused with the reason (exit 2)"
	else
		tap_fail "as a user: a privileged range" "exit $rc; $(cat "$tmp/userp.err")"
	fi
else
	tap_skip "ibprep rdmatest as another user" "needs root and setpriv"
fi
if grep -qi 'sanitizer' "$tmp"/*.err 2>/dev/null; then
	tap_fail "sanitizers quiet" "$(grep -il sanitizer "$tmp"/*.err | head -3)"
else
	tap_ok "sanitizers quiet in every run"
fi
tap_done
