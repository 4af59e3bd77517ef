#!/usr/bin/python3
# oneshot-observe.py: root's view of the plugin's one-shot watcher runs
# (tests/integration/test_spank_requeue_hostile.sh).
#
#   OBSERVE=PATTERN oneshot-observe.py OUT STOPFILE
#
# Until STOPFILE exists, polls /proc for processes whose command line holds
# PATTERN (e.g. "--requeue-now=yes"; from the environment, so that no
# command line of the test's own holds it) and writes one line per process and
# sight to OUT as soon as it has read it:
#
#   PID<TAB>UIDS<TAB>CAPEFF<TAB>EXE<TAB>ARGV (\x1f-separated)<TAB>ENV (\x1f-separated)
#
# UIDS is the Uid: line of /proc/PID/status (real, effective, saved, fs);
# EXE the executable's DEV:INODE (the same seen from a release's chroot).
# A process that is gone before all was read is left out of that sweep.
import os
import sys
import time


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    out, stop, pattern = sys.argv[1], sys.argv[2], os.environ["OBSERVE"].encode()
    me = str(os.getpid())
    seen = set()
    with open(out, "w") as f:
        while not os.path.exists(stop):
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or pid == me:
                    continue
                try:
                    cmd = read("/proc/%s/cmdline" % pid)
                    if pattern not in cmd:
                        continue
                    env = read("/proc/%s/environ" % pid)
                    st = os.stat("/proc/%s/exe" % pid)
                    exe = "%d:%d" % (st.st_dev, st.st_ino)
                    status = read("/proc/%s/status" % pid).decode(errors="replace")
                except OSError:
                    continue
                uids = caps = ""
                for line in status.splitlines():
                    if line.startswith("Uid:"):
                        uids = " ".join(line.split()[1:])
                    elif line.startswith("CapEff:"):
                        caps = line.split()[1]
                key = (pid, exe, env)
                if key in seen:
                    continue
                seen.add(key)
                argv = "\x1f".join(a.decode(errors="replace") for a in cmd.rstrip(b"\0").split(b"\0"))
                envs = "\x1f".join(a.decode(errors="replace") for a in env.rstrip(b"\0").split(b"\0"))
                f.write("%s\t%s\t%s\t%s\t%s\t%s\n" % (pid, uids, caps, exe, argv, envs))
                f.flush()
            time.sleep(0.001)


if __name__ == "__main__":
    main()
