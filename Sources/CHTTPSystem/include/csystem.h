// Thin shims over system calls that the Glibc and Darwin modules do not export, or export
// differently: epoll (Linux only), the wake-up channel of an event loop (an eventfd on Linux, a
// pipe elsewhere), accept and socket with non-blocking, close-on-exec descriptors, sends that never
// raise SIGPIPE. Used by LiveListHTTP only. Everything outside `#ifdef __linux__` compiles on
// Darwin as well (with a portable fallback where Linux has a better call).
#ifndef CSYSTEM_H
#define CSYSTEM_H

// Only fixed-width types appear here, so that this module's view of the C library never
// conflicts with the Glibc or Darwin module's (the implementation includes the system headers).
#include <stdint.h>
#include <stddef.h>

#ifdef __linux__
static const uint32_t CS_EPOLLIN = 0x001;
static const uint32_t CS_EPOLLOUT = 0x004;
static const uint32_t CS_EPOLLERR = 0x008;
static const uint32_t CS_EPOLLHUP = 0x010;
static const uint32_t CS_EPOLLRDHUP = 0x2000;
static const uint32_t CS_EPOLLEXCLUSIVE = 1u << 28;
static const int CS_EPOLL_CTL_ADD = 1;
static const int CS_EPOLL_CTL_DEL = 2;
static const int CS_EPOLL_CTL_MOD = 3;

/// Creates an epoll instance (close-on-exec). Returns -1 and sets errno on failure.
int cs_epoll_create(void);
/// Adds (op 1), modifies (op 3) or deletes (op 2) `fd` with the given event mask and user data.
int cs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Allocates room for `count` epoll events (free with cs_epoll_events_free).
void *cs_epoll_events_alloc(int count);
void cs_epoll_events_free(void *events);
/// Waits for events; returns their number, 0 on timeout, -1 with errno (EINTR is common).
int cs_epoll_wait(int epfd, void *events, int count, int timeout_ms);
/// The user data and the event mask of event `index` (the struct is packed on x86_64).
uint64_t cs_epoll_event_data(const void *events, int index);
uint32_t cs_epoll_event_flags(const void *events, int index);

/// POLLRDHUP (peer shut down its writing side), which only Linux's poll has.
static const int16_t CS_POLLRDHUP = 0x2000;
#else
/// No POLLRDHUP here: the poll backend learns of a peer's end by peeking (see PollPoller).
static const int16_t CS_POLLRDHUP = 0;
#endif

/// Opens the channel that wakes an event loop from other threads: `fds[0]` is read (and polled),
/// `fds[1]` is written. One non-blocking eventfd (both the same) on Linux, a non-blocking pipe
/// elsewhere; close-on-exec either way. Returns 0, or -1 with errno.
int cs_wake_open(int32_t fds[2]);
/// Writes one wake-up (a full channel already holds one, which is enough).
int cs_wake_signal(int fd);
/// Reads every pending wake-up.
void cs_wake_drain(int fd);
/// Closes the channel's descriptors (once when they are the same).
void cs_wake_close(int read_fd, int write_fd);

/// accept with a non-blocking, close-on-exec result (accept4 on Linux; accept and fcntl, plus
/// SO_NOSIGPIPE where it exists, elsewhere). Fills `address` (up to `length` bytes).
int cs_accept(int fd, void *address, uint32_t *length);
/// A non-blocking, close-on-exec TCP socket of `family` (AF_INET or AF_INET6); -1 with errno.
int cs_socket_stream(int family);
/// One sendmsg of `count` buffers (`struct iovec`) that never raises SIGPIPE.
long cs_sendv(int fd, const void *iov, int count);
/// send that never raises SIGPIPE.
long cs_send(int fd, const void *bytes, size_t length);
/// Sets TCP_NODELAY.
int cs_set_nodelay(int fd);
/// Sets SO_REUSEADDR.
int cs_set_reuseaddr(int fd);
/// The soft RLIMIT_NOFILE, or -1 when unlimited or unknown.
int64_t cs_file_limit(void);
/// Ignores SIGPIPE process-wide.
void cs_ignore_sigpipe(void);
/// Creates a detached thread running `body(context)`; returns 0 on success.
int cs_thread_start(void *(*body)(void *), void *context);
/// Installs a handler for `signo` that writes to a shared blocking channel, whose reading end it
/// returns (an eventfd on Linux, a pipe elsewhere).
int cs_signal_watch(int signo);
/// Blocks until one of the watched signals arrives.
void cs_signal_wait(int fd);
/// A per-thread pointer (the event loop running on this thread, if any).
void cs_set_thread_context(void *context);
void *cs_thread_context(void);

#endif
