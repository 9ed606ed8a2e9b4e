/* The worker's mount namespace (libtvmffi_sandbox.so): a fresh /proc for its
 * PID namespace, a tmpfs as its scratch directory, and every mount
 * read-only but the paths it may write. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sb_internal.h"

/* The new mount API (Linux 5.2 / 5.12), for headers older than that. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define SB_OPEN_TREE_CLONE 1
#define SB_AT_RECURSIVE 0x8000
#define SB_MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#define SB_MOUNT_ATTR_RDONLY 0x00000001

struct sb_mount_attr { /* struct mount_attr */
  unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

int sb_private_mounts(int in_pidns, const char **what) {
  /* Nothing done here may reach the host's mounts, nor theirs ours. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    *what = "mount propagation";
    return -1;
  }
  /* A procfs mounted from inside the PID namespace shows its processes
   * only: /proc/self is the caller, getpid() and /proc agree. */
  if (in_pidns && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
    *what = "mount proc";
    return -1;
  }
  return 0;
}

int sb_mount_scratch(const char *dir, unsigned long long size) {
  char opts[64];
  snprintf(opts, sizeof opts, "size=%llu,mode=0700", size);
  /* Not noexec: libraries dlopen what they compile into their cache. */
  return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts);
}

#define SB_MAX_WRITE 64

static int set_read_only(int on) {
  struct sb_mount_attr attr;
  memset(&attr, 0, sizeof attr);
  if (on)
    attr.attr_set = SB_MOUNT_ATTR_RDONLY;
  else
    attr.attr_clr = SB_MOUNT_ATTR_RDONLY;
  return (int)syscall(SYS_mount_setattr, AT_FDCWD, "/", SB_AT_RECURSIVE, &attr, sizeof attr);
}

int sb_read_only_but(const char *const *write_paths, char *note, size_t note_len) {
  int fds[SB_MAX_WRITE];
  const char *where[SB_MAX_WRITE];
  int n = 0, err = 0;
  const char *step = "read-only mounts (open_tree)";
  /* 1. A writable copy of every write path, not attached anywhere yet.
   * Device nodes open read-write on a read-only mount: not needed. */
  for (const char *const *p = write_paths; p != NULL && *p != NULL && err == 0; p++) {
    struct stat st;
    if (stat(*p, &st) != 0 || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) continue;
    if (strncmp(*p, "/dev/", 5) == 0) continue;
    if (n == SB_MAX_WRITE) {
      err = E2BIG;
      break;
    }
    int fd = (int)syscall(SYS_open_tree, AT_FDCWD, *p, SB_OPEN_TREE_CLONE | O_CLOEXEC | SB_AT_RECURSIVE);
    if (fd < 0) {
      err = errno;
      break;
    }
    fds[n] = fd;
    where[n++] = *p;
  }
  /* 2. Everything read-only (the copies are not in the tree yet). */
  if (err == 0 && set_read_only(1) != 0) {
    err = errno;
    step = "read-only mounts (mount_setattr)";
  }
  /* 3. The copies over their paths: writes and metadata changes there work. */
  int attached = 0;
  for (int i = 0; i < n; i++) {
    if (err == 0 && syscall(SYS_move_mount, fds[i], "", AT_FDCWD, where[i], SB_MOVE_MOUNT_F_EMPTY_PATH) != 0) {
      err = errno;
      step = "read-only mounts (move_mount)";
      attached = 1;
    }
    close(fds[i]);
  }
  if (err == 0) return 0;
  /* The worker must keep its scratch directory: undo, and say so (seccomp
   * then refuses metadata changes everywhere). */
  if (attached) set_read_only(0);
  sb_note(note, note_len, "%s: %s; ", step, err);
  errno = err;
  return -1;
}
