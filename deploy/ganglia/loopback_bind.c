/* LD_PRELOAD shim: turn bind() to the wildcard address into bind() to loopback.
 *
 * Why: gmetad (3.7) has no option for the address its xml/interactive ports listen on and binds 0.0.0.0; hcep's
 * rule is that nothing listens beyond 127.0.0.1.  Built by deploy/ganglia/start.sh into the runtime dir. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static bind_fn real_bind;
    if (!real_bind)
        real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, addr, sizeof sin);
        if (sin.sin_addr.s_addr == htonl(INADDR_ANY)) {
            sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&sin, sizeof sin);
        }
    } else if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, addr, sizeof sin6);
        if (IN6_IS_ADDR_UNSPECIFIED(&sin6.sin6_addr)) {
            sin6.sin6_addr = in6addr_loopback;
            return real_bind(fd, (const struct sockaddr *)&sin6, sizeof sin6);
        }
    }
    return real_bind(fd, addr, len);
}
