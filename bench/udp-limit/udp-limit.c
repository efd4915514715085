/*
 * udp-limit: how fast this machine moves RoCEv2-sized UDP datagrams over
 * loopback, in plain C, as a yardstick for jroce's own figures.
 *
 *   udp-limit sink     --bind IP:PORT            (counts what blast sends)
 *   udp-limit blast    --to IP:PORT --size N --seconds S --mode sendmmsg|gso
 *   udp-limit echo     --bind IP:PORT            (returns every datagram)
 *   udp-limit pingpong --to IP:PORT --size N --count C
 *
 * echo and pingpong wait for each datagram in a blocking receive (--wait
 * block, the default) or, as a verbs program polls its completion queue, in
 * a loop of non-blocking receives that yields the core between tries
 * (--wait yield).
 *
 * Every address must be in 127.0.0.0/8: this tool floods its peer and must
 * never point at a network. Every command ends by itself (--seconds cap; sink
 * and echo also stop after --idle ms without traffic). Each prints one
 * "name: key=value ..." line on stdout; diagnostics go to stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* include/uapi/linux/udp.h, Linux >= 4.18 */
#endif

#ifndef UDP_GRO
#define UDP_GRO 104     /* include/uapi/linux/udp.h, Linux >= 5.0 */
#endif

#define MAX_PAYLOAD 65507   /* largest UDP payload in an IPv4 datagram */
#define SLOT 65536          /* receive buffer per datagram: never truncates */
#define MAX_BATCH 1024      /* UIO_MAXIOV: the kernel's sendmmsg/recvmmsg cap */
#define POLL_MS 100         /* receive timeout, so idle/cap/signals are seen */
#define SEQ_BYTES 8         /* every datagram starts with its sequence number */

enum cmd { SINK = 1, BLAST = 2, ECHO = 4, PINGPONG = 8 };
enum mode { MODE_SENDMMSG, MODE_GSO };
enum wait { WAIT_BLOCK, WAIT_YIELD };

struct opts {
    const char *addr;
    long size, seconds, idle_ms, batch, segs, count, warmup, rcvbuf, timeout_ms, cpu, gro;
    enum mode mode;
    enum wait wait;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(void)
{
    fputs("usage:\n"
          "  udp-limit sink     --bind IP:PORT [--batch B=64] [--rcvbuf BYTES=4194304]\n"
          "                     [--seconds MAX=60] [--idle MS=1000] [--cpu N] [--gro 0|1]\n"
          "  udp-limit blast    --to IP:PORT --size N --seconds S [--mode sendmmsg|gso]\n"
          "                     [--batch B] [--segs K] [--cpu N]\n"
          "  udp-limit echo     --bind IP:PORT [--seconds MAX=60] [--idle MS=1000] [--cpu N]\n"
          "                     [--wait block|yield]\n"
          "  udp-limit pingpong --to IP:PORT --size N --count C [--warmup W=1000]\n"
          "                     [--timeout MS=100] [--seconds MAX=60] [--cpu N] [--wait block|yield]\n"
          "IP must be in 127.0.0.0/8. blast: sendmmsg batch defaults to 64 datagrams;\n"
          "gso sends super-buffers of K datagrams (UDP_SEGMENT), B per call (default 1).\n"
          "sink --gro 1: UDP_GRO on, a coalesced read is counted segment by segment.\n"
          "--wait yield: non-blocking receives, sched_yield() between tries (a spinning poll).\n",
          stderr);
    exit(2);
}

static void die(const char *what)
{
    fprintf(stderr, "udp-limit: %s: %s\n", what, strerror(errno));
    exit(1);
}

static long number(const char *name, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "udp-limit: %s wants an integer in [%ld, %ld], got '%s'\n", name, lo, hi, s);
        exit(2);
    }
    return v;
}

/* IP:PORT, IPv4 dotted quad only (no name lookup), loopback only. */
static struct sockaddr_in loopback(const char *s)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    char host[INET_ADDRSTRLEN];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host) {
        fprintf(stderr, "udp-limit: address '%s' is not IP:PORT\n", s);
        exit(2);
    }
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "udp-limit: '%s' is not an IPv4 address\n", host);
        exit(2);
    }
    if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "udp-limit: refusing %s: only loopback (127.0.0.0/8) is allowed\n", host);
        exit(2);
    }
    sa.sin_port = htons((uint16_t)number("port", colon + 1, 1, 65535));
    return sa;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU this process has used: user and system seconds. */
static void cpu_seconds(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void print_cpu(unsigned long long pkts)
{
    double user, sys;
    cpu_seconds(&user, &sys);
    printf(" cpu_user_s=%.2f cpu_sys_s=%.2f cpu_ns_per_pkt=%.0f", user, sys,
           pkts ? (user + sys) * 1e9 / (double)pkts : 0.0);
}

/*
 * System-wide Udp RcvbufErrors from /proc/net/snmp: datagrams dropped because
 * a socket's receive queue was full. Two "Udp:" lines: names, then values.
 */
static long long udp_rcvbuf_errors(void)
{
    char names[1024], values[1024], line[1024];
    int have = 0;
    FILE *f = fopen("/proc/net/snmp", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Udp:", 4))
            continue;
        if (have++ == 0) {
            memcpy(names, line, sizeof line);
        } else {
            memcpy(values, line, sizeof line);
            break;
        }
    }
    fclose(f);
    if (have < 2)
        return -1;
    char *ns, *vs;
    char *n = strtok_r(names, " \n", &ns), *v = strtok_r(values, " \n", &vs);
    while (n && v) {
        if (!strcmp(n, "RcvbufErrors"))
            return atoll(v);
        n = strtok_r(NULL, " \n", &ns);
        v = strtok_r(NULL, " \n", &vs);
    }
    return -1;
}

static int udp_socket(long cpu)
{
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((size_t)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set))
            die("sched_setaffinity");
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    return fd;
}

static void receive_timeout(int fd, long ms)
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv))
        die("SO_RCVTIMEO");
}

static void bind_to(int fd, const char *addr)
{
    struct sockaddr_in sa = loopback(addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa))
        die(addr);
}

static void connect_to(int fd, const char *addr)
{
    struct sockaddr_in sa = loopback(addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa))
        die(addr);
}

/* A receive that timed out or was interrupted: look at the clock and the stop flag again. */
static int retry(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* True once the run must end: a signal came or the --seconds cap is reached. */
static int finished(uint64_t start, long cap_s)
{
    return stop || now_ns() - start >= (uint64_t)cap_s * 1000000000u;
}

/*
 * After a receive timed out: true once traffic has stopped, i.e. it had
 * started and nothing came for idle_ms. Asked only when the queue is found
 * empty, so a server that was itself not scheduled for a while still drains
 * what waited for it.
 */
static int idle(uint64_t last, long idle_ms)
{
    return last && now_ns() - last >= (uint64_t)idle_ms * 1000000u;
}

/* ------------------------------------------------------------------ sink */

static int run_sink(const struct opts *o)
{
    int fd = udp_socket(o->cpu);
    int want = (int)o->rcvbuf, got;
    socklen_t len = sizeof got;
    /* SO_RCVBUFFORCE passes net.core.rmem_max when privileged; else the capped SO_RCVBUF. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want)
        && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want))
        die("SO_RCVBUF");
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len);
    receive_timeout(fd, POLL_MS);
    bind_to(fd, o->addr);
    int one = 1;
    if (o->gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one))
        die("UDP_GRO (kernel without UDP GRO?)");

    int batch = (int)o->batch;
    /* per message room for the UDP_GRO control message: the segment size of a coalesced read */
    size_t ctl = CMSG_SPACE(sizeof(int));
    unsigned char *ctls = calloc((size_t)batch, ctl);
    unsigned char *bufs = malloc((size_t)batch * SLOT);
    struct mmsghdr *msgs = calloc((size_t)batch, sizeof *msgs);
    struct iovec *iov = calloc((size_t)batch, sizeof *iov);
    if (!bufs || !msgs || !iov || !ctls)
        die("malloc");
    for (int i = 0; i < batch; i++) {
        iov[i] = (struct iovec){ .iov_base = bufs + (size_t)i * SLOT, .iov_len = SLOT };
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    unsigned long long coalesced = 0;
    long long drops0 = udp_rcvbuf_errors();
    /* The script waits for this line before it starts the blaster. */
    fprintf(stderr, "sink: listening on %s rcvbuf=%d batch=%d\n", o->addr, got, batch);

    unsigned long long pkts = 0, bytes = 0, calls = 0, lost = 0, late = 0, next = 0;
    uint64_t start = now_ns(), first = 0, last = 0;
    while (!finished(start, o->seconds)) {
        if (o->gro) {
            for (int i = 0; i < batch; i++) {
                msgs[i].msg_hdr.msg_control = ctls + (size_t)i * ctl;
                msgs[i].msg_hdr.msg_controllen = ctl; /* the kernel shortens it to what it wrote */
            }
        }
        int n = recvmmsg(fd, msgs, (unsigned)batch, MSG_WAITFORONE, NULL);
        if (n < 0) {
            if (!retry())
                die("recvmmsg");
            if (idle(last, o->idle_ms))
                break;
            continue;
        }
        last = now_ns();
        if (!first)
            first = last;
        calls++;
        for (int i = 0; i < n; i++) {
            unsigned int msg_len = msgs[i].msg_len, seg = msg_len ? msg_len : 1;
            if (o->gro) {
                struct cmsghdr *c;
                for (c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
                    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
                        memcpy(&seg, CMSG_DATA(c), sizeof seg);
                if (seg < msg_len)
                    coalesced++;
            }
            bytes += msg_len;
            /* each segment of a coalesced read is one datagram of the sender's, with its own sequence number */
            for (unsigned int off = 0; off < msg_len || (msg_len == 0 && off == 0); off += seg) {
                unsigned int got_len = msg_len - off < seg ? msg_len - off : seg;
                pkts++;
                if (got_len < SEQ_BYTES)
                    continue;
                uint64_t seq;
                memcpy(&seq, (unsigned char *)iov[i].iov_base + off, SEQ_BYTES);
                if (seq >= next) {
                    lost += seq - next; /* a gap: those datagrams never came (yet) */
                    next = seq + 1;
                } else {
                    late++;              /* one counted as lost arrived after all */
                    if (lost)
                        lost--;
                }
            }
        }
    }
    long long drops1 = udp_rcvbuf_errors();
    double secs = last > first ? (double)(last - first) / 1e9 : 0.0;
    printf("sink:");
    print_cpu(pkts);
    printf(" pkts=%llu bytes=%llu secs=%.3f pps=%.0f gbps=%.3f seq_lost=%llu late=%llu"
           " loss_pct=%.3f pkts_per_call=%.1f udp_rcvbuf_errors=%lld rcvbuf=%d gro=%ld coalesced_reads=%llu\n",
           pkts, bytes, secs, secs > 0 ? (double)pkts / secs : 0.0,
           secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0.0, lost, late,
           pkts + lost ? 100.0 * (double)lost / (double)(pkts + lost) : 0.0,
           calls ? (double)pkts / (double)calls : 0.0,
           drops0 >= 0 && drops1 >= 0 ? drops1 - drops0 : -1LL, got, o->gro, coalesced);
    return pkts ? 0 : 1;
}

/* ----------------------------------------------------------------- blast */

/*
 * Lay out `batch` messages of `segs` datagrams each. With gso, one message
 * is a super-buffer that the kernel cuts into segs datagrams of `size` bytes.
 */
static unsigned char *blast_buffers(struct mmsghdr *msgs, struct iovec *iov, int batch,
                                    long segs, long size)
{
    size_t msg_bytes = (size_t)(segs * size);
    unsigned char *buf = calloc((size_t)batch, msg_bytes);
    if (!buf)
        die("malloc");
    for (int i = 0; i < batch; i++) {
        iov[i] = (struct iovec){ .iov_base = buf + (size_t)i * msg_bytes, .iov_len = msg_bytes };
        msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
    }
    return buf;
}

static int run_blast(const struct opts *o)
{
    int fd = udp_socket(o->cpu);
    connect_to(fd, o->addr);
    int gso = o->mode == MODE_GSO;
    int batch = (int)(o->batch ? o->batch : gso ? 1 : 64);
    long segs = 1;
    if (gso) {
        /* Up to the kernel's UDP_MAX_SEGMENTS (128 on recent kernels, 64 on older ones) and one IPv4 datagram. */
        segs = o->segs ? o->segs : MAX_PAYLOAD / o->size < 128 ? MAX_PAYLOAD / o->size : 128;
        if (segs < 1 || segs * o->size > MAX_PAYLOAD) {
            fprintf(stderr, "udp-limit: %ld segments of %ld bytes exceed one UDP datagram\n",
                    segs, o->size);
            return 2;
        }
        int seg = (int)o->size;
        if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg))
            die("UDP_SEGMENT (kernel without UDP GSO?)");
    }
    struct mmsghdr *msgs = calloc((size_t)batch, sizeof *msgs);
    struct iovec *iov = calloc((size_t)batch, sizeof *iov);
    if (!msgs || !iov)
        die("malloc");
    unsigned char *buf = blast_buffers(msgs, iov, batch, segs, o->size);

    unsigned long long pkts = 0, calls = 0, errors = 0;
    int last_error = 0;
    uint64_t seq = 0, start = now_ns(), end = start + (uint64_t)o->seconds * 1000000000u;
    while (!stop && now_ns() < end) {
        long per_call = batch * segs;
        for (long j = 0; j < per_call; j++)
            memcpy(buf + (size_t)(j * o->size), &(uint64_t){ seq + (uint64_t)j }, SEQ_BYTES);
        int n = sendmmsg(fd, msgs, (unsigned)batch, 0);
        calls++;
        if (n < 0) {
            if (gso && errno == EINVAL && !o->segs && segs > 64 && pkts == 0) {
                segs = 64; /* a kernel whose UDP_MAX_SEGMENTS is still 64 */
                free(buf);
                buf = blast_buffers(msgs, iov, batch, segs, o->size);
                continue;
            }
            /* ECONNREFUSED: ICMP port unreachable from an earlier datagram (no sink). */
            if (errno != ECONNREFUSED && errno != ENOBUFS && errno != EINTR)
                die("sendmmsg");
            errors++;
            last_error = errno;
            continue; /* the same sequence numbers go out again */
        }
        seq += (uint64_t)n * (uint64_t)segs;
        pkts += (unsigned long long)n * (unsigned long long)segs;
    }
    double secs = (double)(now_ns() - start) / 1e9;
    printf("blast:");
    print_cpu(pkts);
    printf(" mode=%s size=%ld batch=%d segs_per_buf=%ld pkts=%llu bytes=%llu secs=%.3f"
           " pps=%.0f gbps=%.3f calls=%llu send_errors=%llu\n",
           gso ? "gso" : "sendmmsg", o->size, batch, segs, pkts, pkts * (unsigned long long)o->size,
           secs, (double)pkts / secs, (double)pkts * (double)o->size * 8 / secs / 1e9, calls, errors);
    if (!pkts) {
        fprintf(stderr, "udp-limit: blast: nothing was sent (%s; is the sink running?)\n",
                strerror(last_error));
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ echo */

static int run_echo(const struct opts *o)
{
    int fd = udp_socket(o->cpu);
    receive_timeout(fd, POLL_MS);
    bind_to(fd, o->addr);
    static unsigned char buf[SLOT];
    fprintf(stderr, "echo: listening on %s\n", o->addr);
    unsigned long long echoed = 0;
    uint64_t start = now_ns(), last = 0;
    while (!finished(start, o->seconds)) {
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        ssize_t n = recvfrom(fd, buf, sizeof buf, o->wait == WAIT_YIELD ? MSG_DONTWAIT : 0,
                             (struct sockaddr *)&peer, &plen);
        if (n < 0) {
            if (!retry())
                die("recvfrom");
            if (idle(last, o->idle_ms))
                break;
            if (o->wait == WAIT_YIELD)
                sched_yield();
            continue;
        }
        last = now_ns();
        if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, plen) == n)
            echoed++;
    }
    printf("echo: echoed=%llu\n", echoed);
    return 0;
}

/* -------------------------------------------------------------- pingpong */

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile (in per mille: 500 is the median) of n sorted samples, in microseconds. */
static double pct_us(const uint64_t *s, size_t n, size_t per_mille)
{
    size_t rank = (per_mille * n + 999) / 1000; /* ceil, in integers: no rounding surprises */
    return (double)s[rank ? rank - 1 : 0] / 1e3;
}

static int run_pingpong(const struct opts *o)
{
    int fd = udp_socket(o->cpu);
    receive_timeout(fd, o->timeout_ms);
    connect_to(fd, o->addr);
    unsigned char *out = calloc(1, (size_t)o->size);
    static unsigned char in[SLOT];
    uint64_t *rtt = malloc((size_t)o->count * sizeof *rtt);
    if (!out || !rtt)
        die("malloc");

    size_t samples = 0;
    unsigned long long lost = 0, stale = 0;
    uint64_t start = now_ns(), cap = (uint64_t)o->seconds * 1000000000u;
    for (uint64_t seq = 0; samples < (size_t)o->count && !stop && now_ns() - start < cap; seq++) {
        memcpy(out, &seq, SEQ_BYTES);
        uint64_t t0 = now_ns();
        if (send(fd, out, (size_t)o->size, 0) != o->size) {
            if (errno == ECONNREFUSED) {
                fprintf(stderr, "udp-limit: pingpong: %s refused (is echo running?)\n", o->addr);
                return 1;
            }
            die("send");
        }
        for (;;) {
            ssize_t n = recv(fd, in, sizeof in, o->wait == WAIT_YIELD ? MSG_DONTWAIT : 0);
            if (n < 0) {
                if (errno == ECONNREFUSED) {
                    fprintf(stderr, "udp-limit: pingpong: %s refused (is echo running?)\n", o->addr);
                    return 1;
                }
                if (!retry())
                    die("recv");
                if (o->wait == WAIT_YIELD && errno != EINTR && !stop
                    && now_ns() - t0 < (uint64_t)o->timeout_ms * 1000000u) {
                    sched_yield(); /* nothing yet: let a thread that shares this core run, then look again */
                    continue;
                }
                if (errno != EINTR && seq >= (uint64_t)o->warmup)
                    lost++; /* no answer within --timeout */
                break;
            }
            uint64_t got;
            if (n < SEQ_BYTES || (memcpy(&got, in, SEQ_BYTES), got != seq)) {
                stale++; /* a late answer to an earlier, timed-out ping */
                continue;
            }
            if (seq >= (uint64_t)o->warmup)
                rtt[samples++] = now_ns() - t0;
            break;
        }
    }
    if (!samples) {
        fprintf(stderr, "udp-limit: pingpong: no round trip completed\n");
        return 1;
    }
    qsort(rtt, samples, sizeof *rtt, by_value);
    double sum = 0;
    for (size_t i = 0; i < samples; i++)
        sum += (double)rtt[i];
    printf("pingpong: size=%ld wait=%s samples=%zu lost=%llu stale=%llu min_us=%.2f median_us=%.2f"
           " p90_us=%.2f p99_us=%.2f p999_us=%.2f max_us=%.2f mean_us=%.2f\n",
           o->size, o->wait == WAIT_YIELD ? "yield" : "block", samples, lost, stale,
           (double)rtt[0] / 1e3, pct_us(rtt, samples, 500),
           pct_us(rtt, samples, 900), pct_us(rtt, samples, 990), pct_us(rtt, samples, 999),
           (double)rtt[samples - 1] / 1e3, sum / (double)samples / 1e3);
    return 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    static const struct { const char *name; enum cmd cmd; } cmds[] = {
        { "sink", SINK }, { "blast", BLAST }, { "echo", ECHO }, { "pingpong", PINGPONG },
    };
    enum cmd cmd = 0;
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            cmd = cmds[i].cmd;
    if (!cmd)
        usage();

    struct opts o = { .seconds = -1, .idle_ms = 1000, .rcvbuf = 4 << 20, .warmup = 1000,
                      .timeout_ms = 100, .cpu = -1, .mode = MODE_SENDMMSG };
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (!v)
            usage();
        if (!strcmp(k, "--bind"))          { ok = cmd & (SINK | ECHO); o.addr = v; }
        else if (!strcmp(k, "--to"))       { ok = cmd & (BLAST | PINGPONG); o.addr = v; }
        else if (!strcmp(k, "--size"))     { ok = cmd & (BLAST | PINGPONG); o.size = number(k, v, SEQ_BYTES, MAX_PAYLOAD); }
        else if (!strcmp(k, "--seconds"))  o.seconds = number(k, v, 1, 600);
        else if (!strcmp(k, "--idle"))     { ok = cmd & (SINK | ECHO); o.idle_ms = number(k, v, 1, 600000); }
        else if (!strcmp(k, "--batch"))    { ok = cmd & (SINK | BLAST); o.batch = number(k, v, 1, MAX_BATCH); }
        else if (!strcmp(k, "--segs"))     { ok = cmd & BLAST; o.segs = number(k, v, 1, 128); }
        else if (!strcmp(k, "--rcvbuf"))   { ok = cmd & SINK; o.rcvbuf = number(k, v, 4096, INT_MAX / 2); }
        else if (!strcmp(k, "--count"))    { ok = cmd & PINGPONG; o.count = number(k, v, 1, 100000000); }
        else if (!strcmp(k, "--warmup"))   { ok = cmd & PINGPONG; o.warmup = number(k, v, 0, 100000000); }
        else if (!strcmp(k, "--timeout"))  { ok = cmd & PINGPONG; o.timeout_ms = number(k, v, 1, 60000); }
        else if (!strcmp(k, "--cpu"))      o.cpu = number(k, v, 0, CPU_SETSIZE - 1);
        else if (!strcmp(k, "--gro"))      { ok = cmd & SINK; o.gro = number(k, v, 0, 1); }
        else if (!strcmp(k, "--mode")) {
            ok = cmd & BLAST;
            if (!strcmp(v, "sendmmsg"))  o.mode = MODE_SENDMMSG;
            else if (!strcmp(v, "gso"))  o.mode = MODE_GSO;
            else usage();
        } else if (!strcmp(k, "--wait")) {
            ok = cmd & (ECHO | PINGPONG);
            if (!strcmp(v, "block"))       o.wait = WAIT_BLOCK;
            else if (!strcmp(v, "yield"))  o.wait = WAIT_YIELD;
            else usage();
        } else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "udp-limit: %s does not take %s\n", argv[1], k);
            usage();
        }
        i++;
    }
    if (!o.addr || ((cmd & (BLAST | PINGPONG)) && !o.size) || ((cmd & BLAST) && o.seconds < 0)
        || ((cmd & PINGPONG) && !o.count))
        usage();
    loopback(o.addr); /* refuse a bad address before any socket exists */
    if (o.seconds < 0)
        o.seconds = 60;
    if (cmd == SINK && !o.batch)
        o.batch = 64;

    /* Without SA_RESTART a blocked receive returns EINTR, so a signal ends the run with a summary. */
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int rc = cmd == SINK ? run_sink(&o) : cmd == BLAST ? run_blast(&o)
           : cmd == ECHO ? run_echo(&o) : run_pingpong(&o);
    fflush(stdout);
    return rc;
}
