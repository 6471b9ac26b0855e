/*
 * The emulated voice server's reader while a benchmark step holds its datagrams (held-reader.ts builds and runs
 * it; udp-receiver-worker.ts hands it the socket). On Discord the media server is another machine; here it shares
 * the bot's two cores, and Node reads a datagram for about 8 µs of CPU (one recvmsg, a 64 KiB allocation, a
 * callback into JavaScript), this program for about 1.5 (recvmmsg, 256 at a time, into static buffers). The
 * kernel timestamps each datagram as it arrives (SO_TIMESTAMPNS), so when this program reads is not when it
 * arrived. Times are given on CLOCK_MONOTONIC, in ms, the clock of Node's process.hrtime and performance.now().
 *
 * fd 3: the bound UDP socket (shared with the worker, which stops reading it meanwhile).
 * argv[1]: nap in ms (as the worker's: after a read that found fewer than 32 datagrams, sleep this long).
 * argv[2]: the file to write the held datagrams to on release.
 * stdin, one command a line: "s" summary, "n <ms>" nap, "r" release. stdout, one line an answer:
 *   "ready", "held <packets> <sources> <last arrival> <CPU ms of this process>", "released <packets>".
 * The file: for each voice datagram in arrival order, its length (u16 LE), its arrival (f64 LE), its bytes. IP discovery requests are answered as the worker answers them; keepalives are dropped, as there.
 * End of stdin (the worker gone) ends it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SOCKET_FD 3
#define BATCH 256
#define MAX_DATAGRAM 2048
#define FEW 32

static unsigned char buffers[BATCH][MAX_DATAGRAM];
static char controls[BATCH][CMSG_SPACE(sizeof(struct timespec))];
static struct sockaddr_in senders[BATCH];
static struct mmsghdr messages[BATCH];
static struct iovec vectors[BATCH];

/* What is held: records back to back (length, arrival, bytes). */
static unsigned char *held;
static size_t held_used, held_size;
static long packets;
static double last_at;

/* The distinct SSRCs held: open addressing, 0 marks a free slot (an SSRC of 0 is counted apart). */
static uint32_t *ssrcs;
static size_t ssrc_slots, ssrc_count;
static int zero_ssrc;

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void count_ssrc(uint32_t ssrc) {
  if (ssrc == 0) {
    zero_ssrc = 1;
    return;
  }
  if (2 * (ssrc_count + 1) > ssrc_slots) {
    size_t old_slots = ssrc_slots;
    uint32_t *old = ssrcs;
    ssrc_slots = old_slots ? 2 * old_slots : 4096;
    ssrcs = calloc(ssrc_slots, sizeof *ssrcs);
    if (!ssrcs) die("calloc");
    ssrc_count = 0;
    for (size_t i = 0; i < old_slots; i++)
      if (old[i]) count_ssrc(old[i]);
    free(old);
  }
  size_t i = (ssrc * 2654435761u) & (ssrc_slots - 1);
  while (ssrcs[i] && ssrcs[i] != ssrc) i = (i + 1) & (ssrc_slots - 1);
  if (!ssrcs[i]) {
    ssrcs[i] = ssrc;
    ssrc_count++;
  }
}

static void hold(const unsigned char *datagram, uint16_t length, double at) {
  size_t need = sizeof length + sizeof at + length;
  if (held_used + need > held_size) {
    held_size = held_size ? 2 * held_size : 64u << 20;
    held = realloc(held, held_size);
    if (!held) die("realloc");
  }
  memcpy(held + held_used, &length, sizeof length);
  memcpy(held + held_used + sizeof length, &at, sizeof at);
  memcpy(held + held_used + sizeof length + sizeof at, datagram, length);
  held_used += need;
  packets++;
  last_at = at;
  count_ssrc((uint32_t)datagram[8] << 24 | (uint32_t)datagram[9] << 16 | (uint32_t)datagram[10] << 8 | datagram[11]);
}

static double ms_of(struct timespec t) { return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6; }

static double clock_ms(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return ms_of(t);
}

/* IP discovery (discord-protocol.md §6): a 74-byte request of type 1, answered with type 2, the sender's address. */
static void answer_discovery(const unsigned char *request, const struct sockaddr_in *sender) {
  unsigned char reply[74] = {0, 2, 0, 70};
  memcpy(reply + 4, request + 4, 4);
  inet_ntop(AF_INET, &sender->sin_addr, (char *)reply + 8, 64);
  uint16_t port = ntohs(sender->sin_port);
  reply[72] = port >> 8;
  reply[73] = port & 0xff;
  sendto(SOCKET_FD, reply, sizeof reply, 0, (const struct sockaddr *)sender, sizeof *sender);
}

/* Reads what the socket holds now; returns how many datagrams. */
static long drain(void) {
  long taken = 0;
  /* The kernel stamps arrivals on CLOCK_REALTIME: how far it is ahead of CLOCK_MONOTONIC now (NTP may slew it). */
  double realtime_ahead = clock_ms(CLOCK_REALTIME) - clock_ms(CLOCK_MONOTONIC);
  for (;;) {
    for (int i = 0; i < BATCH; i++) {
      vectors[i] = (struct iovec){.iov_base = buffers[i], .iov_len = MAX_DATAGRAM};
      messages[i].msg_hdr = (struct msghdr){
          .msg_name = &senders[i],
          .msg_namelen = sizeof senders[i],
          .msg_iov = &vectors[i],
          .msg_iovlen = 1,
          .msg_control = controls[i],
          .msg_controllen = sizeof controls[i],
      };
    }
    int n = recvmmsg(SOCKET_FD, messages, BATCH, MSG_DONTWAIT, NULL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return taken;
      die("recvmmsg");
    }
    if (n == 0) return taken;
    for (int i = 0; i < n; i++) {
      const unsigned char *datagram = buffers[i];
      unsigned length = messages[i].msg_len;
      double at = 0;
      for (struct cmsghdr *c = CMSG_FIRSTHDR(&messages[i].msg_hdr); c; c = CMSG_NXTHDR(&messages[i].msg_hdr, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          struct timespec t;
          memcpy(&t, CMSG_DATA(c), sizeof t);
          at = ms_of(t) - realtime_ahead;
        }
      }
      if (at == 0) at = clock_ms(CLOCK_MONOTONIC);
      if (length == 74 && datagram[0] == 0 && datagram[1] == 1) answer_discovery(datagram, &senders[i]);
      /* A voice packet (RTP version 2, a header, a tag and a nonce at least), as isVoicePacket in ip-discovery.ts. */
      else if (length >= 12 + 16 + 4 && datagram[0] >> 6 == 2) hold(datagram, (uint16_t)length, at);
    }
    taken += n;
    if (n < BATCH) return taken;
  }
}

static double cpu_ms(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
         (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

static void release(const char *path) {
  drain();
  FILE *file = fopen(path, "wb");
  if (!file) die(path);
  if (held_used && fwrite(held, 1, held_used, file) != held_used) die("fwrite");
  if (fclose(file)) die("fclose");
  printf("released %ld\n", packets);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: held-reader <nap ms> <file> (the socket on fd 3)\n");
    return 2;
  }
  long nap_ms = atol(argv[1]);
  const char *path = argv[2];
  int on = 1;
  if (setsockopt(SOCKET_FD, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on)) die("SO_TIMESTAMPNS");
  printf("ready\n");
  fflush(stdout);
  char line[64];
  size_t line_used = 0;
  for (;;) {
    struct pollfd watch[2] = {{.fd = SOCKET_FD, .events = POLLIN}, {.fd = STDIN_FILENO, .events = POLLIN}};
    if (poll(watch, 2, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (watch[0].revents & POLLIN) {
      long taken = drain();
      if (taken < FEW && nap_ms > 0) {
        struct timespec nap = {.tv_sec = nap_ms / 1000, .tv_nsec = (nap_ms % 1000) * 1000000};
        nanosleep(&nap, NULL);
      }
    }
    if (watch[1].revents & (POLLIN | POLLHUP)) {
      ssize_t n = read(STDIN_FILENO, line + line_used, sizeof line - 1 - line_used);
      if (n <= 0) return 0;
      line_used += (size_t)n;
      line[line_used] = 0;
      char *end;
      while ((end = strchr(line, '\n'))) {
        *end = 0;
        if (line[0] == 's')
          printf("held %ld %zu %.4f %.1f\n", packets, ssrc_count + (size_t)zero_ssrc, last_at, cpu_ms());
        else if (line[0] == 'n')
          nap_ms = atol(line + 1);
        else if (line[0] == 'r') {
          release(path);
          return 0;
        }
        fflush(stdout);
        size_t rest = line_used - (size_t)(end + 1 - line);
        memmove(line, end + 1, rest + 1);
        line_used = rest;
      }
      if (line_used == sizeof line - 1) line_used = 0;
    }
  }
}
