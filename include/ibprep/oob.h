/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * oob.h: the out-of-band exchange of the cross-node test: versioned,
 * binary messages, one encoder and one decoder that check every field, and
 * framed reads and writes under poll() deadlines.
 *
 * Wire format (all integers big-endian):
 *
 *   header   magic "IBPT" u32 | version u16 | type u16 | payload length u32
 *            (these 12 bytes, in this order and size, are the part every
 *            version keeps: whatever a later version changes, any build
 *            can read which version a peer speaks, and the finding says
 *            "n7 answers with protocol 5" instead of a failed handshake)
 *   payload  each frame at its own length: fixed fields, then what the
 *            message holds and no more (a credential, a string, a table:
 *            its length or count, then its bytes or entries), between the
 *            type's minimum and maximum (ibp_oob_payload_min/_max).  A
 *            length outside the type's bounds is refused before a byte of
 *            payload is read; the payload must then be consumed exactly
 *   seal     ENDPOINT, CTRL, SUMMARY, FINGERPRINT, FPSUM and BATCH frames are followed by
 *            a sequence number and a MAC (seal.h); HELLO and ERROR are not
 *
 * Anyone on the cluster can connect to the test's ports, so the decoder
 * trusts nothing: wrong magic, version, type or length, an enum out of
 * range, a string without its NUL or with non-printable bytes, non-zero
 * padding, a count above its array, an index outside the node count: all
 * -EBADMSG (-EPROTONOSUPPORT for another version: ibp_oob_header_version()
 * reads it; a claim, like everything before the HELLOs authenticate).
 * ibp_oob_encode() runs the same checks, so this side never sends what the
 * other would refuse.
 *
 * In memory, struct ibp_oob_msg holds the small messages (HELLO, ENDPOINT,
 * CTRL, ERROR; under 1 KB); the large ones (SUMMARY, FINGERPRINT, FPSUM:
 * 1, 9 and 22 KB) stay where their caller keeps them, by pointer, and a
 * frame is encoded from and decoded into them directly.
 *
 * No globals; callable from any thread.  Only the framed I/O allocates: a
 * frame larger than IBP_OOB_SMALL_FRAME (FINGERPRINT, FPSUM) is read or
 * written through the heap, every other one through the stack.
 */
#ifndef IBPREP_OOB_H
#define IBPREP_OOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/fingerprint.h"
#include "ibprep/transport.h"

#define IBP_OOB_MAGIC 0x49425054u /* "IBPT" */
/*
 * 2: sealed frames; 3: FINGERPRINT; 4: plan, leaves; 5: FPSUM; 6: FPSUM from both
 * ends; 7: link status VERSION; 8: variable-length (compact) FINGERPRINT; 9: and FPSUM;
 * 10: the sum's own connections (HELLO round 3, NO_RING); 11: Poly1305 tags (seal.h);
 * 12: a leaf's FPSUM on the ring round's link, before its ENDPOINT, the answer at the summary
 * 13: the sum's tree over clusters of 3 places (rdmatest.h): two leaves per head
 * 14: up to 5 nodes (no sum), the FINGERPRINT before the ENDPOINT on rail-0 links
 * 15: one connection per round and direction carries every rail, the rails in phases
 * 16: HELLO credentials from the test's own uid (auth.h cred_uid), decodable by it alone
 * 17: CTRL MEASURE_AGAIN: a link's burst and round trips measured again after a miss
 * 18: every frame at its own length: HELLO's credential, ENDPOINT's device and leaf,
 *     SUMMARY's links and leaves, ERROR's text as long as they are (no padding, no
 *     reserved fields)
 * 19: the socket transport's rails beyond rail 0 over datagrams (transport.h): ENDPOINT's
 *     psn their UDP port, a pattern of at most 1 KiB with the data path, no burst
 * 20: no FIN on those datagram rails: the receiver's exchange ends at its REPLY (a 19
 *     receiver would wait for the FIN), a HELLO sent again answered until the next CTRL
 * 21: BATCH: a link's CTRL frames of one step, every rail's, under one seal
 * 22: a link's ENDPOINT frames, every rail's, in one BATCH too; cross-rail probes to a
 *     datagram rail are datagrams (PROBE, answered by the receiver's UDP socket): a
 *     datagram receiver has no TCP listener
 */
#define IBP_OOB_VERSION 22
#define IBP_OOB_HDR_LEN 12

#define IBP_OOB_CRED_MAX   640 /* a munge credential for our payload is ~250 chars */
#define IBP_OOB_MAX_LINKS  64  /* links one node reports: 2 rounds x 2 directions x 16 rails */
#define IBP_OOB_TEXT_MAX   96
#define IBP_OOB_MAX_RAILS  16
#define IBP_OOB_MAX_NODES  65536
#define IBP_OOB_LEAF_MAX   64 /* a leaf switch's name with its NUL (IBP_NODE_MAX) */
#define IBP_OOB_MAX_LEAVES 5  /* a summary's leaf table: the sender and its 4 peers */

enum ibp_oob_type {
	IBP_OOB_HELLO = 1,    /* who I am, with my credential (both directions) */
	IBP_OOB_ENDPOINT = 2, /* my transport endpoint for one rail */
	IBP_OOB_CTRL = 3,     /* a step of the link test */
	IBP_OOB_SUMMARY = 4,  /* my link outcomes, for the blame */
	IBP_OOB_ERROR = 5,    /* "refused", then close; unauthenticated: trusted for nothing */
	IBP_OOB_FINGERPRINT =
	    6,             /* what the sender brings to the step (fingerprint.h), rail 0 only */
	IBP_OOB_FPSUM = 7, /* the step-wide fingerprint sum: its own connections, a leaf's link */
	IBP_OOB_BATCH =
	    8, /* a step's ENDPOINT or CTRL frames, every rail's, under one seal (below) */
};

/* Outcome of one directed link: on the wire in SUMMARY, and in results. */
enum ibp_link_status {
	IBP_LINK_UNTESTED = 0,
	IBP_LINK_PASS = 1,
	IBP_LINK_UNREACHABLE = 2, /* no connection: refused, or no answer by the deadline */
	IBP_LINK_AUTH = 3,      /* no valid credential, or a frame failed its MAC: blames nobody */
	IBP_LINK_PROTOCOL = 4,  /* a malformed or unexpected message */
	IBP_LINK_TIMEOUT = 5,   /* connected, then stalled past the deadline */
	IBP_LINK_TRANSPORT = 6, /* the data path did not come up (QP, data socket) */
	IBP_LINK_CORRUPT = 7,   /* the pattern arrived damaged */
	IBP_LINK_BW_LOW = 8,    /* burst bandwidth under test_min_bw */
	IBP_LINK_LAT_HIGH = 9,  /* round trip over test_max_lat_us */
	IBP_LINK_GONE = 10,     /* the peer closed or reset mid-test */
	IBP_LINK_LOCAL = 11,    /* this end could not run it (resources, memlock) */
	/*
	 * Not tested: the peer's address answered with another protocol
	 * version, and nothing of this version failed authentication on the
	 * link (that would be IBP_LINK_AUTH).  Blames nobody.
	 */
	IBP_LINK_VERSION = 12,
	IBP_LINK_STATUS_COUNT
};

/*
 * An outcome's name, the one vocabulary of the cross-node test's messages,
 * `ibprep rdmatest --json` and the results log (results_log.h): "pass",
 * "unreachable", "timed out" ...  ibp_link_status_parse() is its inverse:
 * NAME (LEN bytes, no NUL needed) exactly as ibp_link_status_name() writes
 * it; 0, or -EINVAL for any other text.
 */
const char *ibp_link_status_name(enum ibp_link_status s);
int ibp_link_status_parse(const char *name, size_t len, enum ibp_link_status *out);

#define IBP_HELLO_REPLY    0x1u /* the listener's answer to a HELLO */
#define IBP_HELLO_INSECURE 0x2u /* no credential: the sender runs --insecure */
#define IBP_HELLO_NO_RAIL  0x4u /* in a reply: this node has no such rail (its n_rails) */
#define IBP_HELLO_NO_RING  0x8u /* in a reply to a ring HELLO: this node takes no part */
/*
 * A HELLO of this round (rail 0) opens the step-wide sum's own connection
 * from a node to its parent in the tree over the ring's places (below); it
 * carries nothing but FPSUM frames.  IBP_HELLO_NO_RING in the reply: the addressee
 * takes no part in the sum.
 */
#define IBP_OOB_RING_ROUND 3

/* On the wire: the fields in this order (no padding), CRED_LEN, then the credential's bytes. */
struct ibp_oob_hello {
	uint32_t job, step, uid;
	uint32_t from, to, nnodes; /* node indices: sender of this HELLO, its addressee */
	uint8_t round;             /* 1, 2, or IBP_OOB_RING_ROUND on rail 0 */
	uint8_t rail;
	uint8_t n_rails;   /* rails the sender of this HELLO tests (1..IBP_OOB_MAX_RAILS) */
	uint16_t flags;    /* IBP_HELLO_* */
	uint64_t nonce;    /* fresh per connection */
	uint64_t echo;     /* in a reply: the nonce of the HELLO it answers */
	uint16_t cred_len; /* bytes of cred used (printable ASCII), 0 when insecure */
	char cred[IBP_OOB_CRED_MAX]; /* NUL-terminated */
};

/* On the wire a string is a length byte and its bytes (printable, no NUL). */
struct ibp_oob_endpoint {
	uint16_t rail;
	uint32_t port;            /* HCA port number, for messages */
	char device[IBP_DEV_MAX]; /* NUL-terminated, printable */
	struct ibp_endpoint ep;
	/* the sender's leaf switch from its SLURM_TOPOLOGY_ADDR, "" unknown */
	char leaf[IBP_OOB_LEAF_MAX];
};

enum ibp_oob_ctrl_op {
	IBP_CTRL_READY = 1,          /* transport connected, go */
	IBP_CTRL_PATTERN_SENT = 2,   /* a = seed, b = length: announced before the data */
	IBP_CTRL_PATTERN_RESULT = 3, /* status 0 / -EBADMSG, a = bad offset */
	IBP_CTRL_BW_RESULT = 4,      /* status, a = bytes, b = ns */
	IBP_CTRL_LAT_RESULT = 5,     /* status, a = iterations, b = ns per round trip */
	IBP_CTRL_VERDICT = 6,        /* the sender's outcome: a = enum ibp_link_status */
	IBP_CTRL_ABORT = 7,          /* status = -errno of the local failure */
	/*
	 * After each measurement (burst and round trips), one per rail
	 * measured: a = 1 the sender measures this rail again (its figures
	 * missed a limit), 0 it is done; b = the next measurement's number,
	 * at most IBP_RDMATEST_MEASURES (rdmatest_link.c, again()).
	 */
	IBP_CTRL_MEASURE_AGAIN = 8,
	IBP_CTRL_OP_COUNT
};

struct ibp_oob_ctrl {
	uint8_t op;
	int32_t status; /* 0 or -errno (-4095 .. 0) */
	uint64_t a, b;
};

struct ibp_oob_link {
	uint32_t from, to;
	uint8_t round;
	uint8_t status; /* enum ibp_link_status */
	uint16_t rail;
};

/* A node's leaf switch as the sender of a summary knows it (from the node's own ENDPOINT). */
struct ibp_oob_leaf {
	uint32_t node;
	char name[IBP_OOB_LEAF_MAX]; /* NUL-terminated, printable, not empty */
};

/* On the wire: the first N_LINKS links and N_LEAVES leaves, each after its count. */
struct ibp_oob_summary {
	uint32_t node, nnodes;
	uint64_t plan; /* the sender's plan digest (ibp_rdmatest_plan), 0 = plain */
	uint8_t n_links;
	struct ibp_oob_link links[IBP_OOB_MAX_LINKS];
	uint8_t n_leaves;
	struct ibp_oob_leaf leaves[IBP_OOB_MAX_LEAVES];
};

/*
 * The reduction over the places 0..N-1 of the plan's ring (fingerprint.h),
 * along the tree of ibp_rdmatest_sum_tree (rdmatest.h): clusters of 3
 * places, the heads in a balanced binary tree.  A head has a connection of
 * its own to its parent (HELLO round IBP_OOB_RING_ROUND), opened before its
 * first link test; a leaf's sum and its answer travel on the ring round's
 * link with its head: the sum needs nothing but the fingerprints, so it
 * travels while the links are being tested.  An FPSUM frame is the only
 * one as large as 22 KB in memory: its owner keeps it (struct ibp_oob_msg
 * points at it).
 *
 *   GATHER  from a child to its parent: the sum of the child's range
 *   FINAL   the complete sum, from the root down
 *   BROKEN  the chain stopped at node ORIGIN: its connection with node
 *           FROM gave nothing usable (WHY); no sum (all zero in memory,
 *           nothing on the wire).  It spreads along the tree, and every
 *           node that learns it falls back to its neighbours'
 *           fingerprints (FINGERPRINT frames on the rail-0 links).
 *
 * About log2(N / 3) hops one after the other up, as many down.
 */
enum ibp_fpsum_phase { IBP_FPSUM_GATHER = 1, IBP_FPSUM_FINAL = 2, IBP_FPSUM_BROKEN = 3 };
enum ibp_fpsum_why {
	IBP_FPSUM_WHY_NONE = 0,
	IBP_FPSUM_WHY_LINK,    /* no connection with FROM */
	IBP_FPSUM_WHY_NO_FP,   /* FROM sent no fingerprint */
	IBP_FPSUM_WHY_BAD,     /* FROM's sum was not the one expected */
	IBP_FPSUM_WHY_NO_PART, /* FROM takes no part in the sum (IBP_HELLO_NO_RING, or said so) */
	IBP_FPSUM_WHY_COUNT
};

struct ibp_oob_fpsum {
	uint8_t phase;   /* enum ibp_fpsum_phase */
	uint8_t why;     /* BROKEN: enum ibp_fpsum_why; else 0 */
	uint32_t origin; /* BROKEN: where the chain stopped; else 0 */
	uint32_t from;   /* BROKEN: the neighbour of ORIGIN it stopped at; else 0 */
	struct ibp_fp_sum sum;
};

struct ibp_oob_error {
	int32_t code; /* -errno */
	char text[IBP_OOB_TEXT_MAX];
};

/*
 * A message: TYPE and what it holds.  The small ones are in U.  SUMMARY,
 * FINGERPRINT and FPSUM are the caller's, by pointer: to send one, point at
 * it; to receive one, point at where it may go.  A frame of one of these
 * types whose pointer is NULL is a type the reader takes nothing of there:
 * ibp_oob_decode checks its header and returns -ENOBUFS with TYPE set,
 * without reading its payload.
 */
struct ibp_oob_msg {
	uint16_t type; /* enum ibp_oob_type */
	union {
		struct ibp_oob_hello hello;
		struct ibp_oob_endpoint endpoint;
		struct ibp_oob_ctrl ctrl;
		struct ibp_oob_error error;
	} u;
	struct ibp_oob_summary *summary;
	struct ibp_fp *fingerprint;
	struct ibp_oob_fpsum *fpsum;
};

/* Payload sizes on the wire: each type's shortest and longest. */
#define IBP_OOB_HELLO_MIN     (6 * 4 + 1 + 1 + 2 + 1 + 8 + 8 + 2) /* insecure: no credential */
#define IBP_OOB_HELLO_MAX     (IBP_OOB_HELLO_MIN + IBP_OOB_CRED_MAX - 1)
#define IBP_OOB_EP_LEN        (1 + 1 + 2 + 4 * 6 + 8 + 8 + IBP_TX_GID_LEN + 2)
#define IBP_OOB_ENDPOINT_MIN  (2 + 4 + 1 + IBP_OOB_EP_LEN + 1) /* empty device and leaf */
#define IBP_OOB_ENDPOINT_MAX  (IBP_OOB_ENDPOINT_MIN + IBP_DEV_MAX - 1 + IBP_OOB_LEAF_MAX - 1)
#define IBP_OOB_CTRL_LEN      (1 + 4 + 8 + 8)
#define IBP_OOB_LINK_LEN      (4 + 4 + 1 + 1 + 2)
#define IBP_OOB_LEAF_WIRE_MAX (4 + 1 + IBP_OOB_LEAF_MAX - 1)
#define IBP_OOB_SUMMARY_MIN   (4 + 4 + 8 + 1 + 1) /* no link, no leaf */
#define IBP_OOB_SUMMARY_MAX                                                                        \
	(IBP_OOB_SUMMARY_MIN + IBP_OOB_MAX_LINKS * IBP_OOB_LINK_LEN +                              \
	 IBP_OOB_MAX_LEAVES * IBP_OOB_LEAF_WIRE_MAX)
#define IBP_OOB_ERROR_MIN (4 + 1)
#define IBP_OOB_ERROR_MAX (IBP_OOB_ERROR_MIN + IBP_OOB_TEXT_MAX - 1)
/* FPSUM: phase, why, origin, from, then (GATHER, FINAL) the sum's compact form */
#define IBP_OOB_FPSUM_HEAD_LEN (1 + 1 + 4 + 4)
#define IBP_OOB_FPSUM_MAX      (IBP_OOB_FPSUM_HEAD_LEN + IBP_FPS_WIRE_MAX)
/* BATCH: one CTRL frame (header and payload) at the least; more rails take more batches */
#define IBP_OOB_BATCH_MIN  (IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN)
#define IBP_OOB_BATCH_MAX  2048
#define IBP_OOB_MAX2(a, b) ((a) > (b) ? (a) : (b))
/* the longest frame of every type but FINGERPRINT and FPSUM (the SUMMARY's) */
#define IBP_OOB_SMALL_FRAME                                                                        \
	(IBP_OOB_HDR_LEN + IBP_OOB_MAX2(IBP_OOB_MAX2(IBP_OOB_HELLO_MAX, IBP_OOB_ENDPOINT_MAX),     \
					IBP_OOB_MAX2(IBP_OOB_SUMMARY_MAX, IBP_OOB_ERROR_MAX)))
/* the longest of all (an FPSUM's) */
#define IBP_OOB_FRAME_MAX (IBP_OOB_HDR_LEN + IBP_OOB_MAX2(IBP_OOB_FPSUM_MAX, IBP_FP_WIRE_MAX))

/*
 * The version this build speaks: IBP_OOB_VERSION.  A function in its own
 * object file (oob_version.c) for one reason: a test program may link its
 * own in front of the library to make one simulated node speak another
 * version (tests/tools/rdmatest-sim.c, --fault I:version=V).  Nothing at
 * run time can change it.
 */
unsigned ibp_oob_wire_version(void);

/*
 * The version in a frame header with the right magic, whatever its type
 * and length (the fixed part of the header, above): 0..65535, or -EBADMSG
 * (short, another magic).  Unauthenticated: only ever "the peer says".
 */
int ibp_oob_header_version(const uint8_t *buf, size_t len);

/*
 * The shortest and the longest payload of TYPE (equal for the fixed-size
 * types), 0 for an unknown type.
 */
size_t ibp_oob_payload_min(unsigned type);
size_t ibp_oob_payload_max(unsigned type);

/* "HELLO", "ENDPOINT", ... "FPSUM"; NULL for a type that does not exist. */
const char *ibp_oob_type_name(unsigned type);

/*
 * Why ibp_oob_decode_header refuses the header at BUF (LEN bytes), in words
 * for a message, into WHY (cut to WHYLEN): "CTRL frame of 40 payload
 * bytes, CTRL takes 21", "HELLO frame of 9000 payload bytes, HELLO takes
 * 47 to 686", "a frame of protocol 17, expected 18", "a frame of type 9,
 * which does not exist", "not a frame of this test (...)"; "" when the
 * header is good.  Returns what ibp_oob_decode_header returns.  What the
 * header says is the sender's claim: unauthenticated, only ever repeated.
 */
int ibp_oob_header_why(const uint8_t *buf, size_t len, char *why, size_t whylen);

/*
 * True for the types that only travel sealed, with a sequence number and a
 * MAC (seal.h): ENDPOINT, CTRL, SUMMARY, FINGERPRINT, FPSUM, BATCH.  HELLO and ERROR go before any key
 * exists; ibp_oob_send and ibp_oob_recv refuse the sealed types.
 */
bool ibp_oob_sealed(unsigned type);

/*
 * Checks every field of M as the decoder would.  0 or -EBADMSG (also for a
 * SUMMARY, FINGERPRINT or FPSUM without its pointer).
 */
int ibp_oob_msg_check(const struct ibp_oob_msg *m);

/*
 * Encodes M (header + payload) into BUF.  Frame length, -EBADMSG, -ENOSPC
 * (a buffer of IBP_OOB_HDR_LEN + ibp_oob_payload_max(type) always does;
 * IBP_OOB_SMALL_FRAME for every type but FINGERPRINT and FPSUM).
 */
int ibp_oob_encode(const struct ibp_oob_msg *m, uint8_t *buf, size_t len);

/*
 * Checks a header: 0 with *TYPE and *PAYLOAD_LEN set, -EBADMSG (magic, type,
 * a length outside the type's bounds) or -EPROTONOSUPPORT (version).
 */
int ibp_oob_decode_header(const uint8_t *buf, size_t len, unsigned *type, size_t *payload_len);

/*
 * Decodes one frame from BUF: frame length consumed, or -errno as above,
 * or -ENOBUFS (a SUMMARY, FINGERPRINT or FPSUM where M has no place for
 * one, and every BATCH: TYPE set, its payload unread).  Written: M's type and what that
 * type holds (U's member, cleared first, or the content M points at),
 * never M's pointers; after an error it is no message to use.
 */
int ibp_oob_decode(const uint8_t *buf, size_t len, struct ibp_oob_msg *m);

/*
 * BATCH (protocol 21; ENDPOINT frames since 22): a link's frames of one
 * step, every rail's, in one sealed frame (one MAC instead of one per
 * rail, seal.h): its payload is those frames one after the other, each as
 * ibp_oob_encode writes it (header and payload, no seal of its own),
 * IBP_OOB_BATCH_MIN to _MAX bytes.  Only ENDPOINT and CTRL frames travel
 * in a batch (IBP_OOB_BATCH_TYPES), and of those only the types its reader
 * expects at that step.
 *
 * ibp_oob_batch_header writes the header of a BATCH whose PAYLOAD_LEN bytes
 * of frames follow it at BUF + IBP_OOB_HDR_LEN: 0, or -EBADMSG (a length
 * outside the type's bounds).  ibp_oob_batch_next decodes the frame at
 * *OFF of a batch's payload (PAYLOAD, LEN bytes; *OFF 0 for the first)
 * into M and moves *OFF past it: 1, 0 at the payload's end, or -EBADMSG
 * (a frame whose type is not in TYPES & IBP_OOB_BATCH_TYPES, cut short, or
 * one that does not decode: the batch is then no use; *OFF is left at that
 * frame).  TYPES: IBP_OOB_TYPE_BIT of each type the caller takes here.
 * Only for a batch whose MAC was checked (seal.h).
 */
#define IBP_OOB_TYPE_BIT(type) (1u << (type))
#define IBP_OOB_BATCH_TYPES    (IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT) | IBP_OOB_TYPE_BIT(IBP_OOB_CTRL))
int ibp_oob_batch_header(uint8_t *buf, size_t payload_len);
int ibp_oob_batch_next(const uint8_t *payload, size_t len, size_t *off, unsigned types,
		       struct ibp_oob_msg *m);

/* Makes M an all-zero message of TYPE, with no content pointer. */
void ibp_oob_msg_clear(struct ibp_oob_msg *m, unsigned type);

/*
 * Framed I/O on a socket (blocking or not): every wait is a poll() bounded by
 * DEADLINE.  -ETIMEDOUT, -ECONNRESET (the peer closed, also mid-message),
 * -errno of the socket, or the decoder's error.  recv reads the header,
 * refuses a bad one before reading the payload, then reads exactly the
 * payload: a slow or lying peer costs at most the deadline.
 */
/* Waits until FD is ready for EVENTS (POLLIN/POLLOUT), or an error the next
 * call on it reports.  0, -ETIMEDOUT at DEADLINE, or -errno of poll(). */
int ibp_oob_wait_fd(int fd, short events, int64_t deadline);
int ibp_oob_write_full(int fd, const void *buf, size_t len, int64_t deadline);
int ibp_oob_read_full(int fd, void *buf, size_t len, int64_t deadline);
int ibp_oob_send(int fd, const struct ibp_oob_msg *m, int64_t deadline);
int ibp_oob_recv(int fd, struct ibp_oob_msg *m, int64_t deadline);
/*
 * send and recv take HELLO and ERROR only (the unsealed types).
 * ibp_oob_recv_version also says which version the frame's header claims: on
 * -EPROTONOSUPPORT *VERSION is the peer's (the payload is left unread),
 * else the header's when one with the right magic came, else untouched;
 * and, into WHY (when not NULL), what a refused frame was (a header as
 * ibp_oob_header_why says, a sealed type, a payload that does not decode),
 * "" for none.
 */
int ibp_oob_recv_version(int fd, struct ibp_oob_msg *m, int64_t deadline, unsigned *version,
			 char *why, size_t whylen);

/*
 * Ports: N_CAND (<= 8) candidate TCP ports in [LO, HI] for JOB and STEP,
 * the same on every node, spread so that two steps rarely share their first
 * choice.  Returns the number written (min(n_cand, HI-LO+1)) or -EINVAL.
 */
int ibp_oob_ports(uint32_t job, uint32_t step, unsigned lo, unsigned hi, uint16_t *ports,
		  int n_cand);

#endif
