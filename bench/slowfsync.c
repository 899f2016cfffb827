/* A disk model for benchmarks: delays every fsync and fdatasync by SLOWFSYNC_US microseconds
 * (default 1000) before doing the real call (sync_file_range and O_DSYNC writes are not
 * delayed). LD_PRELOAD it into the benchmark's PostgreSQL and redis-server only, to see what a
 * cloud volume's ~1 ms flush does to durable writes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long delay_us(void) {
  static long cached = -1;
  if (cached < 0) {
    const char* v = getenv("SLOWFSYNC_US");
    cached = v != NULL ? atol(v) : 1000;
  }
  return cached;
}

static void pause_like_a_disk(void) {
  struct timespec ts = {delay_us() / 1000000, (delay_us() % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  pause_like_a_disk();
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  pause_like_a_disk();
  return real(fd);
}
