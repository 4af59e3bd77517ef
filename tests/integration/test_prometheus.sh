#!/usr/bin/env bash
# test_prometheus.sh: `ibprep check --prometheus` and `--textfile DIR` read by
# Debian's real prometheus-node-exporter: started on a free loopback port with
# only the textfile and infiniband collectors (the latter over the same
# simulated tree, --path.sysfs), recorded by PID and stopped by PID.  The
# metrics must appear in its /metrics with node_textfile_scrape_error 0, join
# node_exporter's own infiniband series on (device, port), survive hostile
# label values, and a textfile directory that is missing or not writable
# must give exit 2, a message and no file.
#   IBPREP / IBPREP_ASAN   the binaries (default build/ibprep, build/asan/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh

IBPREP=$(realpath -m "${IBPREP:-build/ibprep}")
IBPREP_ASAN=$(realpath -m "${IBPREP_ASAN:-build/asan/ibprep}")
NE=$(command -v prometheus-node-exporter || command -v node_exporter)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}

skip_all() {
	tap_skip "prometheus textfile" "$1"
	tap_done
	exit
}
[ -n "$NE" ] || skip_all "prometheus-node-exporter missing (contrib/install-deps.sh)"
command -v python3 >/dev/null || skip_all "python3 missing: cannot generate trees"
command -v curl >/dev/null || skip_all "curl missing (contrib/install-deps.sh)"
[ -x "$IBPREP" ] || skip_all "$IBPREP is not built (make)"

T=$(mktemp -d /tmp/test_prometheus.XXXXXX)
chmod 0755 "$T"
NE_PID=
TEST_USER=
cleanup() {
	if [ -n "$NE_PID" ]; then
		kill "$NE_PID" 2>/dev/null
		wait "$NE_PID" 2>/dev/null
	fi
	[ -n "$TEST_USER" ] && userdel "$TEST_USER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

gen() { python3 tests/fixtures/mksysfs.py "$@" >/dev/null; }
gen --preset dgx-h100 --gdr --node gpu001 "$T/ok"
gen --preset dgx-h100 --gdr --node gpu017 --fault mlx5_3/1:width=1X --fault mlx5_4:down \
	--fault mlx5_5:pcie=16:8 "$T/bad"
python3 tests/fixtures/mktopo.py --preset dgx-h100 "$T/topo.xml" >/dev/null
TF=$T/textfile
mkdir -p "$TF"

# parse.py FILE|-: the exposition as JSON {"name{sorted labels}": value}, failing on bad lines
cat >"$T/parse.py" <<'PY'
import json, re, sys
src = sys.stdin if sys.argv[1] == "-" else open(sys.argv[1])
out = {}
lab = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
for line in src:
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)', line)
    if not m:
        sys.exit("bad line: %r" % line)
    labels = {}
    if m.group(2):
        body = m.group(2)[1:-1]
        pos = 0
        while pos < len(body):
            lm = lab.match(body, pos)
            if not lm:
                sys.exit("bad labels: %r" % line)
            v = lm.group(2).replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
            labels[lm.group(1)] = v
            pos = lm.end()
            if pos < len(body):
                if body[pos] != ",":
                    sys.exit("bad labels: %r" % line)
                pos += 1
    key = m.group(1) + json.dumps(labels, sort_keys=True)
    if key in out:
        sys.exit("duplicate series: %s" % key)
    out[key] = float(m.group(3))
json.dump(out, sys.stdout)
PY
# has JSONFILE NAME LABELS-JSON VALUE
has() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = sys.argv[2] + json.dumps(json.loads(sys.argv[3]), sort_keys=True)
want = float(sys.argv[4])
sys.exit(0 if d.get(k) == want else "%s = %r, want %r" % (k, d.get(k), want))
PY
}

# --prometheus on stdout: well formed, the verdict, findings, pairs; plain and ASan
for BIN in "$IBPREP" "$IBPREP_ASAN"; do
	tag=$(basename "$(dirname "$BIN")")/ibprep
	[ -x "$BIN" ] || { tap_skip "$tag --prometheus" "$BIN not built"; continue; }
	out=$("$BIN" check --sysfs-root "$T/bad" --topology "$T/topo.xml" --prometheus 2>"$T/err")
	rc=$?
	if [ $rc -ne 1 ] || grep -q Sanitizer "$T/err"; then
		tap_fail "$tag --prometheus: exit $rc, want 1 (unhealthy), no sanitizer report" "$(cat "$T/err")"
	elif ! python3 "$T/parse.py" - <<<"$out" >"$T/stdout.json" 2>"$T/perr"; then
		tap_fail "$tag --prometheus: exposition well formed" "$(cat "$T/perr")"
	elif has "$T/stdout.json" ibprep_check_verdict '{"verdict":"fail"}' 1 &&
		has "$T/stdout.json" ibprep_finding \
			'{"code":"width_degraded","severity":"fail","class":"node","device":"mlx5_3","port":"1"}' 1 &&
		has "$T/stdout.json" ibprep_port_healthy '{"device":"mlx5_4","port":"1"}' 0 &&
		has "$T/stdout.json" ibprep_port_link_width_lanes '{"device":"mlx5_3","port":"1"}' 1 &&
		has "$T/stdout.json" ibprep_hca_pcie_downtrained '{"device":"mlx5_5","pci":"0000:5e:00.0"}' 1 &&
		has "$T/stdout.json" ibprep_gpu_hca_pair \
			'{"gpu":"5","gpu_pci":"0000:c3:00.0","device":"mlx5_9","port":"1","distance":"PIX"}' 1 &&
		has "$T/stdout.json" ibprep_gpudirect_module_loaded '{"module":"nvidia_peermem"}' 1; then
		tap_ok "$tag --prometheus: verdict, findings, port health, width, PCIe, GPU-HCA pairs, GDR"
	else
		tap_fail "$tag --prometheus: content" "$out"
	fi
done
out=$("$IBPREP" check --sysfs-root "$T/ok" --json --prometheus 2>&1)
[ $? -eq 2 ] && grep -q "choose one" <<<"$out" && tap_ok "--json with --prometheus: exit 2" ||
	tap_fail "--json with --prometheus: exit 2" "$out"

# node_exporter on a free loopback port
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$NE" --web.listen-address="127.0.0.1:$PORT" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$TF" \
	--collector.infiniband --path.sysfs="$T/ok/sys" >"$T/ne.log" 2>&1 &
NE_PID=$!
up=0
for _ in $(seq 1 100); do
	curl -sf -m 2 "http://127.0.0.1:$PORT/metrics" -o /dev/null && { up=1; break; }
	kill -0 "$NE_PID" 2>/dev/null || break
	sleep 0.1
done
if [ $up != 1 ]; then
	tap_fail "node_exporter answers on 127.0.0.1:$PORT" "$(tail -5 "$T/ne.log")"
	tap_done
	exit
fi
tap_ok "node_exporter $("$NE" --version 2>&1 | head -1 | awk '{print $3}') answers on 127.0.0.1:$PORT (pid $NE_PID)"

scrape() { curl -sf -m 5 "http://127.0.0.1:$PORT/metrics" | grep -E '^(ibprep_|node_textfile_scrape_error|node_infiniband_state_id)' | python3 "$T/parse.py" - >"$T/scrape.json"; }

"$IBPREP" check --sysfs-root "$T/ok" --topology "$T/topo.xml" --textfile "$TF" >"$T/out" 2>&1
rc=$?
scrape
if [ $rc -eq 0 ] && [ ! -s "$T/out" ] && [ "$(ls -A "$TF")" = spank_ib.prom ] &&
	has "$T/scrape.json" node_textfile_scrape_error '{}' 0 &&
	has "$T/scrape.json" ibprep_check_verdict '{"verdict":"pass"}' 1 &&
	has "$T/scrape.json" ibprep_build_info "{\"version\":\"$("$IBPREP" --version | awk '{print $2}')\"}" 1 &&
	has "$T/scrape.json" ibprep_port_healthy '{"device":"mlx5_0","port":"1"}' 1; then
	tap_ok "--textfile: healthy tree, exit 0, quiet, only spank_ib.prom; node_exporter serves it (build_info = ibprep --version), scrape_error 0"
else
	tap_fail "--textfile healthy: exit $rc" "$(cat "$T/out"; ls -A "$TF"; cat "$T/scrape.json")"
fi

# the join with node_exporter's infiniband collector: the same (device, port) pairs
if python3 - "$T/scrape.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def pairs(name):
    s = set()
    for k in d:
        if k.startswith(name + "{"):
            l = json.loads(k[len(name):])
            s.add((l["device"], l["port"]))
    return s
a, b = pairs("ibprep_port_healthy"), pairs("node_infiniband_state_id")
sys.exit(0 if a and a == b else "ibprep %s vs node_exporter %s" % (sorted(a), sorted(b)))
PY
then
	tap_ok "labels join: ibprep_port_healthy and node_infiniband_state_id have the same (device, port)"
else
	tap_fail "labels join with node_exporter's infiniband collector"
fi

"$IBPREP" check --sysfs-root "$T/bad" --textfile "$TF" >"$T/out" 2>&1
rc=$?
scrape
if [ $rc -eq 1 ] && has "$T/scrape.json" node_textfile_scrape_error '{}' 0 &&
	has "$T/scrape.json" ibprep_check_verdict '{"verdict":"fail"}' 1 &&
	has "$T/scrape.json" ibprep_finding \
		'{"code":"port_not_active","severity":"fail","class":"node","device":"mlx5_4","port":"1"}' 1 &&
	has "$T/scrape.json" ibprep_finding \
		'{"code":"pcie_downtrained","severity":"fail","class":"node","device":"mlx5_5","port":""}' 1; then
	tap_ok "--textfile: faulty tree, exit 1; findings served by node_exporter, scrape_error 0"
else
	tap_fail "--textfile faulty: exit $rc" "$(cat "$T/out"; cat "$T/scrape.json")"
fi

# hostile label values: a device whose name has a quote, a backslash and a newline
cp -a "$T/ok" "$T/hostile"
mv "$T/hostile/sys/class/infiniband/mlx5_0" "$T/hostile/sys/class/infiniband/mlx5_\"q\\
x"
"$IBPREP" check --sysfs-root "$T/hostile" --textfile "$TF" >"$T/out" 2>&1
scrape
if has "$T/scrape.json" node_textfile_scrape_error '{}' 0 &&
	has "$T/scrape.json" ibprep_port_healthy '{"device":"mlx5_\"q\\\nx","port":"1"}' 1; then
	tap_ok "a device name with quote, backslash and newline is escaped: node_exporter reads it back"
else
	tap_fail "hostile label values" "$(cat "$T/out"; cat "$TF/spank_ib.prom" | grep -a port_healthy; cat "$T/scrape.json")"
fi

# bad input: a missing directory, a file, a directory the user cannot write
cp "$TF/spank_ib.prom" "$T/before"
for d in "$T/missing" "$TF/spank_ib.prom"; do
	out=$("$IBPREP" check --sysfs-root "$T/ok" --textfile "$d" 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && grep -q "cannot write $d/spank_ib.prom" <<<"$out" && [ ! -e "$T/missing" ]; then
		tap_ok "--textfile $(basename "$d") (not a directory): exit 2, message"
	else
		tap_fail "--textfile $(basename "$d"): exit $rc, want 2" "$out"
	fi
done
TEST_USER=ibpprom$$
if useradd -M -d /nonexistent -s /usr/sbin/nologin "$TEST_USER" 2>"$T/uerr"; then
	ro=$T/rootonly
	mkdir -m 0755 "$ro"
	cp "$T/before" "$ro/spank_ib.prom"
	out=$(setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --clear-groups \
		"$IBPREP" check --sysfs-root "$T/bad" --textfile "$ro" 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && grep -q "Permission denied" <<<"$out" &&
		[ "$(ls -A "$ro")" = spank_ib.prom ] && cmp -s "$ro/spank_ib.prom" "$T/before"; then
		tap_ok "--textfile in a directory the user cannot write: exit 2, message, old file intact, no temporary"
	else
		tap_fail "--textfile not writable: exit $rc" "$out; $(ls -A "$ro")"
	fi
	userdel "$TEST_USER" 2>/dev/null
	TEST_USER=
else
	tap_skip "--textfile not writable" "cannot create a test user: $(cat "$T/uerr")"
fi
scrape
has "$T/scrape.json" node_textfile_scrape_error '{}' 0 && tap_ok "node_exporter still scrapes without error" ||
	tap_fail "node_exporter still scrapes without error" "$(cat "$T/scrape.json")"

# the systemd units parse (when systemd-analyze is there)
if command -v systemd-analyze >/dev/null; then
	u=$T/units
	mkdir -p "$u"
	sed "s|@BINDIR@|$(dirname "$IBPREP")|; s|@DEFAULTSDIR@|/etc/default|" contrib/systemd/spank-ib-textfile.service.in >"$u/spank-ib-textfile.service"
	cp contrib/systemd/spank-ib-textfile.timer "$u/"
	out=$(cd "$u" && systemd-analyze verify --man=no spank-ib-textfile.timer spank-ib-textfile.service 2>&1)
	if [ -z "$out" ]; then
		tap_ok "systemd-analyze verify: the timer and the service"
	else
		tap_fail "systemd-analyze verify" "$out"
	fi
else
	tap_skip "systemd units" "systemd-analyze missing"
fi

kill "$NE_PID" && wait "$NE_PID" 2>/dev/null
NE_PID=
tap_done
