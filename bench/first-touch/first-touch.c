/*
 * first-touch: what the kernel's first read of a user page costs on this machine, next to its later reads.
 *
 * Maps MiB of anonymous memory and writes every byte of it from user space, so that every page is present.
 * Then sends the buffer PASSES times, 4096 bytes a datagram by sendto(2), to a UDP socket of its own on
 * 127.0.0.1 that nobody reads (the kernel copies each datagram out of the buffer, then drops it at the full
 * receive queue), and prints the time per datagram of each pass. On bare metal the passes cost the same; where
 * the hypervisor fills a shadow page table on the kernel's first access to each user page, the first pass costs
 * more. With --pretouch, before the passes the kernel reads one byte of every page (pwritev(2) of one-byte
 * pieces to an unlinked file in /dev/shm), and that is timed too.
 *
 *   first-touch [--mib N] [--passes N] [--pretouch]
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -std=c11 -o first-touch first-touch.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define IOVS 1024

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr, "usage: first-touch [--mib N] [--passes N] [--pretouch]\n");
    exit(2);
}

static long number(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) usage();
    return v;
}

/* The kernel reads one byte of every page: pwritev of one-byte pieces, IOVS pages a call. */
static int pretouch(unsigned char *buf, size_t pages)
{
    char path[] = "/dev/shm/first-touch-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    unlink(path);
    struct iovec iov[IOVS];
    for (size_t p = 0; p < pages; p += IOVS) {
        int n = 0;
        for (; n < IOVS && p + (size_t)n < pages; n++) {
            iov[n].iov_base = buf + (p + (size_t)n) * PAGE;
            iov[n].iov_len = 1;
        }
        if (pwritev(fd, iov, n, 0) != n) {
            close(fd);
            return -1;
        }
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    long mib = 512, passes = 3;
    int pre = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc) mib = number(argv[++i], 1, 65536);
        else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc) passes = number(argv[++i], 1, 100);
        else if (strcmp(argv[i], "--pretouch") == 0) pre = 1;
        else usage();
    }
    size_t size = (size_t)mib << 20, pages = size / PAGE;
    unsigned char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("first-touch: mmap");
        return 1;
    }
    double t0 = now();
    memset(buf, 0x5a, size);
    printf("user write of %ld MiB: %.3f s\n", mib, now() - t0);

    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to;
    socklen_t len = sizeof to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&to, sizeof to) != 0
        || getsockname(rx, (struct sockaddr *)&to, &len) != 0) {
        perror("first-touch: socket");
        return 1;
    }
    if (pre) {
        t0 = now();
        if (pretouch(buf, pages) != 0) {
            perror("first-touch: pretouch");
            return 1;
        }
        double s = now() - t0;
        printf("kernel read of one byte a page: %.3f s (%.2f us a page)\n", s, s * 1e6 / (double)pages);
    }
    for (long p = 0; p < passes; p++) {
        t0 = now();
        for (size_t off = 0; off < size; off += PAGE) {
            if (sendto(tx, buf + off, PAGE, 0, (struct sockaddr *)&to, sizeof to) != PAGE) {
                perror("first-touch: sendto");
                return 1;
            }
        }
        double s = now() - t0;
        printf("pass %ld: %.3f s, %.2f us a datagram\n", p + 1, s, s * 1e6 / (double)pages);
    }
    return 0;
}
