/* Confinement of the worker: capabilities, Landlock and the seccomp filter
 * (libtvmffi_sandbox.so; tvmffi_sandbox.c has the entry points). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sb_internal.h"

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

int sb_landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : (int)v;
#else
  return 0;
#endif
}

int sb_drop_capabilities(void) {
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

unsigned sb_apply_landlock(int abi, const char *const *read_paths,
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
    sb_note(note, note_len, "%s: %s; ", "landlock_create_ruleset", errno);
    return 0;
  }
  uint64_t file_read = LL_FS_READ_FILE;
  uint64_t dir_read = LL_FS_READ_FILE | LL_FS_READ_DIR;
  uint64_t file_write = LL_FS_READ_FILE | LL_FS_WRITE_FILE | (fs & (LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
  /* Writable directories: everything but execute and device nodes. */
  uint64_t dir_write = fs & ~(LL_FS_EXECUTE | LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
  for (const char *const *p = read_paths; p != NULL && *p != NULL; p++) {
    if (add_path_rule(ruleset, *p, dir_read, file_read) != 0)
      sb_note(note, note_len, "landlock rule %s: %s; ", *p, errno);
  }
  for (const char *const *p = write_paths; p != NULL && *p != NULL; p++) {
    if (add_path_rule(ruleset, *p, dir_write, file_write) != 0)
      sb_note(note, note_len, "landlock rule %s: %s; ", *p, errno);
  }
  long r = syscall(SYS_landlock_restrict_self, ruleset, 0);
  int err = errno;
  close(ruleset);
  if (r != 0) {
    sb_note(note, note_len, "%s: %s; ", "landlock_restrict_self", err);
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

/* if (nr == n && !(arg0 == AF_UNIX && (arg1 & SOCK_TYPE_MASK) is stream or
 * seqpacket)) return EPERM; then reload nr. A datagram pair could send
 * (sendmsg's msg_name) to any pathname datagram socket the user may write,
 * /dev/log among them; a connected stream or seqpacket socket sends only to
 * its peer (named destinations fail: EISCONN, or are ignored). */
static void deny_unless_unix_stream(struct bpf_prog_buf *b, long nr) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 8));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(0)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 4));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(1)));
  emit(b, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 2, 0));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  load_nr(b);
}

/* if (nr == n && arg[i] != 0 (a pointer: either half)) return EPERM; then reload nr. */
static void deny_unless_null(struct bpf_prog_buf *b, long nr, int i) {
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 5));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_LO(i)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SB_ARG_HI(i)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SB_DENY));
  load_nr(b);
}

/* System calls numbered after the headers this may be built with (the
 * generic table, shared by x86-64, aarch64 and riscv64 since 424). */
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif
#ifndef SYS_removexattrat
#define SYS_removexattrat 466
#endif
#ifndef SYS_file_setattr
#define SYS_file_setattr 469
#endif
#ifndef FS_IOC_FSSETXATTR
#define FS_IOC_FSSETXATTR _IOW('X', 32, struct fsxattr)
#endif

/* Changes of a file's metadata (mode, owner, times, extended attributes,
 * inode flags). Landlock has no right for them, and a descriptor or a path
 * does not say where its file lies: without read-only mounts they are
 * refused everywhere. */
static void deny_metadata_changes(struct bpf_prog_buf *b) {
  static const long nrs[] = {
#ifdef SYS_chmod
      SYS_chmod,
#endif
#ifdef SYS_chown
      SYS_chown,
#endif
#ifdef SYS_lchown
      SYS_lchown,
#endif
#ifdef SYS_utime
      SYS_utime,
#endif
#ifdef SYS_utimes
      SYS_utimes,
#endif
#ifdef SYS_futimesat
      SYS_futimesat,
#endif
      SYS_fchmod,       SYS_fchmodat,      SYS_fchmodat2,    SYS_fchown,    SYS_fchownat,
      SYS_utimensat,    SYS_setxattr,      SYS_lsetxattr,    SYS_fsetxattr, SYS_setxattrat,
      SYS_removexattr,  SYS_lremovexattr,  SYS_fremovexattr, SYS_removexattrat,
      SYS_file_setattr,
  };
  for (size_t i = 0; i < sizeof nrs / sizeof nrs[0]; i++) deny_nr(b, nrs[i]);
  deny_arg_eq(b, SYS_ioctl, 1, (uint32_t)FS_IOC_SETFLAGS, SB_DENY);
  deny_arg_eq(b, SYS_ioctl, 1, (uint32_t)FS_IOC32_SETFLAGS, SB_DENY);
  deny_arg_eq(b, SYS_ioctl, 1, (uint32_t)FS_IOC_FSSETXATTR, SB_DENY);
}

int sb_apply_seccomp(int in_pidns, int scoped, int deny_metadata, char *note, size_t note_len) {
#ifndef SB_AUDIT_ARCH
  sb_note(note, note_len, "%s: %s; ", "seccomp (unsupported architecture)", ENOSYS);
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
  /* The network: no sockets but a stream (or seqpacket) socketpair of
   * AF_UNIX; no named destination (sendto's address; sendmsg and sendmmsg
   * carry theirs, and SCM_RIGHTS descriptors, in memory the filter cannot
   * read, so they are refused whole: tvmffi's own channel is pipes). */
  deny_nr(&b, SYS_socket);
  deny_nr(&b, SYS_connect);
  deny_nr(&b, SYS_bind);
  deny_unless_unix_stream(&b, SYS_socketpair);
  deny_unless_null(&b, SYS_sendto, 4);
  deny_nr(&b, SYS_sendmsg);
  deny_nr(&b, SYS_sendmmsg);
  /* System V IPC and POSIX message queues name objects shared with every
   * process of the IPC namespace (a queue id is a small number). */
  static const long ipc[] = {SYS_msgget,  SYS_msgsnd, SYS_msgrcv,     SYS_msgctl,   SYS_semget,
                             SYS_semop,   SYS_semctl, SYS_semtimedop, SYS_shmget,   SYS_shmat,
                             SYS_shmctl,  SYS_mq_open, SYS_mq_unlink, SYS_mq_timedsend,
                             SYS_mq_timedreceive, SYS_mq_notify, SYS_mq_getsetattr};
  for (size_t i = 0; i < sizeof ipc / sizeof ipc[0]; i++) deny_nr(&b, ipc[i]);
  /* Watching files tvmffi or the user create (inotify needs only read
   * access to the directory, which Landlock does not check). */
  deny_nr(&b, SYS_inotify_add_watch);
  deny_nr(&b, SYS_fanotify_init);
  deny_nr(&b, SYS_fanotify_mark);
  /* A child subreaper would take the zygote's probe children from the
   * init (their end records with them); a process that is not dumpable
   * hides its descriptors and memory from the supervisor's memory watch. */
  deny_arg_eq(&b, SYS_prctl, 0, PR_SET_CHILD_SUBREAPER, SB_DENY);
  deny_arg_eq(&b, SYS_prctl, 0, PR_SET_DUMPABLE, SB_DENY);
  if (deny_metadata) deny_metadata_changes(&b);
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
    sb_note(note, note_len, "%s: %s; ", "seccomp (filter too long)", E2BIG);
    return -1;
  }
  struct sock_fprog prog = {(unsigned short)b.n, b.ins};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    sb_note(note, note_len, "%s: %s; ", "seccomp", errno);
    return -1;
  }
  return 0;
#endif
}

