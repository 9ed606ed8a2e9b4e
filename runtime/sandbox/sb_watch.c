/* The supervisor's memory watch (libtvmffi_sandbox.so): what the worker's
 * whole process tree holds in memory, where no cgroup counts it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sb_internal.h"

#define SB_TMPFS_MAGIC 0x01021994
#define SB_HUGETLBFS_MAGIC 0x958458f6
#define SB_WATCH_TREE 4096
#define SB_SEEN 8192 /* a power of two */

struct sb_dirent64 {
  unsigned long long ino;
  long long off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

int sb_children(pid_t pid, pid_t *out, int *n, int cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return 0; /* gone */
  char buf[2048] __attribute__((aligned(8)));
  int missing = 0;
  for (;;) {
    long got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      struct sb_dirent64 *d = (struct sb_dirent64 *)(buf + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      char cpath[96];
      snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)pid, d->name);
      FILE *f = fopen(cpath, "re");
      if (f == NULL) {
        if (errno == ENOENT) missing = 1;
        continue;
      }
      int c;
      while (fscanf(f, "%d", &c) == 1)
        if (c > 0 && *n < cap) out[(*n)++] = c;
      fclose(f);
    }
  }
  close(dfd);
  return missing ? -1 : 0;
}

/* The value (kB) after `key` in a /proc file of "Key:   123 kB" lines. */
static long long field_kb(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (p == NULL) return -1;
  return strtoll(p + strlen(key), NULL, 10);
}

static int read_text(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t used = 0;
  while (used + 1 < len) {
    ssize_t r = read(fd, buf + used, len - 1 - used);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    used += (size_t)r;
  }
  close(fd);
  buf[used] = '\0';
  return used > 0 ? 0 : -1;
}

/* Anonymous and shared-memory pages of `pid` (kB): resident (status: a
 * page shared after fork counts in each process), or proportional
 * (smaps_rollup: a page shared by n processes counts 1/n in each). */
static long long process_kb(pid_t pid, int precise) {
  char path[64], text[4096];
  if (precise) {
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    if (read_text(path, text, sizeof text) == 0) {
      long long anon = field_kb(text, "\nPss_Anon:"), shmem = field_kb(text, "\nPss_Shmem:");
      if (anon >= 0 && shmem >= 0) return anon + shmem;
    }
  }
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  if (read_text(path, text, sizeof text) != 0) return 0;
  long long anon = field_kb(text, "\nRssAnon:"), shmem = field_kb(text, "\nRssShmem:");
  return (anon > 0 ? anon : 0) + (shmem > 0 ? shmem : 0);
}

struct seen {
  unsigned long long key[SB_SEEN];
};

/* True the first time a file is seen in this pass. */
static int first_time(struct seen *s, dev_t dev, ino_t ino) {
  unsigned long long k = ((unsigned long long)dev << 40) ^ (unsigned long long)ino ^ 1;
  unsigned long long h = (k * 0x9E3779B97F4A7C15ull) >> 51; /* 13 bits */
  for (unsigned i = 0; i < SB_SEEN; i++) {
    unsigned long long *slot = &s->key[(h + i) & (SB_SEEN - 1)];
    if (*slot == k) return 0;
    if (*slot == 0) {
      *slot = k;
      return 1;
    }
  }
  return 0; /* full: already counted a lot */
}

/* Memory in files of tmpfs and hugetlbfs (memfds, POSIX shared memory)
 * that `pid` holds by a descriptor, mapped or not: write() into a memfd
 * moves no one's RSS. Each file once per pass. */
static long long held_files_kb(pid_t pid, struct seen *s) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return 0;
  long long kb = 0;
  char buf[2048] __attribute__((aligned(8)));
  for (;;) {
    long got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      struct sb_dirent64 *d = (struct sb_dirent64 *)(buf + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      struct stat st;
      /* Follows the descriptor's magic link without opening the file. */
      if (fstatat(dfd, d->name, &st, 0) != 0 || !S_ISREG(st.st_mode)) continue;
      char fpath[96];
      struct statfs fs;
      snprintf(fpath, sizeof fpath, "/proc/%d/fd/%s", (int)pid, d->name);
      if (statfs(fpath, &fs) != 0) continue;
      if ((unsigned long)fs.f_type != SB_TMPFS_MAGIC && (unsigned long)fs.f_type != SB_HUGETLBFS_MAGIC)
        continue;
      if (first_time(s, st.st_dev, st.st_ino)) kb += (long long)st.st_blocks / 2;
    }
  }
  close(dfd);
  return kb;
}

long long sb_tree_memory_kb(pid_t root, int precise) {
  static pid_t tree[SB_WATCH_TREE];
  static struct seen seen;
  int n = 0;
  tree[n++] = root;
  for (int i = 0; i < n; i++) sb_children(tree[i], tree, &n, SB_WATCH_TREE);
  memset(&seen, 0, sizeof seen);
  long long kb = 0;
  for (int i = 0; i < n; i++) kb += process_kb(tree[i], precise) + held_files_kb(tree[i], &seen);
  return kb;
}
