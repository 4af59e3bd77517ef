#!/usr/bin/python3
# hostile.py: what a hostile local user (or a broken service) does to the
# cross-node test, for tests/integration/test_spank_rdmatest_hostile.sh.
# Started by the test (as the second user, inside a node's namespace, or as
# a fixture), ended by the test by its PID.  Writes one status line to
# STATUS ("ready ...") once it is in place.
#
#   squat STATUS LO HI         bind every port of LO..HI it can (0.0.0.0),
#                              answer every connection with a forged ERROR
#                              frame of the test's protocol
#   hold STATUS LO HI [LO HI]  bind and listen on every port it can, never accept
#   stall STATUS PATH          a Unix socket that accepts and never answers
#                              (a munged that hangs)
#   slow STATUS PATH UPSTREAM DELAY COUNT
#                              a Unix socket in front of munged's UPSTREAM
#                              whose answers to the first COUNT decode
#                              requests come DELAY seconds late (a loaded
#                              munged); everything else at once
#   stopper STATUS UID         the job's owner (run as UID) stopping its own test
#                              children: every "rdmatest --child" process of
#                              UID gets SIGSTOP as soon as it is seen;
#                              STATUS says "ready stopped N"
#   dns STATUS ADDR            a name server on ADDR:53 (UDP) that reads every
#                              query and never answers (a dead resolver);
#                              STATUS says "ready queries N"
#   relay STATUS PORT          the connections an nftables redirect sends to
#                              PORT: forwarded to their original destination
#                              (SO_ORIGINAL_DST), one byte flipped in the
#                              first frame after the HELLO towards it
import os
import select
import socket
import struct
import sys
import threading
import time


def ready(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.rename(path + ".tmp", path)


def bind_range(lo, hi, held):
    n = 0
    for port in range(lo, hi + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
            s.listen(64)
        except OSError:
            s.close()
            continue
        held.append(s)
        n += 1
    return n


# "IBPT", the version, type 5 (ERROR), payload: code -ENXIO, the text's
# length byte and its bytes (oob.h: every frame at its own length)
def forged_error():
    # A well-formed ERROR frame of the protocol version the test passes in
    # IBP_OOB_VERSION (include/ibprep/oob.h): it decodes, so what a
    # connector does with it is the real path, not a version refusal.
    version = int(os.environ.get("IBP_OOB_VERSION", "0"))
    if version <= 0:
        sys.exit("IBP_OOB_VERSION not set (the test reads it from include/ibprep/oob.h)")
    text = b"forged: no such step here"
    payload = struct.pack(">iB", -6, len(text)) + text
    return struct.pack(">IHHI", 0x49425054, version, 5, len(payload)) + payload


def squat(status, lo, hi):
    held = []
    n = bind_range(lo, hi, held)
    ready(status, "ready bound %d of %d" % (n, hi - lo + 1))
    while True:
        if not held:
            select.select([], [], [])
        r, _, _ = select.select(held, [], [])
        for s in r:
            try:
                c, _ = s.accept()
                c.settimeout(1)
                try:
                    c.recv(4096)
                except OSError:
                    pass
                c.sendall(forged_error())
                c.close()
            except OSError:
                pass


def hold(status, ranges):
    held = []
    n = 0
    total = 0
    for lo, hi in ranges:
        n += bind_range(lo, hi, held)
        total += hi - lo + 1
    ready(status, "ready bound %d of %d" % (n, total))
    while True:
        select.select([], [], [])


def stall(status, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen(64)
    ready(status, "ready")
    conns = []
    while True:
        c, _ = s.accept()
        conns.append(c)  # never answered, never closed


def slow(status, path, upstream, delay, count):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen(64)
    ready(status, "ready")
    lock = threading.Lock()
    seen = {"dec": 0, "all": 0}

    def serve(c):
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            u.connect(upstream)
            req = c.recv(65536)
            # munge's message header: magic (4), version (1), type (1);
            # type 4 is a decode request (MUNGE_MSG_DEC_REQ)
            with lock:
                seen["all"] += 1
                late = len(req) > 5 and req[5] == 4 and seen["dec"] < count
                if len(req) > 5 and req[5] == 4:
                    seen["dec"] += 1
                ready(status, "ready answered %d decoded %d" % (seen["all"], seen["dec"]))
            u.sendall(req)
            first = True
            while True:
                b = u.recv(65536)
                if not b:
                    break
                if first and late:
                    time.sleep(delay)
                first = False
                c.sendall(b)
        except OSError:
            pass
        c.close()
        u.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            return None
        b += d
    return b


def pump(src, dst, flip):
    # flip: None, or "after-hello": one byte inside the frame that follows
    # the first frame (the HELLO), whose length its 12-byte header gives.
    try:
        if flip:
            hdr = recv_exact(src, 12)
            if hdr is None:
                raise OSError
            plen = struct.unpack(">I", hdr[8:12])[0]
            body = recv_exact(src, plen)
            if body is None:
                raise OSError
            dst.sendall(hdr + body)
            nxt = recv_exact(src, 24)
            if nxt is None:
                raise OSError
            b = bytearray(nxt)
            b[20] ^= 0x01  # inside the next frame's payload
            dst.sendall(bytes(b))
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


SO_ORIGINAL_DST = 80


def relay(status, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    ready(status, "ready")
    n = 0
    while True:
        c, _ = s.accept()
        try:
            od = c.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
            dport = struct.unpack(">H", od[2:4])[0]
            daddr = socket.inet_ntoa(od[4:8])
            u = socket.create_connection((daddr, dport), timeout=2)
            u.settimeout(None)
        except OSError:
            c.close()
            continue
        n += 1
        ready(status, "ready relayed %d" % n)
        threading.Thread(target=pump, args=(c, u, "after-hello"), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, None), daemon=True).start()


def silent_dns(status, addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    ready(status, "ready queries 0")
    n = 0
    while True:
        s.recvfrom(4096)
        n += 1
        ready(status, "ready queries %d" % n)


def stopper(status, uid):
    # Its own test children ("rdmatest --child", after the exec: a fork of
    # slurmstepd before it could as well become one of the job's tasks).
    import signal
    done = set()
    stopped = 0
    ready(status, "ready stopped 0")
    while True:
        for p in os.listdir("/proc"):
            if not p.isdigit() or p in done:
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cmd = f.read()
                if cmd.startswith(b"slurmstepd"):
                    continue  # root's, or its fork not yet exec'ed: looked at again
                done.add(p)
                if b"rdmatest\0--child" not in cmd or os.stat("/proc/" + p).st_uid != uid:
                    continue
                os.kill(int(p), signal.SIGSTOP)
            except (OSError, ValueError):
                done.add(p)
                continue
            stopped += 1
            ready(status, "ready stopped %d" % stopped)
        time.sleep(0.0005)  # a child of a single-node step lives a few ms


def main(argv):
    mode, status = argv[1], argv[2]
    if mode == "squat":
        squat(status, int(argv[3]), int(argv[4]))
    elif mode == "hold":
        nums = [int(x) for x in argv[3:]]
        hold(status, list(zip(nums[0::2], nums[1::2])))
    elif mode == "stall":
        stall(status, argv[3])
    elif mode == "slow":
        slow(status, argv[3], argv[4], float(argv[5]), int(argv[6]))
    elif mode == "relay":
        relay(status, int(argv[3]))
    elif mode == "stopper":
        stopper(status, int(argv[3]))
    elif mode == "dns":
        silent_dns(status, argv[3])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)
