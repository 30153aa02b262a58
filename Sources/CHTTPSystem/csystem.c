#ifdef __linux__
#define _GNU_SOURCE
#endif
#include "csystem.h"
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MSG_NOSIGNAL
#define CS_SEND_FLAGS MSG_NOSIGNAL
#else
// Darwin: no MSG_NOSIGNAL; accepted sockets get SO_NOSIGPIPE instead (and SIGPIPE is ignored).
#define CS_SEND_FLAGS 0
#endif

#ifdef __linux__
int cs_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

void *cs_epoll_events_alloc(int count) { return calloc((size_t)count, sizeof(struct epoll_event)); }
void cs_epoll_events_free(void *events) { free(events); }

int cs_epoll_wait(int epfd, void *events, int count, int timeout_ms) {
    return epoll_wait(epfd, (struct epoll_event *)events, count, timeout_ms);
}

uint64_t cs_epoll_event_data(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].data.u64;
}

uint32_t cs_epoll_event_flags(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].events;
}
#endif

/// Makes `fd` non-blocking and close-on-exec; 0, or -1 with errno.
static int cs_set_nonblocking_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) { return -1; }
    int fdflags = fcntl(fd, F_GETFD);
    if (fdflags < 0 || fcntl(fd, F_SETFD, fdflags | FD_CLOEXEC) < 0) { return -1; }
    return 0;
}

int cs_wake_open(int32_t fds[2]) {
#ifdef __linux__
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) { return -1; }
    fds[0] = fd;
    fds[1] = fd;
    return 0;
#else
    int pair[2];
    if (pipe(pair) != 0) { return -1; }
    if (cs_set_nonblocking_cloexec(pair[0]) != 0 || cs_set_nonblocking_cloexec(pair[1]) != 0) {
        int saved = errno;
        close(pair[0]);
        close(pair[1]);
        errno = saved;
        return -1;
    }
    fds[0] = pair[0];
    fds[1] = pair[1];
    return 0;
#endif
}

int cs_wake_signal(int fd) {
#ifdef __linux__
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof(one));
#else
    uint8_t one = 1;
    return (int)write(fd, &one, sizeof(one));
#endif
}

void cs_wake_drain(int fd) {
    uint64_t value[8];
    while (read(fd, value, sizeof(value)) > 0) {}
}

void cs_wake_close(int read_fd, int write_fd) {
    close(read_fd);
    if (write_fd != read_fd) { close(write_fd); }
}

int cs_accept(int fd, void *address, uint32_t *length) {
#ifdef __linux__
    return accept4(fd, (struct sockaddr *)address, (socklen_t *)length, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
    socklen_t size = length ? (socklen_t)*length : 0;
    int accepted = accept(fd, (struct sockaddr *)address, length ? &size : NULL);
    if (accepted < 0) { return -1; }
    if (length) { *length = (uint32_t)size; }
    if (cs_set_nonblocking_cloexec(accepted) != 0) {
        int saved = errno;
        close(accepted);
        errno = saved;
        return -1;
    }
#ifdef SO_NOSIGPIPE
    int one = 1;
    setsockopt(accepted, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one));
#endif
    return accepted;
#endif
}

int cs_socket_stream(int family) {
#ifdef __linux__
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) { return -1; }
    if (cs_set_nonblocking_cloexec(fd) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
#endif
}

long cs_sendv(int fd, const void *iov, int count) {
    struct msghdr message;
    memset(&message, 0, sizeof(message));
    message.msg_iov = (struct iovec *)iov;
    message.msg_iovlen = count;
    return sendmsg(fd, &message, CS_SEND_FLAGS);
}

long cs_send(int fd, const void *bytes, size_t length) { return send(fd, bytes, length, CS_SEND_FLAGS); }

int cs_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int cs_set_reuseaddr(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
}

int64_t cs_file_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) { return -1; }
    return limit.rlim_cur > (rlim_t)INT64_MAX ? INT64_MAX : (int64_t)limit.rlim_cur;
}

void cs_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

int cs_thread_start(void *(*body)(void *), void *context) {
    pthread_t handle;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    int result = pthread_create(&handle, &attributes, body, context);
    pthread_attr_destroy(&attributes);
    return result;
}

// The reading and the writing end of the signal channel (the same eventfd on Linux).
static int signal_read_fd = -1;
static int signal_write_fd = -1;

static void on_watched_signal(int signo) {
    (void)signo;
    int saved = errno;
#ifdef __linux__
    uint64_t one = 1;
#else
    uint8_t one = 1;
#endif
    if (write(signal_write_fd, &one, sizeof(one)) < 0) {}
    errno = saved;
}

int cs_signal_watch(int signo) {
    if (signal_read_fd < 0) {
#ifdef __linux__
        signal_read_fd = eventfd(0, EFD_CLOEXEC);
        signal_write_fd = signal_read_fd;
#else
        int pair[2];
        if (pipe(pair) == 0) {
            fcntl(pair[0], F_SETFD, FD_CLOEXEC);
            fcntl(pair[1], F_SETFD, FD_CLOEXEC);
            // A full pipe must never block the handler: the writing end is non-blocking.
            fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK);
            signal_read_fd = pair[0];
            signal_write_fd = pair[1];
        }
#endif
    }
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_watched_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(signo, &action, NULL);
    return signal_read_fd;
}

void cs_signal_wait(int fd) {
    uint64_t value;
    while (read(fd, &value, sizeof(value)) < 0 && errno == EINTR) {}
}

static __thread void *thread_context = NULL;

void cs_set_thread_context(void *context) { thread_context = context; }

void *cs_thread_context(void) { return thread_context; }
