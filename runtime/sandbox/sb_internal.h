/* What the files of libtvmffi_sandbox.so share (not installed, not an API). */
#ifndef TVMFFI_SANDBOX_INTERNAL_H_
#define TVMFFI_SANDBOX_INTERNAL_H_
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What was applied (bits of *applied). Mirrored in tvmffi_cli/sandbox/kernel.py. */
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
/* A mount namespace of the worker's own; with a PID namespace, a fresh /proc. */
#define TVMFFI_SB_MOUNTNS (1u << 12)
/* Every mount read-only but the write paths (confine; needs MOUNTNS). */
#define TVMFFI_SB_READONLY (1u << 13)
/* The scratch directory is a tmpfs of the scratch bound (needs MOUNTNS). */
#define TVMFFI_SB_SCRATCH_TMPFS (1u << 14)
/* Memory: the worker's tree is in a cgroup v2 tvmffi made (memory.max, pids.max). */
#define TVMFFI_SB_CGROUP (1u << 15)
/* Memory: the supervisor sums the tree's resident memory and kills past the limit. */
#define TVMFFI_SB_MEMWATCH (1u << 16)

void sb_note(char *note, size_t len, const char *fmt, const char *what, int err);
void sb_write_all(int fd, const void *buf, size_t n);

/* sb_mounts.c */
/* In a process that just entered a new mount namespace: propagation
 * private, then (in_pidns) a fresh /proc. 0 or -1 (errno set, *what names
 * the step). */
int sb_private_mounts(int in_pidns, const char **what);
/* A tmpfs of `size` bytes (mode 0700, nosuid, nodev) over `dir`. */
int sb_mount_scratch(const char *dir, unsigned long long size);
/* Make every mount read-only but `write_paths` (cloned before, attached
 * after): metadata writes outside them fail with EROFS. */
int sb_read_only_but(const char *const *write_paths, char *note, size_t note_len);

/* sb_watch.c */
/* Resident memory (KiB) the tree under `root` (root included) holds: anon
 * and shmem of every process (proportional when `precise`), plus memfds and
 * other tmpfs files held by a descriptor, each file counted once. */
long long sb_tree_memory_kb(pid_t root, int precise);

/* sb_confine.c */
unsigned sb_apply_landlock(int abi, const char *const *read_paths, const char *const *write_paths,
                           char *note, size_t note_len);
/* deny_metadata: refuse chmod/chown/utime/xattr changes everywhere (no
 * read-only mounts to confine them to the write paths). */
int sb_apply_seccomp(int in_pidns, int scoped, int deny_metadata, char *note, size_t note_len);
int sb_drop_capabilities(void);
int sb_landlock_abi(void);

/* The children of every thread of `pid` (/proc/<pid>/task/<tid>/children),
 * appended to out[*n] up to cap; -1 when the kernel lacks the file. */
int sb_children(pid_t pid, pid_t *out, int *n, int cap);

#endif
