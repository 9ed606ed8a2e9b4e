/*
 * libtvmffi_sandbox.so: the kernel-level confinement of tvmffi's worker
 * process. Not part of the TVM-FFI ABI (it is a separate library, never
 * linked into libtvm_ffi.so); the worker calls it through ctypes before it
 * loads any library code.
 *
 * Three entry points:
 *
 *   tvmffi_sandbox_launch()   process lifetime. Turns the calling process (O,
 *       the one tvmffi started) into a supervisor: it forks A, the init of a
 *       new PID namespace (and network namespace when asked), and A forks B,
 *       which returns to the caller and becomes the worker. O and A never
 *       return. A reaps every child it gets: B's probe children (B forks
 *       twice, so its grandchild is reparented to A) and orphans are passed
 *       on as they end, O writing "c <pid> <status> <maxrss_kb>\n" to
 *       status_fd for each. When B exits, A reports B's wait status and peak
 *       RSS to O and exits; the kernel then kills every process left in the
 *       namespace. O writes "<status> <maxrss_kb>\n" to status_fd and exits
 *       the way B did.
 *       When the lifeline fd reports hang-up (tvmffi closed it or died, even by
 *       SIGKILL), O kills A and everything below it. A and B also die with
 *       their parent (PR_SET_PDEATHSIG). O is a child subreaper (and so is A
 *       without a PID namespace): nothing the worker starts can leave O's
 *       tree, whatever session it moves to; before it exits O kills every
 *       descendant, top-down, until none is left (kill_descendants), so the
 *       step ends the same with or without a PID namespace. O and A are not
 *       dumpable (no ptrace, no /proc/<pid>/fd of theirs for the library).
 *       For users other than root, RLIMIT_NPROC bounds a fork bomb.
 *
 *   tvmffi_sandbox_confine()  confinement of the worker itself:
 *       no_new_privs, every capability dropped, Landlock (filesystem: reads
 *       only beneath the given read paths, writes only beneath the given
 *       write paths, no execute; network: no TCP bind/connect; scopes: no
 *       signals and no abstract UNIX sockets outside the domain) and a
 *       seccomp filter (no exec, no sockets, no ptrace, no signals to other
 *       processes, no mount/module/reboot-class calls, no new namespaces;
 *       limits, priorities, affinity and memory of the worker itself only;
 *       all fail with EPERM so the library sees an error, not a kill).
 *
 *   tvmffi_sandbox_fork_orphan()  conform's zygote (a worker that loaded the
 *       library) forks a probe child whose parent is A, so A reaps it and O
 *       reports its end on status_fd.
 *
 * launch() and confine() report what they applied as a bitmask (TVMFFI_SB_* below) and, for
 * what they could not apply, a one-line reason each in `note`.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define TVMFFI_SB_EXPORT __attribute__((visibility("default")))

/* What was applied (bits of *applied). Mirrored in tvmffi_cli/sandbox/. */
#define TVMFFI_SB_PDEATHSIG (1u << 0)
#define TVMFFI_SB_PIDNS (1u << 1)
#define TVMFFI_SB_NETNS (1u << 2)
#define TVMFFI_SB_SUBREAPER (1u << 3)
#define TVMFFI_SB_NO_NEW_PRIVS (1u << 4)
#define TVMFFI_SB_CAPS_DROPPED (1u << 5)
#define TVMFFI_SB_LANDLOCK_FS (1u << 6)
#define TVMFFI_SB_LANDLOCK_NET (1u << 7)
#define TVMFFI_SB_LANDLOCK_SCOPE (1u << 8)
#define TVMFFI_SB_SECCOMP (1u << 9)
#define TVMFFI_SB_USERNS (1u << 10)
#define TVMFFI_SB_NPROC (1u << 11)

/* Tasks the worker may add to its user's count (RLIMIT_NPROC; not for root). */
#define SB_NPROC_BUDGET 1024

/* ---- Landlock: the kernel ABI, for headers older than the running kernel. */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)        /* ABI 6 */
#define LL_RULE_PATH_BENEATH 1

struct ll_ruleset_attr { /* struct landlock_ruleset_attr as of ABI 6 */
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath_attr { /* struct landlock_path_beneath_attr (packed) */
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

static void note_add(char *note, size_t len, const char *fmt, const char *what, int err) {
  if (note == NULL || len == 0) return;
  size_t used = strnlen(note, len);
  if (used + 1 >= len) return;
  snprintf(note + used, len - used, fmt, what, strerror(err));
}

TVMFFI_SB_EXPORT int tvmffi_sandbox_landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : (int)v;
#else
  return 0;
#endif
}

/* ---- process lifetime ------------------------------------------------------ */

struct sb_dirent { /* struct linux_dirent64, read with getdents64 (no malloc) */
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

static void write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Kill every descendant of this process, top-down, one pass: a process is
 * killed before its children are listed, and a process with SIGKILL pending
 * cannot fork (the kernel aborts a fork in progress), so what one pass lists
 * is all that exists but orphans reparented during the pass. Returns how
 * many processes it signalled. Uses /proc/<pid>/task/<tid>/children. */
#define SB_MAX_TREE 8192
static int kill_pass(pid_t self, int *have_children_file) {
  static pid_t stack[SB_MAX_TREE];
  int top = 0, killed = 0;
  stack[top++] = self;
  while (top > 0) {
    pid_t p = stack[--top];
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)p);
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) continue; /* gone already */
    char buf[4096] __attribute__((aligned(8)));
    for (;;) {
      long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        struct sb_dirent *d = (struct sb_dirent *)(buf + off);
        off += d->reclen;
        if (d->name[0] < '0' || d->name[0] > '9') continue;
        char cpath[96];
        snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)p, d->name);
        FILE *f = fopen(cpath, "re");
        if (f == NULL) {
          if (errno == ENOENT && p == self) *have_children_file = 0;
          continue;
        }
        int c;
        while (fscanf(f, "%d", &c) == 1) {
          if (c <= 0 || c == self) continue;
          kill(c, SIGKILL);
          killed++;
          if (top < SB_MAX_TREE) stack[top++] = c; /* the rest: next pass */
        }
        fclose(f);
      }
    }
    close(dfd);
  }
  return killed;
}

/* Without /proc/.../children (CONFIG_PROC_CHILDREN off): kill every process
 * whose parent is this one. Orphans of the killed are reparented to us (we
 * are a subreaper), so repeated passes reach the whole tree. */
static int kill_direct_children(pid_t self) {
  int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return 0;
  int killed = 0;
  char buf[8192] __attribute__((aligned(8)));
  for (;;) {
    long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct sb_dirent *d = (struct sb_dirent *)(buf + off);
      off += d->reclen;
      if (d->name[0] < '1' || d->name[0] > '9') continue;
      char path[96], stat[512];
      snprintf(path, sizeof path, "/proc/%s/stat", d->name);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t r = read(fd, stat, sizeof stat - 1);
      close(fd);
      if (r <= 0) continue;
      stat[r] = '\0';
      char *rp = strrchr(stat, ')'); /* comm may hold spaces and parens */
      int ppid = 0;
      char state;
      if (rp == NULL || sscanf(rp + 1, " %c %d", &state, &ppid) != 2) continue;
      if (ppid == self) {
        kill(atoi(d->name), SIGKILL);
        killed++;
      }
    }
  }
  close(dfd);
  return killed;
}

/* Kill every descendant and reap every child until none is left. We are a
 * child subreaper, so nothing the tree started can leave it but through our
 * own death; a fork bomb loses because a killed process forks no more. */
static void kill_descendants(pid_t known_child) {
  pid_t self = getpid();
  if (known_child > 0) kill(known_child, SIGKILL);
  /* A /proc of another PID namespace (or none) would show us nothing: then
   * the known child is all we can reach; reap what we can and go. */
  char link[32] = {0};
  if (readlink("/proc/self", link, sizeof link - 1) <= 0 || atoi(link) != (int)self) {
    for (int i = 0; i < 100 && waitpid(-1, NULL, WNOHANG) >= 0; i++) usleep(10000);
    return;
  }
#ifdef TVMFFI_SB_SCAN_ONLY /* to test the fallback where the kernel lacks it */
  int have_children_file = 0;
#else
  int have_children_file = 1;
#endif
  for (int pass = 0;; pass++) {
    int killed = have_children_file ? kill_pass(self, &have_children_file) : 0;
    if (!have_children_file) killed = kill_direct_children(self);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    if (killed == 0) {
      if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD) return;
    }
    /* Dying processes (or ones reparented to us mid-pass): let them go. */
    if (pass > 2) usleep(pass < 100 ? 200 : 2000);
  }
}

static void die_like(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    struct rlimit core = {0, 0};
    setrlimit(RLIMIT_CORE, &core);
    raise(sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

/* Set the parent-death signal and make sure the parent did not die before. */
static int die_with_parent(pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
  if (getppid() != parent) _exit(137);
  return 0;
}

static int write_id_map(const char *file, const char *line) {
  int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, line, strlen(line));
  close(fd);
  return n == (ssize_t)strlen(line) ? 0 : -1;
}

/* Enter new PID (and network) namespaces for the next child. Root can do it
 * directly; anyone else needs a user namespace first, mapping itself. */
static unsigned enter_namespaces(unsigned want, char *note, size_t note_len) {
  unsigned got = 0;
  int flags = 0;
  if (want & TVMFFI_SB_PIDNS) flags |= CLONE_NEWPID;
  if (want & TVMFFI_SB_NETNS) flags |= CLONE_NEWNET;
  if (flags == 0) return 0;
  if (unshare(flags) == 0) return want & (TVMFFI_SB_PIDNS | TVMFFI_SB_NETNS);
  int first = errno;
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | flags) == 0) {
    char line[64];
    write_id_map("/proc/self/setgroups", "deny");
    snprintf(line, sizeof line, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    write_id_map("/proc/self/uid_map", line);
    snprintf(line, sizeof line, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    write_id_map("/proc/self/gid_map", line);
    return TVMFFI_SB_USERNS | (want & (TVMFFI_SB_PIDNS | TVMFFI_SB_NETNS));
  }
  note_add(note, note_len, "%s: %s; ", "namespaces (unshare)", first);
  /* Try the PID namespace alone (a kernel without network namespaces). */
  if ((want & TVMFFI_SB_PIDNS) && (want & TVMFFI_SB_NETNS) && unshare(CLONE_NEWPID) == 0)
    got |= TVMFFI_SB_PIDNS;
  return got;
}

/* A: the init of the worker's PID namespace (or a subreaper without one).
 * Every child it reaps but the worker is reported as it ends, {1, pid,
 * status, maxrss}: the worker's probe children (the worker forks twice, so
 * the grandchild is reparented here) and orphans of what the library
 * started; tvmffi keeps the records of the pids it waits for. The worker's
 * own end is the last record, {0, pid, status, maxrss}. */
static void run_reaper(pid_t worker, int report_fd, int in_pidns) {
  long rec[4] = {0, worker, 0, 0};
  for (;;) {
    struct rusage ru;
    int st;
    pid_t p = wait4(-1, &st, 0, &ru);
    if (p == worker) {
      rec[2] = st;
      rec[3] = ru.ru_maxrss;
      break;
    }
    if (p > 0) {
      long child[4] = {1, p, st, ru.ru_maxrss};
      write_all(report_fd, child, sizeof child);
      continue;
    }
    if (p < 0 && errno == ECHILD) break;
  }
  if (!in_pidns) kill_descendants(0); /* with a namespace the kernel does this on exit */
  write_all(report_fd, rec, sizeof rec);
  _exit(0);
}

/* A probe child's record, "c <pid> <status> <maxrss_kb>\n" on status_fd,
 * dropped when tvmffi has left more than SB_STATUS_BACKLOG bytes unread
 * (status_fd is non-blocking: a library that forks without end cannot stall
 * us, and the worker's own final line always finds room). */
#define SB_STATUS_BACKLOG 1024
static void forward_child(int status_fd, const long rec[4]) {
  int unread = 0;
  if (status_fd < 0) return;
  if (ioctl(status_fd, FIONREAD, &unread) == 0 && unread > SB_STATUS_BACKLOG) return;
  char line[96];
  int n = snprintf(line, sizeof line, "c %ld %ld %ld\n", rec[1], rec[2], rec[3]);
  write_all(status_fd, line, (size_t)n);
}

/* O: wait for A's reports or the lifeline's hang-up. */
static void run_supervisor(pid_t reaper, int report_fd, int lifeline_fd, int status_fd) {
  struct pollfd pfd[2] = {{report_fd, POLLIN, 0}, {lifeline_fd, POLLIN, 0}};
  int nfds = lifeline_fd >= 0 ? 2 : 1;
  long rec[4] = {0, 0, 0, 0};
  int have = 0;
  if (status_fd >= 0) fcntl(status_fd, F_SETFL, fcntl(status_fd, F_GETFL) | O_NONBLOCK);
  for (;;) {
    int r = poll(pfd, (nfds_t)nfds, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (pfd[0].revents) {
      if (read_all(report_fd, rec, sizeof rec) != 0) break;
      if (rec[0] == 1) { /* a probe child (or an orphan) ended: pass it on */
        forward_child(status_fd, rec);
        continue;
      }
      have = 1;
      break;
    }
    /* A byte (tvmffi asks) or a hang-up (tvmffi is gone): end the worker. */
    if (nfds == 2 && pfd[1].revents) break;
  }
  if (!have) {
    rec[2] = SIGKILL; /* a wait status: killed by SIGKILL */
    rec[3] = 0;
  } else {
    waitpid(reaper, NULL, 0);
  }
  /* Everything still below us (A first when tvmffi hung up: with a PID
   * namespace that empties it), whatever process group or session it is in. */
  kill_descendants(have ? 0 : reaper);
  if (status_fd >= 0) {
    char line[64];
    int n = snprintf(line, sizeof line, "%ld %ld\n", rec[2], rec[3]);
    write_all(status_fd, line, (size_t)n);
    close(status_fd);
  }
  die_like((int)rec[2]);
}

/* RLIMIT_NPROC counts every task (thread) of the real user, system-wide, and
 * the kernel ignores it for root. For anyone else: what the user runs now
 * plus a budget, so a fork bomb stops at EAGAIN instead of filling the
 * machine. Set before entering a user namespace so it binds there too. */
static int limit_processes(char *note, size_t note_len) {
  uid_t uid = getuid();
  if (uid == 0) return 0;
  int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    note_add(note, note_len, "%s: %s; ", "process limit (/proc)", errno);
    return 0;
  }
  long tasks = 0;
  char buf[8192] __attribute__((aligned(8)));
  for (;;) {
    long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct sb_dirent *d = (struct sb_dirent *)(buf + off);
      off += d->reclen;
      if (d->name[0] < '1' || d->name[0] > '9') continue;
      char path[96], status[4096];
      snprintf(path, sizeof path, "/proc/%s/status", d->name);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t r = read(fd, status, sizeof status - 1);
      close(fd);
      if (r <= 0) continue;
      status[r] = '\0';
      const char *u = strstr(status, "\nUid:");
      const char *t = strstr(status, "\nThreads:");
      unsigned long ruid;
      long threads = 1;
      if (u == NULL || sscanf(u + 5, "%lu", &ruid) != 1 || ruid != (unsigned long)uid) continue;
      if (t != NULL) sscanf(t + 9, "%ld", &threads);
      tasks += threads > 0 ? threads : 1;
    }
  }
  close(dfd);
  struct rlimit cur;
  if (getrlimit(RLIMIT_NPROC, &cur) != 0) return 0;
  rlim_t want = (rlim_t)(tasks + SB_NPROC_BUDGET);
  if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < want) want = cur.rlim_max;
  struct rlimit lim = {want, want};
  if (setrlimit(RLIMIT_NPROC, &lim) != 0) {
    note_add(note, note_len, "%s: %s; ", "process limit (RLIMIT_NPROC)", errno);
    return 0;
  }
  return 1;
}

/* Returns 0 in the worker (B) with *applied filled; -1 (errno set) if the
 * first fork failed, then the caller is still the only process. */
TVMFFI_SB_EXPORT int tvmffi_sandbox_launch(unsigned want, int lifeline_fd, int status_fd,
                                           unsigned *applied, char *note, size_t note_len) {
  unsigned got = 0;
  if (note != NULL && note_len > 0) note[0] = '\0';
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) got |= TVMFFI_SB_SUBREAPER;
  if (limit_processes(note, note_len)) got |= TVMFFI_SB_NPROC;
  got |= enter_namespaces(want, note, note_len);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return -1;
  pid_t supervisor = getpid();
  pid_t reaper = fork();
  if (reaper < 0) {
    close(report[0]);
    close(report[1]);
    return -1;
  }
  if (reaper > 0) {
    /* Not dumpable: no process of the user (the library's included) can
     * ptrace us or open our pipes through /proc/<pid>/fd to forge the
     * worker's exit status. */
    prctl(PR_SET_DUMPABLE, 0);
    close(report[1]);
    run_supervisor(reaper, report[0], lifeline_fd, status_fd);
  }
  /* A */
  prctl(PR_SET_DUMPABLE, 0); /* see the supervisor */
  close(report[0]);
  if (lifeline_fd >= 0) close(lifeline_fd);
  if (status_fd >= 0) close(status_fd);
  if (die_with_parent((got & TVMFFI_SB_PIDNS) ? 0 : supervisor) == 0) got |= TVMFFI_SB_PDEATHSIG;
  if (!(got & TVMFFI_SB_PIDNS)) prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t a = getpid();
  pid_t worker = fork();
  if (worker < 0) _exit(126);
  if (worker > 0) run_reaper(worker, report[1], (got & TVMFFI_SB_PIDNS) != 0);
  /* B */
  close(report[1]);
  if (die_with_parent(a) != 0) got &= ~TVMFFI_SB_PDEATHSIG;
  if (applied != NULL) *applied = got;
  return 0;
}

/* ---- probe children (conform's zygote: tvmffi_cli/sandbox/zygote.py) ------- */

/* glibc's fork without the atfork handlers (2.34+), which also sets the new
 * process's thread id in its TCB (a raw fork system call would not). */
extern pid_t _Fork(void) __attribute__((weak));

/* Fork a copy of the calling worker that is a child of A, not of the
 * worker: a vfork child (sharing our memory, copying nothing) forks the copy
 * and exits at once, so the copy is reparented to the nearest subreaper, A,
 * which reaps it and reports its end to O (run_reaper). One copy of the page
 * tables where fork-and-fork-again made two and tore one down. Returns 0 in
 * the copy, its pid in the caller, -1 (errno set) on failure. The caller is
 * single-threaded and runs Python's fork hooks around the call. */
TVMFFI_SB_EXPORT int tvmffi_sandbox_fork_orphan(void) {
  static volatile pid_t copy;
  static volatile int copy_errno;
  if (_Fork == NULL) {
    errno = ENOSYS;
    return -1;
  }
  copy = -1;
  copy_errno = 0;
  pid_t mid = vfork();
  if (mid < 0) return -1;
  if (mid == 0) {
    pid_t p = _Fork();
    if (p == 0) return 0; /* the copy: its own stack, returns as the caller */
    copy_errno = p < 0 ? errno : 0;
    copy = p; /* shared with the caller, which resumes when we exit */
    _exit(0);
  }
  waitpid(mid, NULL, 0);
  if (copy < 0) errno = copy_errno;
  return (int)copy;
}

/* ---- confinement ----------------------------------------------------------- */

static int drop_capabilities(void) {
  for (int cap = 0; cap < 64; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  return (int)syscall(SYS_capset, &hdr, data);
}

static int add_path_rule(int ruleset, const char *path, uint64_t dir_access,
                         uint64_t file_access) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return -1;
  }
  struct ll_path_beneath_attr rule;
  rule.allowed_access = S_ISDIR(st.st_mode) ? dir_access : file_access;
  rule.parent_fd = fd;
  long r = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
  int err = errno;
  close(fd);
  errno = err;
  return r == 0 ? 0 : -1;
}

static unsigned apply_landlock(int abi, const char *const *read_paths,
                               const char *const *write_paths, char *note, size_t note_len) {
  struct ll_ruleset_attr attr;
  memset(&attr, 0, sizeof attr);
  uint64_t fs = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_READ_DIR |
                LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR |
                LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK |
                LL_FS_MAKE_SYM;
  if (abi >= 2) fs |= LL_FS_REFER;
  if (abi >= 3) fs |= LL_FS_TRUNCATE;
  if (abi >= 5) fs |= LL_FS_IOCTL_DEV;
  attr.handled_access_fs = fs;
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) {
    note_add(note, note_len, "%s: %s; ", "landlock_create_ruleset", errno);
    return 0;
  }
  uint64_t file_read = LL_FS_READ_FILE;
  uint64_t dir_read = LL_FS_READ_FILE | LL_FS_READ_DIR;
  uint64_t file_write = LL_FS_READ_FILE | LL_FS_WRITE_FILE | (fs & (LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
  /* Writable directories: everything but execute and device nodes. */
  uint64_t dir_write = fs & ~(LL_FS_EXECUTE | LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
  for (const char *const *p = read_paths; p != NULL && *p != NULL; p++) {
    if (add_path_rule(ruleset, *p, dir_read, file_read) != 0)
      note_add(note, note_len, "landlock rule %s: %s; ", *p, errno);
  }
  for (const char *const *p = write_paths; p != NULL && *p != NULL; p++) {
    if (add_path_rule(ruleset, *p, dir_write, file_write) != 0)
      note_add(note, note_len, "landlock rule %s: %s; ", *p, errno);
  }
  long r = syscall(SYS_landlock_restrict_self, ruleset, 0);
  int err = errno;
  close(ruleset);
  if (r != 0) {
    note_add(note, note_len, "%s: %s; ", "landlock_restrict_self", err);
    return 0;
  }
  unsigned got = TVMFFI_SB_LANDLOCK_FS;
  if (abi >= 4) got |= TVMFFI_SB_LANDLOCK_NET;
  if (abi >= 6) got |= TVMFFI_SB_LANDLOCK_SCOPE;
  return got;
}

/* ---- seccomp --------------------------------------------------------------- */

#if defined(__x86_64__)
#define SB_AUDIT_ARCH AUDIT_ARCH_X86_64
#define SB_X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define SB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define SB_AUDIT_ARCH AUDIT_ARCH_RISCV64
#endif

#define SB_DENY (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define SB_ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
/* Every CLONE_NEW* flag clone(2) takes (CLONE_NEWTIME is clone3/unshare only). */
#define SB_CLONE_NEW_ANY                                                                  \
  (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
   CLONE_NEWNET)
#define SB_IOPRIO_WHO_PROCESS 1
#define SB_ARG_HI(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)

struct bpf_prog_buf {
  struct sock_filter ins[512];
  unsigned n;
};

static void emit(struct bpf_prog_buf *b, struct sock_filter f) {
  if (b->n < sizeof b->ins / sizeof b->ins[0]) b->ins[b->n++] = f;
}

/* if (nr == n) return -err */
static void deny_nr_err(struct bpf_prog_buf *b, long nr, int err) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)));
}

/* if (nr == n) return EPERM */
static void deny_nr(struct bpf_prog_buf *b, long nr) { deny_nr_err(b, nr, EPERM); }

static void load_nr(struct bpf_prog_buf *b) {
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
}

/* if (nr == n && !(arg[which] == which_val (when which >= 0) && arg[i] is
 * self (or 0 when zero_ok))) return EPERM; then reload nr. A pid is an int:
 * the kernel reads the low half, so a high half other than 0 is refused. */
static void deny_unless_self_arg(struct bpf_prog_buf *b, long nr, int i, uint32_t self,
                                 int zero_ok, int which, uint32_t which_val) {
  unsigned skip = which >= 0 ? 7 : 5; /* instructions between the first jump and the reload */
  if (zero_ok) skip++;
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (uint8_t)skip));
  unsigned left = skip; /* instructions after the current one up to the deny */
  if (which >= 0) {
    emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(which)));
    left -= 2;
    emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, which_val, 0, (uint8_t)(left - 1)));
  }
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_HI(i)));
  left -= 2;
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, (uint8_t)(left - 1)));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(i)));
  left -= 2;
  if (zero_ok) {
    emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, (uint8_t)(left), 0));
    left -= 1;
  }
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  load_nr(b);
}

/* if (nr == n && !(arg[i] is a pid >= min: high half 0, low half in
 * [min, INT_MAX])) return EPERM; then reload nr. */
static void deny_unless_pid_from(struct bpf_prog_buf *b, long nr, int i, uint32_t min) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 6));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_HI(i)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(i)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x80000000u, 1, 0));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, min, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  load_nr(b);
}

/* if (nr == n && (low half of arg[i]) == v) return err; then reload nr (for
 * unsigned int arguments such as fcntl's and ioctl's command). */
static void deny_arg_eq(struct bpf_prog_buf *b, long nr, int i, uint32_t v, uint32_t ret) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 3));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(i)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, v, 0, 1));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret));
  load_nr(b);
}

/* if (nr == n && (low half of arg[i]) & mask) return EPERM; then reload nr. */
static void deny_arg_bits(struct bpf_prog_buf *b, long nr, int i, uint32_t mask) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 3));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(i)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  load_nr(b);
}

/* if (nr == n && arg0 != AF_UNIX) return EPERM (socketpair stays usable). */
static void deny_unless_unix(struct bpf_prog_buf *b, long nr) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 4));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(0)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

static int apply_seccomp(int in_pidns, int scoped, char *note, size_t note_len) {
#ifndef SB_AUDIT_ARCH
  note_add(note, note_len, "%s: %s; ", "seccomp (unsupported architecture)", ENOSYS);
  return -1;
#else
  struct bpf_prog_buf b;
  b.n = 0;
  uint32_t self = (uint32_t)getpid();
  /* Another architecture's syscall table (i386 via int 0x80): refuse all. */
  emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SB_AUDIT_ARCH, 1, 0));
  emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef SB_X32_BIT
  emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SB_X32_BIT, 0, 1));
  emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
#endif
  /* Run programs, trace or write other processes, leave the namespaces. */
  deny_nr(&b, SYS_execve);
  deny_nr(&b, SYS_execveat);
  deny_nr(&b, SYS_ptrace);
  deny_nr(&b, SYS_kcmp);
  deny_nr(&b, SYS_setns);
  deny_nr(&b, SYS_unshare);
  deny_nr(&b, SYS_mount);
  deny_nr(&b, SYS_umount2);
  deny_nr(&b, SYS_pivot_root);
  deny_nr(&b, SYS_chroot);
  deny_nr(&b, SYS_reboot);
  deny_nr(&b, SYS_kexec_load);
  deny_nr(&b, SYS_init_module);
  deny_nr(&b, SYS_finit_module);
  deny_nr(&b, SYS_delete_module);
  deny_nr(&b, SYS_swapon);
  deny_nr(&b, SYS_swapoff);
  deny_nr(&b, SYS_bpf);
  deny_nr(&b, SYS_keyctl);
  deny_nr(&b, SYS_add_key);
  deny_nr(&b, SYS_request_key);
  deny_nr(&b, SYS_open_by_handle_at);
  deny_nr(&b, SYS_perf_event_open);
  /* The mount API of Linux 5.2+ (caps are dropped, but say no plainly). */
#ifdef SYS_fsopen
  deny_nr(&b, SYS_fsopen);
  deny_nr(&b, SYS_fsconfig);
  deny_nr(&b, SYS_fsmount);
  deny_nr(&b, SYS_fspick);
  deny_nr(&b, SYS_open_tree);
  deny_nr(&b, SYS_move_mount);
#endif
#ifdef SYS_mount_setattr
  deny_nr(&b, SYS_mount_setattr);
#endif
#ifdef SYS_io_uring_setup
  deny_nr(&b, SYS_io_uring_setup); /* its ring would bypass this filter */
#endif
#ifdef SYS_pidfd_open
  deny_nr(&b, SYS_pidfd_open);
#endif
#ifdef SYS_pidfd_send_signal
  deny_nr(&b, SYS_pidfd_send_signal);
#endif
#ifdef SYS_pidfd_getfd
  deny_nr(&b, SYS_pidfd_getfd);
#endif
  deny_nr(&b, SYS_tkill);
  /* The network: no sockets but a socketpair of AF_UNIX. */
  deny_nr(&b, SYS_socket);
  deny_nr(&b, SYS_connect);
  deny_nr(&b, SYS_bind);
  deny_unless_unix(&b, SYS_socketpair);
  emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
  /* No new namespaces by clone either; clone3 hides its flags in memory
   * seccomp cannot read, so it reports ENOSYS and libc falls back to clone. */
  deny_arg_bits(&b, SYS_clone, 0, SB_CLONE_NEW_ANY);
#ifdef SYS_clone3
  deny_nr_err(&b, SYS_clone3, ENOSYS);
#endif
  /* Signals: only to the worker's own processes (raise, abort and
   * pthread_kill use tgkill), never to a process group or to every process.
   * In a PID namespace every pid above 1 is one of them (1 is the init, A);
   * without one, Landlock's signal scope (when applied) refuses every
   * process outside the worker's domain; else only the worker itself. A
   * probe child forked from the worker (conform) has a pid of its own and
   * must still be able to signal itself. */
  static const long sig_nrs[] = {SYS_kill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo};
  for (size_t i = 0; i < sizeof sig_nrs / sizeof sig_nrs[0]; i++) {
    if (in_pidns)
      deny_unless_pid_from(&b, sig_nrs[i], 0, 2);
    else if (scoped)
      deny_unless_pid_from(&b, sig_nrs[i], 0, 1);
    else
      deny_unless_self_arg(&b, sig_nrs[i], 0, self, 0, -1, 0);
  }
  /* ...nor by the I/O-signal owner of a file: SIGIO/SIGURG (or any signal,
   * F_SETSIG) would go to a process the library names. */
  deny_arg_eq(&b, SYS_fcntl, 1, F_SETOWN, SB_DENY);
  deny_arg_eq(&b, SYS_fcntl, 1, F_SETOWN_EX, SB_DENY);
  deny_arg_eq(&b, SYS_fcntl, 1, F_SETSIG, SB_DENY);
  deny_arg_eq(&b, SYS_ioctl, 1, FIOSETOWN, SB_DENY);
  deny_arg_eq(&b, SYS_ioctl, 1, SIOCSPGRP, SB_DENY);
  /* Limits, memory and I/O priority: the worker's own only (pid 0 or ours). */
  deny_unless_self_arg(&b, SYS_prlimit64, 0, self, 1, -1, 0);
  deny_unless_self_arg(&b, SYS_process_vm_readv, 0, self, 0, -1, 0);
  deny_unless_self_arg(&b, SYS_process_vm_writev, 0, self, 0, -1, 0);
  deny_unless_self_arg(&b, SYS_migrate_pages, 0, self, 1, -1, 0);
  deny_unless_self_arg(&b, SYS_move_pages, 0, self, 1, -1, 0);
  deny_unless_self_arg(&b, SYS_ioprio_set, 1, self, 1, 0, SB_IOPRIO_WHO_PROCESS);
  /* Scheduling. In a PID namespace every pid the library can name is its
   * own (threads pin themselves by thread id: OpenMP, pthread_setaffinity_np);
   * without one, only the worker's main thread (pid 0 or ours). */
  if (!in_pidns) {
    deny_unless_self_arg(&b, SYS_setpriority, 1, self, 1, 0, PRIO_PROCESS);
    deny_unless_self_arg(&b, SYS_sched_setaffinity, 0, self, 1, -1, 0);
    deny_unless_self_arg(&b, SYS_sched_setscheduler, 0, self, 1, -1, 0);
    deny_unless_self_arg(&b, SYS_sched_setparam, 0, self, 1, -1, 0);
#ifdef SYS_sched_setattr
    deny_unless_self_arg(&b, SYS_sched_setattr, 0, self, 1, -1, 0);
#endif
  }
  emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  if (b.n >= sizeof b.ins / sizeof b.ins[0]) {
    note_add(note, note_len, "%s: %s; ", "seccomp (filter too long)", E2BIG);
    return -1;
  }
  struct sock_fprog prog = {(unsigned short)b.n, b.ins};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    note_add(note, note_len, "%s: %s; ", "seccomp", errno);
    return -1;
  }
  return 0;
#endif
}

TVMFFI_SB_EXPORT int tvmffi_sandbox_confine(unsigned want, const char *const *read_paths,
                                            const char *const *write_paths, unsigned *applied,
                                            char *note, size_t note_len) {
  unsigned got = 0;
  if (note != NULL && note_len > 0) note[0] = '\0';
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) {
    got |= TVMFFI_SB_NO_NEW_PRIVS;
  } else {
    note_add(note, note_len, "%s: %s; ", "no_new_privs", errno);
  }
  if (want & TVMFFI_SB_CAPS_DROPPED) {
    if (drop_capabilities() == 0) {
      got |= TVMFFI_SB_CAPS_DROPPED;
    } else {
      note_add(note, note_len, "%s: %s; ", "capset", errno);
    }
  }
  if (want & (TVMFFI_SB_LANDLOCK_FS | TVMFFI_SB_LANDLOCK_NET | TVMFFI_SB_LANDLOCK_SCOPE)) {
    int abi = tvmffi_sandbox_landlock_abi();
    if (abi <= 0) {
      note_add(note, note_len, "%s: %s; ", "landlock", EOPNOTSUPP);
    } else if (got & TVMFFI_SB_NO_NEW_PRIVS) {
      got |= apply_landlock(abi, read_paths, write_paths, note, note_len);
    }
  }
  if ((want & TVMFFI_SB_SECCOMP) && (got & TVMFFI_SB_NO_NEW_PRIVS)) {
    int scoped = (got & TVMFFI_SB_LANDLOCK_SCOPE) != 0;
    if (apply_seccomp((want & TVMFFI_SB_PIDNS) != 0, scoped, note, note_len) == 0)
      got |= TVMFFI_SB_SECCOMP;
  }
  if (applied != NULL) *applied = got;
  return 0;
}
