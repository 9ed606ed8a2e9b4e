/*
 * libtvmffi_sandbox.so: the kernel-level confinement of tvmffi's worker
 * process. Not part of the TVM-FFI ABI (it is a separate library, never
 * linked into libtvm_ffi.so); the worker calls it through ctypes before it
 * loads any library code.
 *
 * Three entry points:
 *
 *   tvmffi_sandbox_launch()   process lifetime. Turns the calling process (O,
 *       the one tvmffi started) into a supervisor: it enters a network
 *       namespace (through a user namespace mapping the user to itself when
 *       not root), clones A, the init of a new PID namespace, and A forks B,
 *       which returns to the caller and becomes the worker. O and A never
 *       return. A first joins the cgroup tvmffi made (cgroup_fd: its
 *       cgroup.procs), enters a mount namespace of its own, mounts a fresh
 *       /proc there (a PID namespace under the host's /proc shows other
 *       pids: CUDA's cuInit fails in it), and a tmpfs of scratch_size over
 *       the scratch directory. Where the fresh /proc cannot be mounted, A
 *       gives up and O clones it again without a PID namespace. A reaps
 *       every child it gets: B's probe children (B forks twice, so its
 *       grandchild is reparented to A) and orphans are passed on as they
 *       end, O writing "c <pid> <status> <maxrss_kb>\n" to status_fd for
 *       each. When B exits, A reports B's wait status and peak RSS to O and
 *       exits; the kernel then kills every process left in the namespace.
 *       O writes "<status> <maxrss_kb>\n" to status_fd and exits the way B
 *       did.
 *       When the lifeline fd reports hang-up (tvmffi closed it or died, even by
 *       SIGKILL), O kills A and everything below it. A and B also die with
 *       their parent (PR_SET_PDEATHSIG). O is a child subreaper (and so is A
 *       without a PID namespace): nothing the worker starts can leave O's
 *       tree, whatever session it moves to; before it exits O kills every
 *       descendant, top-down, until none is left (kill_descendants), so the
 *       step ends the same with or without a PID namespace. O and A are not
 *       dumpable (no ptrace, no /proc/<pid>/fd of theirs for the library).
 *       For users other than root, RLIMIT_NPROC bounds a fork bomb.
 *       Memory: without the cgroup, O sums what the tree holds every 50 ms
 *       (sb_watch.c) and, past memory_limit (and a sixteenth for the stacks
 *       RLIMIT_DATA does not count), kills it and writes "m <kb>\n" first.
 *
 *   tvmffi_sandbox_confine()  confinement of the worker itself:
 *       no_new_privs, in its own mount namespace every mount read-only but
 *       the write paths (sb_mounts.c), every capability dropped, Landlock
 *       (filesystem: reads only beneath the given read paths, writes only
 *       beneath the given write paths, no execute; network: no TCP
 *       bind/connect; scopes: no signals and no abstract UNIX sockets
 *       outside the domain) and a seccomp filter (sb_confine.c: no exec, no
 *       sockets but stream socketpairs, no named destinations or descriptor
 *       passing, no ptrace, no signals to other processes,
 *       no mount/module/reboot-class calls, no new namespaces, no SysV or
 *       POSIX message IPC, no subreaper; limits, priorities, affinity and
 *       memory of the worker itself only; metadata changes everywhere when
 *       the mounts could not be made read-only; all fail with EPERM so the
 *       library sees an error, not a kill).
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
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sb_internal.h"

#define TVMFFI_SB_EXPORT __attribute__((visibility("default")))

/* Tasks the worker may add to its user's count (RLIMIT_NPROC; not for root). */
#define SB_NPROC_BUDGET 1024

void sb_note(char *note, size_t len, const char *fmt, const char *what, int err) {
  if (note == NULL || len == 0) return;
  size_t used = strnlen(note, len);
  if (used + 1 >= len) return;
  snprintf(note + used, len - used, fmt, what, strerror(err));
}

TVMFFI_SB_EXPORT int tvmffi_sandbox_landlock_abi(void) { return sb_landlock_abi(); }

/* ---- process lifetime ------------------------------------------------------ */

struct sb_dirent { /* struct linux_dirent64, read with getdents64 (no malloc) */
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

void sb_write_all(int fd, const void *buf, size_t n) {
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

static void map_self(uid_t uid, gid_t gid) {
  char line[64];
  write_id_map("/proc/self/setgroups", "deny");
  snprintf(line, sizeof line, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  write_id_map("/proc/self/uid_map", line);
  snprintf(line, sizeof line, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  write_id_map("/proc/self/gid_map", line);
}

/* O enters the network namespace (applies to O and every child) and gets
 * what A needs to make PID and mount namespaces: root has it; anyone else
 * enters a user namespace mapping itself. Returns the bits applied; *may
 * says whether A should try namespaces at all (not after EPERM: a
 * container without CAP_SYS_ADMIN refuses them all alike). */
static unsigned enter_namespaces(unsigned want, int *may, char *note, size_t note_len) {
  unsigned got = 0;
  int net = (want & TVMFFI_SB_NETNS) ? CLONE_NEWNET : 0;
  *may = 1;
  if (net == 0 && geteuid() == 0) return 0;
  if (net != 0 && unshare(net) == 0) return TVMFFI_SB_NETNS;
  int first = errno;
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (net == 0 || first == EPERM || first == EINVAL) {
    if (unshare(CLONE_NEWUSER | net) == 0) {
      map_self(uid, gid);
      return TVMFFI_SB_USERNS | (net ? TVMFFI_SB_NETNS : 0);
    }
    if (net == 0) first = errno;
  }
  sb_note(note, note_len, "%s: %s; ", "namespaces (unshare)", first);
  /* A kernel without network namespaces may still give the others. */
  if (net != 0 && unshare(CLONE_NEWUSER) == 0) {
    map_self(uid, gid);
    return TVMFFI_SB_USERNS;
  }
  if (geteuid() != 0 || first == EPERM) *may = 0;
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
      sb_write_all(report_fd, child, sizeof child);
      continue;
    }
    if (p < 0 && errno == ECHILD) break;
  }
  if (!in_pidns) kill_descendants(0); /* with a namespace the kernel does this on exit */
  sb_write_all(report_fd, rec, sizeof rec);
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
  sb_write_all(status_fd, line, (size_t)n);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The memory watch: how often, and over what it kills. RLIMIT_DATA bounds
 * each process's private data at the limit but not its main stack, so a
 * single process may hold a little more: a sixteenth is left for that. */
#define SB_WATCH_MS 50
static long long watch_threshold_kb(unsigned long long limit) {
  return (long long)((limit + limit / 16) >> 10);
}

/* O: wait for A's reports or the lifeline's hang-up; with watch_kb > 0,
 * also end the tree when it holds more memory than that. */
static void run_supervisor(pid_t reaper, int report_fd, int lifeline_fd, int status_fd,
                           long long watch_kb) {
  struct pollfd pfd[2] = {{report_fd, POLLIN, 0}, {lifeline_fd, POLLIN, 0}};
  int nfds = lifeline_fd >= 0 ? 2 : 1;
  long rec[4] = {0, 0, 0, 0};
  int have = 0;
  long long over_kb = 0, next = now_ms() + SB_WATCH_MS;
  if (status_fd >= 0) fcntl(status_fd, F_SETFL, fcntl(status_fd, F_GETFL) | O_NONBLOCK);
  for (;;) {
    int wait = -1;
    if (watch_kb > 0) {
      long long left = next - now_ms();
      if (left <= 0) {
        long long kb = sb_tree_memory_kb(reaper, 0);
        /* Over by the quick sum (shared pages counted in each process):
         * take the proportional one before killing. */
        if (kb > watch_kb) kb = sb_tree_memory_kb(reaper, 1);
        if (kb > watch_kb) {
          over_kb = kb;
          break;
        }
        next = now_ms() + SB_WATCH_MS;
        left = SB_WATCH_MS;
      }
      wait = (int)left;
    }
    int r = poll(pfd, (nfds_t)nfds, wait);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (r == 0) continue;
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
    char line[96];
    int n;
    if (over_kb > 0) {
      n = snprintf(line, sizeof line, "m %lld\n", over_kb);
      sb_write_all(status_fd, line, (size_t)n);
    }
    n = snprintf(line, sizeof line, "%ld %ld\n", rec[2], rec[3]);
    sb_write_all(status_fd, line, (size_t)n);
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
    sb_note(note, note_len, "%s: %s; ", "process limit (/proc)", errno);
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
    sb_note(note, note_len, "%s: %s; ", "process limit (RLIMIT_NPROC)", errno);
    return 0;
  }
  return 1;
}

/* A's report to O once it is set up, before it forks the worker: {2, what
 * A applied, 0, 0}, or {3, errno, step, 0} when a PID namespace without a
 * fresh /proc would be all it could give (O then clones A again without). */
#define SB_REC_SETUP 2
#define SB_REC_RETRY 3
static const char *const sb_steps[] = {"mount namespace (unshare)", "mount propagation",
                                       "mount proc"};

static pid_t clone_child(int flags) {
  /* A raw clone: glibc's fork takes no namespace flags. The child (A) runs
   * only this file's code and forks the worker with glibc's fork, which
   * sets the worker's thread id right; A's own stays its parent's, which
   * nothing A calls reads. The argument order differs between
   * architectures but every argument past the flags is 0. */
  return (pid_t)syscall(SYS_clone, (unsigned long)(flags | SIGCHLD), 0, 0, 0, 0);
}

/* A, before it forks the worker: the cgroup, its own mount namespace, a
 * fresh /proc, the scratch tmpfs. Returns what it applied; _exits after a
 * retry record when in_pidns and no fresh /proc can be had. */
static unsigned setup_init(unsigned want, unsigned got, int may, int report_fd, int cgroup_fd,
                           const char *scratch, unsigned long long scratch_size, char *note,
                           size_t note_len) {
  int in_pidns = (got & TVMFFI_SB_PIDNS) != 0;
  if (cgroup_fd >= 0) {
    /* "0": the writer itself; the worker and all it starts follow. */
    if (write(cgroup_fd, "0", 1) == 1)
      got |= TVMFFI_SB_CGROUP;
    else
      sb_note(note, note_len, "%s: %s; ", "cgroup (cgroup.procs)", errno);
    close(cgroup_fd);
  }
  if ((want & TVMFFI_SB_MOUNTNS) && may) {
    const char *what = sb_steps[0];
    if (unshare(CLONE_NEWNS) == 0 && sb_private_mounts(in_pidns, &what) == 0) {
      got |= TVMFFI_SB_MOUNTNS;
    } else if (in_pidns) {
      long rec[4] = {SB_REC_RETRY, errno, 0, 0};
      for (long i = 0; i < 3; i++)
        if (what == sb_steps[i]) rec[2] = i;
      sb_write_all(report_fd, rec, sizeof rec);
      _exit(0);
    } else if (note == NULL || strstr(note, what) == NULL) { /* said once (a retry) */
      sb_note(note, note_len, "%s: %s; ", what, errno);
    }
  }
  if ((want & TVMFFI_SB_SCRATCH_TMPFS) && scratch != NULL && scratch[0] && scratch_size > 0 &&
      (got & TVMFFI_SB_MOUNTNS)) {
    if (sb_mount_scratch(scratch, scratch_size) == 0)
      got |= TVMFFI_SB_SCRATCH_TMPFS;
    else
      sb_note(note, note_len, "%s: %s; ", "scratch tmpfs (mount)", errno);
  }
  return got;
}

/* Returns 0 in the worker (B) with *applied filled; -1 (errno set) if A
 * could not be made, then the caller is still the only process.
 * cgroup_fd: cgroup.procs of the cgroup the tree goes into (-1: none);
 * memory_limit: bytes for the supervisor's watch when there is no cgroup
 * (0: none); scratch, scratch_size: the tmpfs over the scratch directory. */
TVMFFI_SB_EXPORT int tvmffi_sandbox_launch(unsigned want, int lifeline_fd, int status_fd,
                                           int cgroup_fd, unsigned long long memory_limit,
                                           const char *scratch, unsigned long long scratch_size,
                                           unsigned *applied, char *note, size_t note_len) {
  unsigned got = 0;
  int may = 1;
  if (note != NULL && note_len > 0) note[0] = '\0';
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) got |= TVMFFI_SB_SUBREAPER;
  if (limit_processes(note, note_len)) got |= TVMFFI_SB_NPROC;
  if (want & (TVMFFI_SB_NETNS | TVMFFI_SB_PIDNS | TVMFFI_SB_MOUNTNS))
    got |= enter_namespaces(want, &may, note, note_len);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return -1;
  pid_t supervisor = getpid();
  int pidns = (want & TVMFFI_SB_PIDNS) && may;
  long setup[4] = {0, 0, 0, 0};
  pid_t reaper;
  for (;;) {
    reaper = clone_child(pidns ? CLONE_NEWPID : 0);
    if (reaper < 0 && pidns) {
      sb_note(note, note_len, "%s: %s; ", "pid namespace (clone)", errno);
      pidns = 0;
      continue;
    }
    if (reaper < 0) {
      close(report[0]);
      close(report[1]);
      return -1;
    }
    if (reaper == 0) break; /* A */
    if (read_all(report[0], setup, sizeof setup) != 0) setup[0] = -1;
    if (setup[0] == SB_REC_SETUP) break;
    waitpid(reaper, NULL, 0);
    if (setup[0] != SB_REC_RETRY) { /* A died before it said anything */
      close(report[0]);
      close(report[1]);
      errno = ECHILD;
      return -1;
    }
    int step = setup[2] >= 0 && setup[2] < 3 ? (int)setup[2] : 0;
    sb_note(note, note_len, "%s: %s (so no PID namespace either); ", sb_steps[step], (int)setup[1]);
    pidns = 0;
  }
  if (reaper > 0) {
    /* O. Not dumpable: no process of the user (the library's included)
     * can ptrace us or open our pipes through /proc/<pid>/fd to forge the
     * worker's exit status. */
    prctl(PR_SET_DUMPABLE, 0);
    close(report[1]);
    if (cgroup_fd >= 0) close(cgroup_fd);
    long long watch_kb = 0;
    if (((unsigned long)setup[1] & TVMFFI_SB_MEMWATCH) && memory_limit > 0)
      watch_kb = watch_threshold_kb(memory_limit);
    run_supervisor(reaper, report[0], lifeline_fd, status_fd, watch_kb);
  }
  /* A */
  prctl(PR_SET_DUMPABLE, 0); /* see the supervisor */
  close(report[0]);
  if (lifeline_fd >= 0) close(lifeline_fd);
  if (status_fd >= 0) close(status_fd);
  if (pidns) got |= TVMFFI_SB_PIDNS;
  if (die_with_parent(pidns ? 0 : supervisor) == 0) got |= TVMFFI_SB_PDEATHSIG;
  if (!pidns) prctl(PR_SET_CHILD_SUBREAPER, 1);
  got = setup_init(want, got, may, report[1], cgroup_fd, scratch, scratch_size, note, note_len);
  if (memory_limit > 0 && !(got & TVMFFI_SB_CGROUP)) got |= TVMFFI_SB_MEMWATCH;
  long done[4] = {SB_REC_SETUP, (long)got, 0, 0};
  sb_write_all(report[1], done, sizeof done);
  pid_t a = getpid();
  pid_t worker = fork();
  if (worker < 0) _exit(126);
  if (worker > 0) run_reaper(worker, report[1], pidns);
  /* B */
  close(report[1]);
  /* Dumpable again (fork copied A's setting): the supervisor's memory
   * watch and tvmffi's scratch meter read its /proc/<pid>/fd, smaps and
   * root, which a process that is not dumpable keeps from its user. */
  prctl(PR_SET_DUMPABLE, 1);
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
  /* A library may have made the zygote a child subreaper (its constructor
   * ran here): the copy would then be reparented to the zygote, which
   * never waits, and its end would never reach A and tvmffi. */
  prctl(PR_SET_CHILD_SUBREAPER, 0);
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

static int read_exact(int fd, void *buf, size_t n) {
  char *p = buf;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return got == 0 && r == 0 ? 0 : -1; /* 0: end at an order boundary */
    got += (size_t)r;
  }
  return 1;
}

static int write_full(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The probe child forked ahead of its order, and the write end of the pipe
 * it waits on for that order (-1: none yet). */
static int spare_pid = -1;
static int spare_fd = -1;

/* Fork the next probe child: 0 in it, with *await_fd the read end of its
 * own order pipe; its pid here (kept as the spare); -1 if it failed. */
static int fork_spare(int order_fd, int *await_fd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  int pid = tvmffi_sandbox_fork_orphan();
  if (pid == 0) {
    close(order_fd);
    close(p[1]);
    *await_fd = p[0];
    return 0;
  }
  close(p[0]);
  if (pid < 0) {
    close(p[1]);
    return -1;
  }
  spare_pid = pid;
  spare_fd = p[1];
  return pid;
}

/* The zygote's order loop, in C so that the zygote runs no Python between
 * two forks: every page it writes after a fork is copied (the probe child
 * shares them), and its Python loop wrote ~200 per order. An order is two
 * little-endian uint64 on order_fd (a socket to tvmffi): the main lane's
 * frame counts the child resumes from; the answer is the child's pid
 * (int32; 0: no child). The next child is forked ahead, as soon as the last
 * one is answered, and waits on a pipe of its own: the order only hands it
 * the counts, so neither the fork nor the child's start-up lies between two
 * functions' probes. Returns 0 in a probe child (order_fd closed; it runs
 * Python's after-fork hooks, then reads its order from *await_fd: 16 bytes,
 * or end of file when the zygote ended without one), 1 in the zygote when
 * tvmffi closed its end, -1 on a cut order. The caller holds the GIL and is
 * the process's only thread. */
TVMFFI_SB_EXPORT int tvmffi_sandbox_zygote_serve(int order_fd, int *await_fd) {
  for (;;) {
    if (spare_fd < 0 && fork_spare(order_fd, await_fd) == 0) return 0;
    uint64_t order[2];
    int r = read_exact(order_fd, order, sizeof order);
    if (r <= 0) {
      if (spare_fd >= 0) close(spare_fd); /* the spare reads the end and exits */
      spare_fd = -1;
      return r == 0 ? 1 : -1;
    }
    int32_t answer = 0;
    /* A spare that died waiting (its pipe refuses the order) is replaced once. */
    for (int tries = 0; tries < 2 && answer == 0; ++tries) {
      if (spare_fd < 0 && fork_spare(order_fd, await_fd) == 0) return 0;
      if (spare_fd < 0) break;
      if (write_full(spare_fd, order, sizeof order) == 0) answer = spare_pid;
      close(spare_fd);
      spare_fd = -1;
    }
    sb_write_all(order_fd, &answer, sizeof answer);
  }
}

/* ---- confinement (sb_confine.c, sb_mounts.c) --------------------------------- */

/* want: the features asked for, plus TVMFFI_SB_PIDNS / TVMFFI_SB_MOUNTNS when
 * the worker is in namespaces of its own (launch said so). */
TVMFFI_SB_EXPORT int tvmffi_sandbox_confine(unsigned want, const char *const *read_paths,
                                            const char *const *write_paths, unsigned *applied,
                                            char *note, size_t note_len) {
  unsigned got = 0;
  if (note != NULL && note_len > 0) note[0] = '\0';
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) {
    got |= TVMFFI_SB_NO_NEW_PRIVS;
  } else {
    sb_note(note, note_len, "%s: %s; ", "no_new_privs", errno);
  }
  /* Before the capabilities go: remounting needs them. */
  if ((want & TVMFFI_SB_READONLY) && (want & TVMFFI_SB_MOUNTNS) &&
      sb_read_only_but(write_paths, note, note_len) == 0)
    got |= TVMFFI_SB_READONLY;
  if (want & TVMFFI_SB_CAPS_DROPPED) {
    if (sb_drop_capabilities() == 0) {
      got |= TVMFFI_SB_CAPS_DROPPED;
    } else {
      sb_note(note, note_len, "%s: %s; ", "capset", errno);
    }
  }
  if (want & (TVMFFI_SB_LANDLOCK_FS | TVMFFI_SB_LANDLOCK_NET | TVMFFI_SB_LANDLOCK_SCOPE)) {
    int abi = sb_landlock_abi();
    if (abi <= 0) {
      sb_note(note, note_len, "%s: %s; ", "landlock", EOPNOTSUPP);
    } else if (got & TVMFFI_SB_NO_NEW_PRIVS) {
      got |= sb_apply_landlock(abi, read_paths, write_paths, note, note_len);
    }
  }
  if ((want & TVMFFI_SB_SECCOMP) && (got & TVMFFI_SB_NO_NEW_PRIVS)) {
    int scoped = (got & TVMFFI_SB_LANDLOCK_SCOPE) != 0;
    int deny_metadata = (got & TVMFFI_SB_READONLY) == 0;
    if (sb_apply_seccomp((want & TVMFFI_SB_PIDNS) != 0, scoped, deny_metadata, note, note_len) == 0)
      got |= TVMFFI_SB_SECCOMP;
  }
  if (applied != NULL) *applied = got;
  return 0;
}
